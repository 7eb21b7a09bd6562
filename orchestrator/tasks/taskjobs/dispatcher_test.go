package taskjobs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
)

// offline builds a Dispatcher whose Redis is unreachable (nothing listens
// on port 1), for what needs no Redis or must see it down.
func offline(t *testing.T, mod ...func(*taskjobs.Config)) (*taskjobs.Dispatcher, error) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	l, err := tasks.New(rdb, tasks.Config{})
	require.NoError(t, err)
	rt, err := asynqrt.New(asynqrt.Config{ConnOpt: asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, Redis: rdb,
		Logger: discard(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	cfg := taskjobs.Config{Ledger: l, Runtime: rt, Logger: discard()}
	for _, m := range mod {
		m(&cfg)
	}
	return taskjobs.New(cfg)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := offline(t, func(c *taskjobs.Config) { c.Ledger = nil })
	require.ErrorContains(t, err, "Ledger is required")
	_, err = offline(t, func(c *taskjobs.Config) { c.Runtime = nil })
	require.ErrorContains(t, err, "Runtime is required")
	_, err = offline(t, func(c *taskjobs.Config) { c.Queue = "vm" })
	require.ErrorContains(t, err, `queue "vm" is not served by the runtime`)
	_, err = offline(t, func(c *taskjobs.Config) { c.ReplayQueue = "dead" })
	require.ErrorContains(t, err, `queue "dead" is not served by the runtime`)
	reg := prometheus.NewRegistry()
	_, err = offline(t, func(c *taskjobs.Config) { c.Registerer = reg })
	require.NoError(t, err)
	_, err = offline(t, func(c *taskjobs.Config) { c.Registerer = reg })
	require.ErrorContains(t, err, "register metrics", "one Dispatcher per registry")
}

// With Redis down AfterFail says so (unavailable); the ledger's transition
// stands and the safety-net jobs take over.
func TestAfterFailWithRedisDown(t *testing.T) {
	t.Parallel()
	d, err := offline(t)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	task := contracts.Task{QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", Attempts: 1, MaxAttempts: 3, UpdatedAt: t0}
	for _, res := range []tasks.FailResult{{Task: task, Retry: true}, {Task: task, DLQ: true}} {
		fu, err := d.AfterFail(ctx, res)
		requireCode(t, err, contracts.CodeUnavailable)
		require.False(t, fu.Requeued || fu.DLQ)
	}
}

func TestTaskIDs(t *testing.T) {
	t.Parallel()
	claimed := t0.Add(time.Minute)
	task := contracts.Task{QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", Attempts: 2, UpdatedAt: t0, ClaimedAt: &claimed}
	require.Equal(t, "requeue:6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10:2:"+ms(t0), taskjobs.RequeueTaskID(task))
	require.Equal(t, "dlq:6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10:"+ms(claimed), taskjobs.DeadLetterTaskID(task))
	amended := task
	amended.UpdatedAt = t0.Add(time.Hour)
	amended.ErrorMessage = "checked by hand"
	require.Equal(t, taskjobs.DeadLetterTaskID(task), taskjobs.DeadLetterTaskID(amended), "stable while a dead letter")
	task.ClaimedAt = nil
	require.Equal(t, "dlq:6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10:0", taskjobs.DeadLetterTaskID(task))
}

func ms(t time.Time) string { b, _ := json.Marshal(t.UnixMilli()); return string(b) }

// The ledger gauges are read at scrape and match Stats.
func TestLedgerMetricsMatchStats(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	done := b.create(t, 3, contracts.PriorityHigh)
	retry := b.create(t, 3, contracts.PriorityHigh)
	dead := b.create(t, 1, contracts.PriorityHigh)
	b.create(t, 3, contracts.PriorityHigh) // stays PROCESSING
	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 4})
	require.NoError(t, err)
	require.Len(t, claimed, 4)
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: done.QueueID, ExperityActions: json.RawMessage(`[]`)})
	require.NoError(t, err)
	for _, id := range []string{retry.QueueID, dead.QueueID} {
		_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "x"})
		require.NoError(t, err)
	}
	b.create(t, 3, contracts.PriorityNormal)
	b.create(t, 3, contracts.PriorityNormal)
	b.create(t, 3, contracts.PriorityLow)
	b.create(t, 3, contracts.PriorityHigh)

	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(`
# HELP flowgate_tasks Tasks in the ledger by status (dead letters are ERROR).
# TYPE flowgate_tasks gauge
flowgate_tasks{status="DONE"} 1
flowgate_tasks{status="ERROR"} 2
flowgate_tasks{status="PENDING"} 4
flowgate_tasks{status="PROCESSING"} 1
# HELP flowgate_tasks_pending PENDING tasks by priority.
# TYPE flowgate_tasks_pending gauge
flowgate_tasks_pending{priority="HIGH"} 1
flowgate_tasks_pending{priority="LOW"} 1
flowgate_tasks_pending{priority="NORMAL"} 2
# HELP flowgate_tasks_dlq_size Dead letters: ERROR tasks with parsed_payload.dlq, awaiting manual review.
# TYPE flowgate_tasks_dlq_size gauge
flowgate_tasks_dlq_size 1
# HELP flowgate_tasks_retry_waiting ERROR tasks awaiting their requeue.
# TYPE flowgate_tasks_retry_waiting gauge
flowgate_tasks_retry_waiting 1
`), "flowgate_tasks", "flowgate_tasks_pending", "flowgate_tasks_dlq_size", "flowgate_tasks_retry_waiting"))

	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	for _, s := range contracts.AllStatuses() {
		require.Equal(t, float64(st.ByStatus[s]), metric(t, b.reg, "flowgate_tasks", "status", string(s)), s)
	}
	for _, p := range contracts.AllPriorities() {
		require.Equal(t, float64(st.PendingByPriority[p]), metric(t, b.reg, "flowgate_tasks_pending", "priority", string(p)), p)
	}
	require.Equal(t, float64(st.DLQ), metric(t, b.reg, "flowgate_tasks_dlq_size"))

	// The task left PROCESSING has been silent since its claim.
	b.clock.Advance(90 * time.Second)
	silent := metric(t, b.reg, "flowgate_tasks_processing_silent_seconds")
	require.GreaterOrEqual(t, silent, 90.0)
	require.LessOrEqual(t, silent, b.clock.Now().Sub(t0).Seconds())

	// Counters exist at zero before anything happened.
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(`
# HELP flowgate_tasks_replayed_total Dead letters replayed to PENDING, by path: api, asynq (run from Asynqmon).
# TYPE flowgate_tasks_replayed_total counter
flowgate_tasks_replayed_total{via="api"} 0
flowgate_tasks_replayed_total{via="asynq"} 0
`), "flowgate_tasks_replayed_total"))
}

// A scrape while Redis is down leaves the ledger gauges out instead of
// failing the whole scrape.
func TestLedgerMetricsWithRedisDown(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	_, err := offline(t, func(c *taskjobs.Config) { c.Registerer = reg })
	require.NoError(t, err)
	n, err := testutil.GatherAndCount(reg, "flowgate_tasks", "flowgate_tasks_dlq_size")
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = testutil.GatherAndCount(reg, "flowgate_tasks_promoted_total")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
