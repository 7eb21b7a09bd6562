package test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp/holdshttptest"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/loadgen"
	"github.com/flowgate/flowgate/test/redistest"
)

// holdsServer serves the web hold endpoints and /healthz from one Fiber app
// built as the sidecar builds it (web.New: request ids, access log at warn
// level so no line per request, the error envelope), on rdb, with the
// in-memory catalogue. It returns the listen address and the engine.
func holdsServer(t *testing.T, rdb redis.UniversalClient, cat *holdshttptest.Catalog, cfg holds.Config) (string, *holds.Engine) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Logger = logger
	eng, err := holds.New(rdb, cfg)
	require.NoError(t, err)
	app, err := web.New(web.Options{Logger: logger})
	require.NoError(t, err)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	h, err := holdshttp.New(holdshttp.Config{Engine: eng, Catalog: cat, Logger: logger})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return ln.Addr().String(), eng
}

const loadType = "load-type"

// Hold create + release over HTTP at 64 connections, against GET /healthz
// on the same server in the same run. Every request is checked (201 with a
// holdId, then 200 {"released":true}). Reproduce:
// go test -run TestLoadHolds -v ./test/  (FLOWGATE_LOAD_N to scale).
func TestLoadHolds(t *testing.T) {
	n := loadSize()
	specs := map[string]int{}
	for i := range 20 {
		specs["spec-"+strconv.Itoa(i)] = i % 3
	}
	cat := holdshttptest.New(holdshttptest.Type{ID: loadType, Specialists: specs,
		Open: func(start time.Time) bool { return start.Second() == 0 }})
	rdb := redistest.New(t).Client
	addr, eng := holdsServer(t, rdb, cat, holds.Config{KeyPrefix: fmt.Sprintf("load%d:", time.Now().UnixNano())})
	// The same server with Config.PlainRedis (one round trip per script),
	// in the same run: what the auto-pipelined scripts are worth.
	plainAddr, plainEng := holdsServer(t, rdb, cat, holds.Config{KeyPrefix: fmt.Sprintf("loadplain%d:", time.Now().UnixNano()), PlainRedis: true})
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i], _ = json.Marshal(map[string]string{"appointmentTypeId": loadType, "clientId": "c" + strconv.Itoa(i),
			"slotStartDate": holds.FormatStart(base.Add(time.Duration(i) * time.Minute))})
	}

	health := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(_ int, req *fasthttp.Request) { req.SetRequestURI("http://" + addr + "/healthz") },
		Check: status(200)})
	create, release := holdCycle(addr, bodies)
	plainCreate, plainRelease := holdCycle(plainAddr, bodies)
	rawSet := rawSets(t, rdb, n)
	pairs := float64(n) / (create.Elapsed + release.Elapsed).Seconds()
	plainPairs := float64(n) / (plainCreate.Elapsed + plainRelease.Elapsed).Seconds()
	t.Logf("baseline GET /healthz, 64 conns: %s", health)
	t.Logf("POST /v1/holds, 64 conns:        %s", create)
	t.Logf("DELETE /v1/holds/{id}, 64 conns: %s", release)
	t.Logf("PlainRedis: POST %.0f/s, DELETE %.0f/s", plainCreate.PerSecond(), plainRelease.PerSecond())
	t.Logf("raw Redis SET, 64 goroutines:    %.0f/s", rawSet)
	t.Logf("hold create+release: %.0f requests/s (%.0f create+release pairs/s) = %.2f × the /healthz baseline, %.2f × raw SETs, %.2f × PlainRedis (%.0f requests/s)",
		2*pairs, pairs, 2*pairs/health.PerSecond(), 2*pairs/rawSet, pairs/plainPairs, 2*plainPairs)
	for _, r := range []loadgen.Result{health, create, release, plainCreate, plainRelease} {
		if r.Failures > 0 {
			t.Fatalf("%d failures: %v", r.Failures, r.FirstError)
		}
	}
	for _, e := range []*holds.Engine{eng, plainEng} {
		active, err := e.Active(t.Context(), loadType)
		require.NoError(t, err)
		require.Empty(t, active, "every hold released")
	}
}

// holdCycle creates a hold per body over HTTP at 64 connections, then
// releases them all; every answer is checked (201 with a holdId, then 200
// {"released":true}).
func holdCycle(addr string, bodies [][]byte) (create, release loadgen.Result) {
	n := len(bodies)
	ids := make([]string, n)
	create = loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(i int, req *fasthttp.Request) {
			req.SetRequestURI("http://" + addr + "/v1/holds")
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.SetBody(bodies[i])
		},
		Check: func(i int, resp *fasthttp.Response) error {
			var h holdshttp.HoldResponse
			if resp.StatusCode() != 201 || json.Unmarshal(resp.Body(), &h) != nil || h.HoldID == "" {
				return fmt.Errorf("create %d: %d %s", i, resp.StatusCode(), resp.Body())
			}
			ids[i] = h.HoldID
			return nil
		}})
	release = loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(i int, req *fasthttp.Request) {
			req.SetRequestURI("http://" + addr + "/v1/holds/" + ids[i] + "?clientId=c" + strconv.Itoa(i))
			req.Header.SetMethod("DELETE")
		},
		Check: func(i int, resp *fasthttp.Response) error {
			if resp.StatusCode() != 200 || string(resp.Body()) != `{"released":true}` {
				return fmt.Errorf("release %d: %d %s", i, resp.StatusCode(), resp.Body())
			}
			return nil
		}})
	return create, release
}

// rawSets is the rate of n plain SETs from 64 goroutines on rdb: how fast
// Redis itself answers one round trip at that moment.
func rawSets(t *testing.T, rdb redis.UniversalClient, n int) float64 {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := rdb.Set(t.Context(), "rawset:"+strconv.FormatInt(i, 10), "x", time.Minute).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// Hold create + release through the binary as deployed: the
// schedule-file catalogue (shardLoadSchedule: 48 specialists working every
// day), so each create checks its slot against the specialist's openings
// and the booked appointments before the engine claims it; against GET
// /healthz of the same process in the same run. TestLoadHolds measures the
// engine and HTTP layer behind an in-memory catalogue; this one what a
// deployment serves. Reports requests/s and flowgate's CPU per request
// (/proc). FLOWGATE_HOLDS_PPROF=<file> writes a CPU profile of the create
// phase. Reproduce: go test -run TestLoadHoldsBinary -v ./test/
// (FLOWGATE_LOAD_N to scale).
func TestLoadHoldsBinary(t *testing.T) {
	n := loadSize()
	db := redistest.New(t)
	env := withSecrets(map[string]string{"REDIS_URL": db.URL(), "LOG_LEVEL": "warn",
		"HOLDS_SCHEDULE_FILE": shardLoadSchedule(t), "HOLDS_MAX_PER_CLIENT": "1000"})
	prof := os.Getenv("FLOWGATE_HOLDS_PPROF")
	if prof != "" {
		env["PPROF_ADDR"] = freeAddr(t)
	}
	p := startFlowgate(t, env)
	addr := newSignedClient(p).addr
	bodies := shardLoadHolds(n, time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2))
	health := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(_ int, req *fasthttp.Request) { req.SetRequestURI("http://" + addr + "/healthz") },
		Check: status(200)})
	cpu0 := procCPU(p.PID())
	wait := profileCPU(t, env["PPROF_ADDR"], prof, time.Duration(max(2, n/5000))*time.Second)
	create, release := holdCycle(addr, bodies)
	wait()
	cpu := float64(procCPU(p.PID())-cpu0) / 100 // seconds
	for _, r := range []loadgen.Result{health, create, release} {
		if r.Failures > 0 {
			t.Fatalf("%d failures: %v", r.Failures, r.FirstError)
		}
	}
	elapsed := (create.Elapsed + release.Elapsed).Seconds()
	t.Logf("baseline GET /healthz, 64 conns: %s", health)
	t.Logf("POST /v1/holds, 64 conns:        %s", create)
	t.Logf("DELETE /v1/holds/{id}, 64 conns: %s", release)
	t.Logf("hold create+release through the binary: %.0f requests/s = %.2f × /healthz; flowgate CPU %.0f µs per request",
		float64(2*n)/elapsed, float64(2*n)/elapsed/health.PerSecond(), 1e6*cpu/float64(2*n))
}
