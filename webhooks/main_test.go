package webhooks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/logtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks"
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

// follower stands in for the Asynq dispatcher: it records each FAIL and
// schedules a requeue that Due runs (the delayed Asynq task), or fails
// when err is set.
type follower struct {
	ledger *tasks.Ledger

	mu      sync.Mutex
	calls   []tasks.FailResult
	pending []string
	err     error
}

func (f *follower) AfterFail(_ context.Context, res tasks.FailResult) (webhooks.FollowUp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, res)
	if f.err != nil {
		return webhooks.FollowUp{}, f.err
	}
	if res.DLQ {
		return webhooks.FollowUp{DLQ: true}, nil
	}
	f.pending = append(f.pending, res.Task.QueueID)
	return webhooks.FollowUp{Requeued: true, RetryAt: time.Now().Add(10 * time.Second)}, nil
}

// Due runs the scheduled requeues, as Asynq would once their delay passed.
func (f *follower) Due(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	ids := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, id := range ids {
		_, err := f.ledger.Requeue(context.Background(), id, contracts.RequeueRequest{Priority: contracts.PriorityHigh})
		require.NoError(t, err)
	}
}

func (f *follower) Calls() []tasks.FailResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tasks.FailResult(nil), f.calls...)
}

func (f *follower) FailWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

type bundle struct {
	ctx      context.Context
	srv      *taskhttptest.Server
	ledger   *tasks.Ledger
	follower *follower
	replayer *taskhttptest.Replayer
	logs     *logtest.Buffer
	rdb      *redis.Client
}

// setup serves the queue API and the webhooks the way the sidecar does:
// one app shell, the HMAC verifier on every route, a private Redis
// database. mod may change the webhooks config.
func setup(t *testing.T, mod ...func(*webhooks.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	ledger, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test", ClaimPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	srv := taskhttptest.New(t, db.Client, taskhttptest.Options{Logger: log})

	rp := &taskhttptest.Replayer{Ledger: ledger}
	api, err := taskhttp.New(ledger, taskhttp.Config{Replayer: rp, Auth: srv.Auth, Logger: log})
	require.NoError(t, err)
	taskhttp.Register(srv.App, api)

	f := &follower{ledger: ledger}
	cfg := webhooks.Config{Auth: srv.HookAuth, Registerer: srv.Registry, Logger: log}
	for _, m := range mod {
		m(&cfg)
	}
	hooks, err := webhooks.New(ledger, f, cfg)
	require.NoError(t, err)
	webhooks.Register(srv.App, hooks)
	srv.Start()
	return &bundle{ctx: context.Background(), srv: srv, ledger: ledger, follower: f, replayer: rp, logs: logs, rdb: db.Client}
}

// create makes a task over HTTP.
func (b *bundle) create(t *testing.T, enc string) contracts.Task {
	t.Helper()
	r := b.srv.Do("POST", "/queue", []byte(`{"encounter_id":"`+enc+`","payload":{"encounter":"`+enc+`"}}`))
	require.Equal(t, 201, r.Status, string(r.Body))
	var resp contracts.CreateResponse
	r.Decode(t, &resp)
	return resp.Task
}

// claim claims the next task for worker over HTTP and checks it is want.
func (b *bundle) claim(t *testing.T, worker, want string) contracts.Task {
	t.Helper()
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"`+worker+`"}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.ClaimResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Tasks, 1)
	require.Equal(t, want, resp.Tasks[0].QueueID)
	require.Equal(t, contracts.StatusProcessing, resp.Tasks[0].Status)
	return resp.Tasks[0]
}

// get reads a task over HTTP.
func (b *bundle) get(t *testing.T, id string) contracts.Task {
	t.Helper()
	r := b.srv.Do("GET", "/queue/"+id, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	return resp.Task
}

// hook posts a webhook body and decodes a 200 answer.
func (b *bundle) hook(t *testing.T, path, body string) (contracts.WebhookResponse, taskhttptest.Reply) {
	t.Helper()
	r := b.srv.Do("POST", path, []byte(body))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.WebhookResponse
	r.Decode(t, &resp)
	require.True(t, resp.Success)
	return resp, r
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

// outcomes reads flowgate_webhook_requests_total for hook, by outcome,
// leaving out zeros.
func outcomes(t *testing.T, reg *prometheus.Registry, hook string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, o := range []string{"done", "duplicate", "requeued", "dlq", "conflict", "invalid", "unauthorized", "not_found", "error"} {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != "flowgate_webhook_requests_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				got := map[string]string{}
				for _, lp := range m.GetLabel() {
					got[lp.GetName()] = lp.GetValue()
				}
				if got["hook"] == hook && got["outcome"] == o && m.GetCounter().GetValue() > 0 {
					out[o] = int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}
