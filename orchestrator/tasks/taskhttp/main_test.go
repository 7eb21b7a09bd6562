package taskhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskhttp"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskhttp/taskhttptest"
	"github.com/flowgate/flowgate/test/redistest"
)

// fasthttp starts one process-wide goroutine that keeps the Date header
// fresh the first time a Fiber app serves a request (it never stops), and
// each server's worker-pool cleaner sleeps up to 10 s before it sees the
// server stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// replayer records replays and does them on the ledger, standing in for
// the Asynq dispatcher.
type replayer struct {
	l     *tasks.Ledger
	mu    sync.Mutex
	calls []string
}

func (r *replayer) Replay(ctx context.Context, id string, req contracts.RequeueRequest) (contracts.Task, error) {
	r.mu.Lock()
	r.calls = append(r.calls, id)
	r.mu.Unlock()
	return r.l.Replay(ctx, id, req)
}

func (r *replayer) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type bundle struct {
	ctx    context.Context
	srv    *taskhttptest.Server
	ledger *tasks.Ledger
	replay *replayer
	logs   *syncBuffer
	rdb    *redis.Client
}

// setup serves the queue API behind the HMAC verifier on a private Redis
// database; mod may change the taskhttp config before New.
func setup(t *testing.T, mod ...func(*taskhttp.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	ledger, err := tasks.New(db.Client, tasks.Config{Prefix: "test", ClaimPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	logs := &syncBuffer{}
	srv := taskhttptest.New(t, db.Client, taskhttptest.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	rp := &replayer{l: ledger}
	cfg := taskhttp.Config{Replayer: rp, Auth: srv.Auth, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		DisconnectCheck: 20 * time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := taskhttp.New(ledger, cfg)
	require.NoError(t, err)
	taskhttp.Register(srv.App, h)
	srv.Start()
	return &bundle{ctx: context.Background(), srv: srv, ledger: ledger, replay: rp, logs: logs, rdb: db.Client}
}

// create makes a task over HTTP and returns it.
func (b *bundle) create(t *testing.T, enc string, prio contracts.Priority) contracts.Task {
	t.Helper()
	r := b.srv.Do("POST", "/queue", taskhttptest.JSON(t, contracts.CreateTaskRequest{EncounterID: enc, Priority: prio,
		Payload: json.RawMessage(`{"patient":"` + enc + `"}`)}))
	require.Equal(t, 201, r.Status, string(r.Body))
	var resp contracts.CreateResponse
	r.Decode(t, &resp)
	return resp.Task
}

// claim claims one task for worker over HTTP (200 expected).
func (b *bundle) claim(t *testing.T, worker string) contracts.Task {
	t.Helper()
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"`+worker+`"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.ClaimResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Tasks, 1)
	return resp.Tasks[0]
}

// snapshot is everything the ledger shows: stats and every task with its
// history, to prove a refused request changed nothing.
func (b *bundle) snapshot(t *testing.T) string {
	t.Helper()
	st, err := b.ledger.Stats(b.ctx)
	require.NoError(t, err)
	page, err := b.ledger.List(b.ctx, contracts.ListQuery{Limit: contracts.MaxListLimit, History: true})
	require.NoError(t, err)
	raw, err := json.Marshal(struct {
		Stats contracts.StatsResponse
		Tasks []contracts.Task
	}{st, page.Tasks})
	require.NoError(t, err)
	return string(raw)
}
