package taskhttp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/logtest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
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

type bundle struct {
	ctx    context.Context
	srv    *taskhttptest.Server
	ledger *tasks.Ledger
	replay *taskhttptest.Replayer
	logs   *logtest.Buffer
	rdb    *redis.Client
}

// setup serves the queue API behind the HMAC verifier on a private Redis
// database; mod may change the taskhttp config before New.
func setup(t *testing.T, mod ...func(*taskhttp.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	ledger, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test", ClaimPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	srv := taskhttptest.New(t, db.Client, taskhttptest.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	rp := &taskhttptest.Replayer{Ledger: ledger}
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
