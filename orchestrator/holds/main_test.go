package holds_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
)

var prefixSeq atomic.Int64

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	typeA = "550e8400-e29b-41d4-a716-446655440000"
	specX = "770a1200-0000-4000-8000-000000000001"
	specY = "770a1200-0000-4000-8000-000000000002"
)

var (
	t0    = time.Date(2025, 3, 15, 8, 55, 0, 0, time.UTC)
	slot9 = time.Date(2025, 3, 15, 9, 0, 0, 0, time.UTC)
)

type bundle struct {
	ctx   context.Context
	eng   *holds.Engine
	rdb   redis.UniversalClient
	clock *clocktest.Clock
	logs  *logtest.Buffer
	p     string // the key prefix: unique, because channels are not per DB
}

func setup(t *testing.T, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	return setupOn(t, redistest.New(t).Client, mod...)
}

func setupOn(t *testing.T, rdb redis.UniversalClient, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), rdb: rdb, clock: clocktest.New(t0), logs: &logtest.Buffer{},
		p: "t" + strconv.FormatInt(prefixSeq.Add(1), 10) + "-" + strconv.Itoa(os.Getpid()) + ":"}
	cfg := holds.Config{KeyPrefix: b.p, Now: b.clock.Now, Logger: slog.New(slog.NewTextHandler(b.logs, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	eng, err := holds.New(rdb, cfg)
	require.NoError(t, err)
	b.eng = eng
	return b
}

// realClock makes the engine's clock the wall clock (for tests that wait
// for Redis TTLs to run out).
func realClock(c *holds.Config) { c.Now = time.Now }

func claimReq(client, spec string, start time.Time) holds.ClaimRequest {
	return holds.ClaimRequest{AppointmentTypeID: typeA, ClientID: client, SlotStart: start,
		SlotEnd: start.Add(30 * time.Minute), SpecialistID: spec}
}

// subscribe returns a channel of the events published on typeA.
func (b *bundle) subscribe(t *testing.T) <-chan holds.Event {
	t.Helper()
	sub := b.rdb.Subscribe(b.ctx, b.eng.EventChannel(typeA))
	_, err := sub.Receive(b.ctx)
	require.NoError(t, err)
	out := make(chan holds.Event, 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			var ev holds.Event
			if json.Unmarshal([]byte(m.Payload), &ev) == nil {
				out <- ev
			}
		}
	}()
	t.Cleanup(func() { _ = sub.Close(); <-done })
	return out
}

func next(t *testing.T, ch <-chan holds.Event) holds.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
		return holds.Event{}
	}
}

// snapshot is every key of the bundle (its value dumped), to prove a
// refusal changed nothing.
func (b *bundle) snapshot(t *testing.T) map[string]string {
	t.Helper()
	ctx, rdb := b.ctx, b.rdb
	out := map[string]string{}
	keys, err := rdb.Keys(ctx, b.p+"*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err == nil {
			out[k] = d
		}
	}
	return out
}
