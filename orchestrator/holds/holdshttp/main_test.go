package holdshttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/sidecar/web"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

const (
	typeA = "type-a"
	specX = "spec-x"
	specY = "spec-y"
	specZ = "spec-z"
)

var (
	t0    = time.Date(2025, 3, 15, 8, 55, 0, 0, time.UTC)
	slot9 = time.Date(2025, 3, 15, 9, 0, 0, 0, time.UTC)
)

// fakeCatalog is an in-memory availability catalogue faithful to the
// contract: one type of 30-minute slots from 09:00 to 17:00 UTC with three
// specialists (x and y priority 1, z priority 0), booked slots not free,
// *contracts.Error answers (not_found, invalid with the field).
type fakeCatalog struct {
	mu     sync.Mutex
	appts  map[string]holdshttp.Appointment
	fail   error // RecordBooking fails with it when set
	prio   map[string]int
	cooldn int
}

func newFakeCatalog() *fakeCatalog {
	return &fakeCatalog{appts: map[string]holdshttp.Appointment{}, prio: map[string]int{specX: 1, specY: 1, specZ: 0}}
}

func (f *fakeCatalog) AppointmentType(_ context.Context, id string) (holdshttp.AppointmentType, error) {
	if id != typeA {
		e := contracts.Errorf(contracts.CodeNotFound, "no appointment type %q", id)
		return holdshttp.AppointmentType{}, e
	}
	return holdshttp.AppointmentType{ID: typeA, CooldownMinutes: f.cooldn, SpecialistIDs: []string{specX, specY, specZ}}, nil
}

func (f *fakeCatalog) Candidates(ctx context.Context, atid string, start time.Time, spec string) (time.Time, []holds.Candidate, error) {
	if _, err := f.AppointmentType(ctx, atid); err != nil {
		return time.Time{}, nil, err
	}
	if _, known := f.prio[spec]; spec != "" && !known {
		return time.Time{}, nil, contracts.Errorf(contracts.CodeNotFound, "no specialist %q", spec)
	}
	if start.Minute()%30 != 0 || start.Second() != 0 || start.Hour() < 9 || start.Hour() >= 17 {
		e := contracts.Errorf(contracts.CodeInvalid, "slotStartDate is not a slot start")
		e.Details = map[string]any{"field": "slotStartDate"}
		return time.Time{}, nil, e
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []holds.Candidate
	for _, id := range []string{specX, specY, specZ} {
		if spec != "" && id != spec {
			continue
		}
		booked := false
		for _, a := range f.appts {
			booked = booked || (a.SpecialistID == id && a.SlotStartDate.Equal(start))
		}
		if !booked {
			out = append(out, holds.Candidate{SpecialistID: id, Priority: f.prio[id]})
		}
	}
	return start.Add(30 * time.Minute), out, nil
}

func (f *fakeCatalog) RecordBooking(_ context.Context, a holdshttp.Appointment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.appts[a.AppointmentID] = a
	return nil
}

func (f *fakeCatalog) CancelBooking(_ context.Context, id string) (holdshttp.Appointment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.appts[id]
	if !ok {
		return holdshttp.Appointment{}, contracts.Errorf(contracts.CodeNotFound, "no appointment %q", id)
	}
	delete(f.appts, id)
	return a, nil
}

var prefixSeq atomic.Int64

type bundle struct {
	ctx   context.Context
	app   *fiber.App
	eng   *holds.Engine
	cat   *fakeCatalog
	rdb   redis.UniversalClient
	clock *clocktest.Clock
	p     string
}

func setup(t *testing.T, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	return setupOn(t, redistest.New(t).Client, mod...)
}

func setupOn(t *testing.T, rdb redis.UniversalClient, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), rdb: rdb, clock: clocktest.New(t0), cat: newFakeCatalog(),
		p: fmt.Sprintf("h%d-%d:", prefixSeq.Add(1), time.Now().UnixNano())}
	logger := slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))
	holdSeq := atomic.Int64{}
	cfg := holds.Config{Prefix: b.p, Now: b.clock.Now, Logger: logger,
		NewID: func() string { return fmt.Sprintf("hold-%d", holdSeq.Add(1)) }}
	for _, m := range mod {
		m(&cfg)
	}
	eng, err := holds.New(rdb, cfg)
	require.NoError(t, err)
	b.eng = eng
	app, err := web.New(web.Options{Logger: logger})
	require.NoError(t, err)
	seq := atomic.Int64{}
	h, err := holdshttp.New(holdshttp.Config{Engine: eng, Catalog: b.cat, Now: b.clock.Now, Logger: logger, RequestTimeout: 20 * time.Second,
		NewID: func() string { return fmt.Sprintf("appt-%d", seq.Add(1)) }})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	b.app = app
	return b
}

type reply struct {
	Status int
	Header map[string]string
	Body   []byte
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), string(r.Body))
}

// errBody is the error envelope's inner object.
func (r reply) errBody(t *testing.T) contracts.ErrorBody {
	t.Helper()
	var e contracts.ErrorResponse
	r.decode(t, &e)
	return e.Error
}

func (b *bundle) do(t *testing.T, method, path string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.app.Test(req, 10000)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{Status: resp.StatusCode, Header: map[string]string{"Retry-After": resp.Header.Get("Retry-After")}, Body: raw}
}

func holdBody(client, spec string, start time.Time) map[string]string {
	m := map[string]string{"appointmentTypeId": typeA, "clientId": client, "slotStartDate": holds.FormatStart(start)}
	if spec != "" {
		m["specialistId"] = spec
	}
	return m
}

func (b *bundle) hold(t *testing.T, client, spec string, start time.Time) holdshttp.HoldResponse {
	t.Helper()
	r := b.do(t, "POST", "/v1/holds", holdBody(client, spec, start))
	require.Equal(t, 201, r.Status, string(r.Body))
	var h holdshttp.HoldResponse
	r.decode(t, &h)
	return h
}

// snapshot dumps every key of the bundle, to prove a refusal changed nothing.
func (b *bundle) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	keys, err := b.rdb.Keys(b.ctx, b.p+"*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		if d, err := b.rdb.Dump(b.ctx, k).Result(); err == nil {
			out[k] = d
		}
	}
	return out
}

// deadClient is a client for a port nobody listens on: Redis is down.
func deadClient(t testing.TB) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
