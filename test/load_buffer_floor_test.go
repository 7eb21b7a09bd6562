package test

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/autopipe"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/redistest"
)

// bareEnqueueEnv makes the test binary the bare HTTP enqueue server (the
// helper process of bareEnqueue) instead of running tests.
const bareEnqueueEnv = "FLOWGATE_BARE_ENQUEUE_HELPER"

// bareQueue is the queue the bare server enqueues into (nothing serves it).
const bareQueue = "bare"

// The rungs of the HTTP ladder (TestLoadBufferHTTPLadder), each the one
// before plus one layer flowgate has; bareFloor is the floor itself.
const (
	bareFloor    = "bare"     // fiber.New(), no options, no middleware
	bareTimeouts = "timeouts" // + flowgate's ReadTimeout / WriteTimeout (30 s)
	bareShell    = "shell"    // web.New: + request id, access log (warn), metrics, recover
	bareDeadline = "deadline" // + web.Deadline(2 s) before the route, as /api/buffer has
)

// TestBareEnqueueHelper is not a test: run by bareEnqueue as a separate
// process, it is the least an HTTP server on flowgate's stack can do to
// put a message into Asynq — the floor of any Fiber + Asynq implementation
// of POST /api/buffer/enqueue. A bare Fiber app (no middleware, no request
// deadline, no access log, no metrics) checks the bearer token, decodes
// {"type","payload"}, and calls asynq.Client.EnqueueContext on the same
// AutoPipeliner flowgate uses (package autopipe), into bareQueue, with no
// validation, idempotency, depth admission or envelope; it answers 202
// with the task's id. FLOWGATE_BARE_VARIANT adds flowgate's HTTP layers
// one by one (the bare* rungs). It prints its address and ends when stdin
// closes.
func TestBareEnqueueHelper(t *testing.T) {
	if os.Getenv(bareEnqueueEnv) != "1" {
		t.Skip("helper process of TestLoadBufferThroughput")
	}
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ap, err := autopipe.New(rdb)
	require.NoError(t, err)
	client := asynq.NewClientFromRedisClient(ap)
	token := []byte(os.Getenv("BUFFER_API_TOKEN"))

	shell := func() *fiber.App {
		app, err := web.New(web.Options{Registerer: prometheus.NewRegistry(),
			Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		require.NoError(t, err)
		return app
	}
	var app *fiber.App
	var r fiber.Router
	switch v := os.Getenv("FLOWGATE_BARE_VARIANT"); v {
	case bareFloor, "":
		app = fiber.New(fiber.Config{DisableStartupMessage: true})
		r = app
	case bareTimeouts:
		app = fiber.New(fiber.Config{DisableStartupMessage: true, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		r = app
	case bareShell:
		app = shell()
		r = app
	case bareDeadline:
		app = shell()
		r = app.Group("/", web.Deadline(2*time.Second))
	default:
		t.Fatalf("unknown FLOWGATE_BARE_VARIANT %q", v)
	}
	r.Post("/api/buffer/enqueue", func(c *fiber.Ctx) error {
		got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
			return c.SendStatus(fiber.StatusUnauthorized)
		}
		var req struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(c.Body(), &req); err != nil || req.Type == "" {
			return c.SendStatus(fiber.StatusBadRequest)
		}
		info, err := client.EnqueueContext(c.UserContext(), asynq.NewTask(req.Type, req.Payload), asynq.Queue(bareQueue), asynq.Retention(24*time.Hour))
		if err != nil {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		c.Status(fiber.StatusAccepted)
		c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
		c.Response().AppendBodyString(`{"success":true,"messageId":"` + info.ID + `","state":"pending","priority":2,"queue":"` + bareQueue + `"}`)
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fmt.Println(ln.Addr().String())
	go func() { _ = app.Listener(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = app.ShutdownWithTimeout(time.Second)
}

// bareServer is a running TestBareEnqueueHelper.
type bareServer struct {
	addr string
	pid  int
}

// bareEnqueue starts the bare HTTP enqueue server (one of the bare* rungs)
// on the Redis at redisURL, stopped at the test's end.
func bareEnqueue(t *testing.T, redisURL, token, variant string) bareServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBareEnqueueHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), bareEnqueueEnv+"=1", "REDIS_URL="+redisURL, "BUFFER_API_TOKEN="+token, "FLOWGATE_BARE_VARIANT="+variant)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	out := bufio.NewScanner(stdout)
	require.True(t, out.Scan(), "helper address")
	addr := strings.TrimSpace(out.Text())
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return bareServer{addr: addr, pid: cmd.Process.Pid}
}

// TestLoadBufferHTTPLadder: where the HTTP enqueue's cost goes, rung by
// rung, on one Redis and one load generator: the bare floor, then each of
// flowgate's HTTP layers added (timeouts, the app shell, the request
// deadline), then flowgate itself (the bearer group, the seed's
// validation, the depth admission, the envelope, events, and the rest of
// its process). bufferRounds rounds of n single enqueues per rung,
// alternated; it logs each rung's median rate and median server CPU per
// request, and what each layer adds.
func TestLoadBufferHTTPLadder(t *testing.T) {
	n := 10000
	if raceEnabled {
		n = 500
	}
	db := redistest.New(t)
	tok := testSecrets["BUFFER_API_TOKEN"]
	type rung struct {
		name, addr string
		pid        int
		rates, cpu []float64
	}
	var rungs []*rung
	for _, v := range []string{bareFloor, bareTimeouts, bareShell, bareDeadline} {
		b := bareEnqueue(t, db.URL(), tok, v)
		rungs = append(rungs, &rung{name: v, addr: b.addr, pid: b.pid})
	}
	p := startFlowgate(t, bufferEnv(db, nil))
	rungs = append(rungs, &rung{name: "flowgate", addr: p.Addr(), pid: p.PID()})
	require.NoError(t, asynq.NewInspectorFromRedisClient(db.Client).PauseQueue("buffer.default"))

	sent, bare := 0, 0
	for round := -1; round < bufferRounds; round++ { // round -1 warms every rung up
		k := n
		if round < 0 {
			k = 1000
		}
		for _, r := range rungs {
			off := sent
			sent += k
			if r.name != "flowgate" {
				bare += k
			}
			c0 := procCPU(r.pid)
			res := noopSingles(t, r.addr, tok, 64, off, k)
			if round >= 0 {
				r.rates = append(r.rates, res.PerSecond())
				r.cpu = append(r.cpu, 1e6*float64(procCPU(r.pid)-c0)/100/float64(k))
			}
		}
	}
	require.EqualValues(t, bare, bufferPending(t, db.Client, bareQueue), "every bare 202 is a task in Redis")
	require.EqualValues(t, sent-bare, bufferPending(t, db.Client, "buffer.default"), "every flowgate 202 is a task in Redis")

	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	prev := 0.0
	for i, r := range rungs {
		step := ""
		if i > 0 {
			step = fmt.Sprintf(", %+.1f µs over %s", med(r.cpu)-prev, rungs[i-1].name)
		}
		t.Logf("%-8s %6.0f req/s (%.0f%% of bare), server CPU %.1f µs per request%s", r.name, med(r.rates),
			100*med(r.rates)/med(rungs[0].rates), med(r.cpu), step)
		prev = med(r.cpu)
	}
}

// bufferPending is the length of queue q's pending list.
func bufferPending(t *testing.T, rdb redis.UniversalClient, q string) int64 {
	n, err := rdb.LLen(context.Background(), "asynq:{"+q+"}:pending").Result()
	require.NoError(t, err)
	return n
}
