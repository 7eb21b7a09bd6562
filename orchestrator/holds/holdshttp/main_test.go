package holdshttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
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
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp/holdshttptest"
	"github.com/flowgate/flowgate/orchestrator/web"
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

var prefixSeq atomic.Int64

type bundle struct {
	ctx   context.Context
	app   *fiber.App
	eng   *holds.Engine
	cat   *holdshttptest.Catalog
	rdb   redis.UniversalClient
	clock *clocktest.Clock
	logs  *logtest.Buffer
	p     string
}

func setup(t *testing.T, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	return setupOn(t, redistest.New(t).Client, mod...)
}

func setupOn(t *testing.T, rdb redis.UniversalClient, mod ...func(*holds.Config)) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), rdb: rdb, clock: clocktest.New(t0), cat: holdshttptest.New(holdshttptest.Type{ID: typeA, Specialists: map[string]int{specX: 1, specY: 1, specZ: 0}}),
		p: fmt.Sprintf("h%d-%d:", prefixSeq.Add(1), time.Now().UnixNano())}
	b.logs = &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(b.logs, nil))
	holdSeq := atomic.Int64{}
	cfg := holds.Config{KeyPrefix: b.p, Now: b.clock.Now, Logger: logger,
		NewID: func() string { return fmt.Sprintf("hold-%d", holdSeq.Add(1)) }}
	for _, m := range mod {
		m(&cfg)
	}
	eng, err := holds.New(rdb, cfg)
	require.NoError(t, err)
	b.eng = eng
	app, err := web.New(web.Options{Logger: logger})
	require.NoError(t, err)
	h, err := holdshttp.New(holdshttp.Config{Engine: eng, Catalog: b.cat, Now: b.clock.Now, Logger: logger, RequestTimeout: 20 * time.Second,
		AppointmentID: func(h string) string { return "appt-" + strings.TrimPrefix(h, "hold-") }})
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
