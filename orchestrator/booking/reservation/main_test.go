package reservation_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/logtest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

const (
	loc    = "1fef9297-7c8b-426b-b0d1-f2275136e48b"
	view   = "4c9e9333-4951-4eb0-8d97-e1ad83ef422d"
	chair8 = "07687884-7e37-49aa-8028-d43b751c9034"
	sessA  = "3f4359de-eb9e-413e-a4e1-cefdbda373bd"
	sessB  = "1e80226c-0000-4000-8000-000000000000"
)

// t0 is the seed's reservedAt example.
var t0 = time.Date(2026, 1, 22, 6, 37, 49, 0, time.UTC)

func slot(start string) slots.Slot {
	return slots.Slot{StartTime: start, ScheduleViewGUID: view, ScheduleColumnGUID: chair8, LocationGUID: loc, Minutes: 45}
}

// the seed's slot.
var s910 = slot("3/11/2026 9:10:00 AM")

const key910 = "test:SlotReservation:1fef9297-7c8b-426b-b0d1-f2275136e48b:20260311:0910:07687884-7e37-49aa-8028-d43b751c9034"

type bundle struct {
	ctx   context.Context
	st    *reservation.Store
	rdb   redis.UniversalClient
	clock *clocktest.Clock
	logs  *logtest.Buffer
}

func setup(t *testing.T, mod ...func(*reservation.Config)) *bundle {
	t.Helper()
	return setupOn(t, redistest.New(t).Client, mod...)
}

func setupOn(t *testing.T, rdb redis.UniversalClient, mod ...func(*reservation.Config)) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), rdb: rdb, clock: clocktest.New(t0), logs: &logtest.Buffer{}}
	cfg := reservation.Config{KeyPrefix: "test", Now: b.clock.Now, Logger: slog.New(slog.NewTextHandler(b.logs, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	st, err := reservation.New(rdb, cfg)
	require.NoError(t, err)
	b.st = st
	return b
}

// requireHeld asserts err is ErrReservedByOther carrying a *HeldError.
func requireHeld(t testing.TB, err error) {
	t.Helper()
	require.ErrorIs(t, err, reservation.ErrReservedByOther)
	var he *reservation.HeldError
	require.ErrorAs(t, err, &he)
}

// heldError is requireHeld returning the *HeldError, for tests that check
// its fields.
func heldError(t testing.TB, err error) *reservation.HeldError {
	t.Helper()
	requireHeld(t, err)
	var he *reservation.HeldError
	require.ErrorAs(t, err, &he)
	return he
}
