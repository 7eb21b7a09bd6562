package taskhttp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

func TestLongPollReturnsTaskCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := make(chan contracts.Task, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // under test: the task is created while the poll waits
		res, err := b.ledger.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "late"})
		if err != nil {
			t.Error(err)
		}
		created <- res.Task
	}()
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":2000}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.ClaimResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Tasks, 1)
	require.Equal(t, (<-created).QueueID, resp.Tasks[0].QueueID)
	require.GreaterOrEqual(t, r.Elapsed, 300*time.Millisecond)
	require.Less(t, r.Elapsed, 1500*time.Millisecond, "answered as soon as the task appeared")
}

func TestLongPollTimesOutWith204(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":600}`))
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Empty(t, r.Body)
	require.GreaterOrEqual(t, r.Elapsed, 600*time.Millisecond)
	require.Less(t, r.Elapsed, 1500*time.Millisecond)
}

// A client that hangs up ends its poll: a task created afterwards stays
// PENDING instead of going to a claim nobody will receive.
func TestLongPollStopsWhenClientHangsUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-gone","wait_ms":5000}`), taskhttptest.Context(ctx))
	require.Zero(t, r.Status, "the client gave up")

	require.Eventually(t, func() bool { return claimLogged(b.logs.String()) }, 3*time.Second, 20*time.Millisecond,
		"the claim handler returned long before wait_ms")
	line := claimLogLine(t, b.logs.String())
	require.Less(t, line.LatencyMS, 1500.0, "poll ended %.0f ms after it began", line.LatencyMS)

	task := b.create(t, "after-hangup", "")
	require.Never(t, func() bool { // an abandoned poll would claim it by now
		got, err := b.ledger.Get(b.ctx, task.QueueID)
		return err != nil || got.Status != contracts.StatusPending
	}, 200*time.Millisecond, 10*time.Millisecond, "the abandoned poll claimed the task")
	got, err := b.ledger.Get(b.ctx, task.QueueID)
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, got.Status)
}

func TestLongPollStopsAtShutdown(t *testing.T) {
	t.Parallel()
	shutdown, begin := context.WithCancel(context.Background())
	defer begin()
	b := setup(t, func(c *taskhttp.Config) { c.Shutdown = shutdown })
	time.AfterFunc(200*time.Millisecond, begin)
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":5000}`))
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Less(t, r.Elapsed, 1500*time.Millisecond)
}

func TestLongPollStopsWhenServerShutsDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	time.AfterFunc(200*time.Millisecond, func() { _ = b.srv.App.ShutdownWithTimeout(5 * time.Second) })
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":5000}`))
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Less(t, r.Elapsed, 1500*time.Millisecond)
}

type accessLine struct {
	Msg       string  `json:"msg"`
	Route     string  `json:"route"`
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
}

func claimLogged(logs string) bool {
	for _, l := range strings.Split(logs, "\n") {
		var a accessLine
		if json.Unmarshal([]byte(l), &a) == nil && a.Msg == "http request" && a.Route == "/queue/claim" {
			return true
		}
	}
	return false
}

func claimLogLine(t *testing.T, logs string) accessLine {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		var a accessLine
		if json.Unmarshal([]byte(l), &a) == nil && a.Msg == "http request" && a.Route == "/queue/claim" {
			return a
		}
	}
	t.Fatal("no access log line for /queue/claim")
	return accessLine{}
}

// Tasks claimed for a client that has already hung up are put back: here
// the watcher is too slow to end the poll, so the claim succeeds and the
// check before answering catches the departed client.
func TestClaimForGoneClientIsPutBack(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *taskhttp.Config) { c.DisconnectCheck = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	time.AfterFunc(500*time.Millisecond, func() {
		if _, err := b.ledger.Create(context.Background(), contracts.CreateTaskRequest{EncounterID: "orphan"}); err != nil {
			t.Error(err)
		}
	})
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-gone","wait_ms":3000}`), taskhttptest.Context(ctx))
	require.Zero(t, r.Status)

	require.Eventually(t, func() bool { return strings.Contains(b.logs.String(), "claim not delivered") },
		3*time.Second, 20*time.Millisecond)
	page, err := b.ledger.List(b.ctx, contracts.ListQuery{EncounterID: "orphan", History: true})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1)
	task := page.Tasks[0]
	require.Equal(t, contracts.StatusPending, task.Status)
	require.Zero(t, task.Attempts, "putting back costs no attempt")
	require.Empty(t, task.WorkerID)
	require.Len(t, task.History, 3, "created, claimed, put back")
	require.Equal(t, "vm-gone", task.History[2].By)
	require.Contains(t, task.History[2].Reason, "never delivered")
	require.Contains(t, b.logs.String(), "task put back to PENDING")
}

// The release of an undelivered claim leaves alone a task that moved on
// between the claim and the release: here, right after the claim script
// returns, a sweep recovers the task and another worker claims it (a hook
// on the server's Redis client makes the interleaving exact). The new
// holder keeps it.
func TestReleaseLeavesATaskThatMovedOn(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	other, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test"}) // the rest of the world, unhooked
	require.NoError(t, err)
	opt, err := redis.ParseURL(db.URL())
	require.NoError(t, err)
	opt.MaxRetries = -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &afterClaim{then: func() {
		res, err := other.RecoverStale(context.Background(), time.Now().Add(3*time.Minute), 2*time.Minute, "")
		if err != nil || len(res.Recovered) != 1 {
			t.Errorf("recover: %v %v", res, err)
		}
		if got, err := other.Claim(context.Background(), contracts.ClaimRequest{WorkerID: "vm-next"}); err != nil || len(got) != 1 {
			t.Errorf("claim: %v %v", got, err)
		}
	}}
	rdb.AddHook(hook)
	ledger, err := tasks.New(rdb, tasks.Config{KeyPrefix: "test", ClaimPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	srv := taskhttptest.New(t, db.Client, taskhttptest.Options{})
	h, err := taskhttp.New(ledger, taskhttp.Config{Replayer: &taskhttptest.Replayer{Ledger: ledger}, Auth: srv.Auth,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), DisconnectCheck: time.Hour})
	require.NoError(t, err)
	taskhttp.Register(srv.App, h)
	srv.Start()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	created := make(chan string, 1)
	time.AfterFunc(500*time.Millisecond, func() {
		res, err := other.Create(context.Background(), contracts.CreateTaskRequest{EncounterID: "orphan"})
		if err != nil {
			t.Error(err)
		}
		created <- res.Task.QueueID
	})
	r := srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-gone","wait_ms":3000}`), taskhttptest.Context(ctx))
	require.Zero(t, r.Status)

	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "claim not delivered") },
		3*time.Second, 20*time.Millisecond)
	require.True(t, hook.fired.Load())
	require.Contains(t, logs.String(), "task has moved on meanwhile, left as it is")
	task, err := other.Get(context.Background(), <-created)
	require.NoError(t, err)
	require.Equal(t, contracts.StatusProcessing, task.Status)
	require.Equal(t, "vm-next", task.WorkerID, "the new holder keeps it")
	require.Zero(t, task.Attempts, "the sweep's recovery is not an attempt")
	require.Equal(t, 1, task.Recoveries, "the sweep's recovery")
}

// afterClaim runs then once, right after a claim script of its client
// returns a task.
type afterClaim struct {
	then  func()
	fired atomic.Bool
}

func (h *afterClaim) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterClaim) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c, ok := cmd.(*redis.Cmd); ok && err == nil && (cmd.Name() == "evalsha" || cmd.Name() == "eval" || cmd.Name() == "fcall") {
			if arr, ok := c.Val().([]any); ok && len(arr) == 2 && !h.fired.Load() {
				if _, ok := arr[1].([]any); ok { // {0, fields}: one task claimed
					h.fired.Store(true)
					h.then()
				}
			}
		}
		return err
	}
}

func (h *afterClaim) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A shutdown that lands while a claim's script call is under way ends the
// wait, not the call: the claim's outcome stays known and its task is
// answered (CI once saw 503 "task store unavailable" here, the call cut).
// A hook on the server's Redis client starts the shutdown before the script
// call and lets the watcher see it first.
func TestShutdownDoesNotCutAClaimUnderWay(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	other, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	opt, err := redis.ParseURL(db.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	shutdown, begin := context.WithCancel(context.Background())
	defer begin()
	var polls atomic.Int32
	rdb.AddHook(beforeScript{before: func() {
		if polls.Add(1) == 3 { // a later try of the wait: create a task, then shut down
			if _, err := other.Create(context.Background(), contracts.CreateTaskRequest{EncounterID: "last"}); err != nil {
				t.Error(err)
			}
			begin()
			time.Sleep(150 * time.Millisecond) // the watcher (20 ms) ends the poll's context
		}
	}})
	ledger, err := tasks.New(rdb, tasks.Config{KeyPrefix: "test", ClaimPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	srv := taskhttptest.New(t, db.Client, taskhttptest.Options{})
	h, err := taskhttp.New(ledger, taskhttp.Config{Replayer: &taskhttptest.Replayer{Ledger: ledger}, Auth: srv.Auth,
		Logger: slog.New(slog.NewJSONHandler(&logtest.Buffer{}, nil)), DisconnectCheck: 20 * time.Millisecond, Shutdown: shutdown})
	require.NoError(t, err)
	taskhttp.Register(srv.App, h)
	srv.Start()

	r := srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":5000}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var resp contracts.ClaimResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Tasks, 1)
	require.Equal(t, "last", resp.Tasks[0].EncounterID)
	require.Less(t, r.Elapsed, 1500*time.Millisecond)
}

// beforeScript runs before on every script call (the claim tries).
type beforeScript struct{ before func() }

func (h beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" || n == "fcall" {
			h.before()
		}
		return next(ctx, cmd)
	}
}

func (h beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
