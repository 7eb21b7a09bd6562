package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// `go run ./sidecar` without REDIS_URL runs on miniredis (gopher-lua, its
// own cjson): the whole ledger must work there too.
func TestLifecycleOnMiniredis(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := setupOn(t, rdb, func(c *tasks.Config) { c.MaxRecoveries = 2 })
	mode, err := b.l.LoadScripts(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "eval", mode.Mode, "miniredis has no FUNCTION: the scripts run as EVALSHA")
	require.Equal(t, "FUNCTION LOAD refused: ERR unknown command `function`", mode.Reason,
		"the reason is logged at start: without the 40 KB library Redis echoes back")

	res, err := b.l.CreateBatch(b.ctx, []contracts.CreateTaskRequest{
		{EncounterID: "enc-1", Payload: json.RawMessage(`{"p":[]}`)},
		{EncounterID: "enc-2", Priority: contracts.PriorityHigh},
		{EncounterID: "enc-1"},
		{EncounterID: "enc-3", Priority: contracts.PriorityLow, MaxAttempts: 1},
	})
	require.NoError(t, err)
	require.True(t, res[2].Duplicate)
	done, high, low := res[0].Task, res[1].Task, res[3].Task

	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{high.QueueID, done.QueueID}, []string{claimed[0].QueueID, claimed[1].QueueID})
	_, err = b.l.Heartbeat(b.ctx, done.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
	require.NoError(t, err)
	_, err = b.l.Heartbeat(b.ctx, done.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-2"})
	requireConflict(t, err, done.QueueID, contracts.StatusProcessing)

	actions := json.RawMessage(`{"codes":["99213"],"empty":[],"msg":"a \"quoted\" / <tag> é"}`)
	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: done.QueueID, ExperityActions: actions})
	require.NoError(t, err)
	require.JSONEq(t, `{"experityActions":`+string(actions)+`}`, string(ack.Task.ParsedPayload))
	ack, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: done.QueueID, ExperityActions: actions})
	require.NoError(t, err)
	require.True(t, ack.Duplicate)

	fail, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: high.QueueID, ErrorMessage: `bad "thing" \ happened`})
	require.NoError(t, err)
	require.True(t, fail.Retry)
	out, err := b.l.Requeue(b.ctx, high.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, out.Task.Status)

	// The heartbeat monitor, then the VT sweep (after a heartbeat, which
	// extends the visibility timeout).
	require.Equal(t, high.QueueID, b.claimOne(t, "vm-1").QueueID)
	rec, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{high.QueueID}, rec.Recovered)
	require.Equal(t, high.QueueID, b.claimOne(t, "vm-1").QueueID)
	b.clock.Advance(5 * time.Minute)
	_, err = b.l.Heartbeat(b.ctx, high.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
	require.NoError(t, err)
	rec, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(6*time.Minute), 10*time.Minute, "")
	require.NoError(t, err)
	require.Empty(t, rec.Recovered, "claimed 11 min ago, but its heartbeat 6 min ago")
	rec, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(5*time.Minute), 10*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{high.QueueID}, rec.DeadLettered, "second recovery, MaxRecoveries 2")
	got := b.get(t, high.QueueID)
	require.True(t, got.InDLQ())
	require.Equal(t, 1, got.Attempts, "its one FAIL")
	require.Equal(t, 2, got.Recoveries)
	require.Equal(t, contracts.DLQRecoveriesErrorMessage, got.ErrorMessage)
	require.Equal(t, `bad "thing" \ happened`, got.History[2].Reason)

	replayed, err := b.l.Replay(b.ctx, high.QueueID, contracts.RequeueRequest{Priority: contracts.PriorityNormal})
	require.NoError(t, err)
	require.Equal(t, 0, replayed.Attempts)
	require.Equal(t, 0, replayed.Recoveries)

	prom, err := b.l.PromoteOverdue(b.ctx, b.clock.Now(), 10*time.Minute)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{low.QueueID, high.QueueID}, prom.Promoted, "SLA goes by created_at")
	require.Equal(t, low.QueueID, b.claimOne(t, "vm-1").QueueID)
	fail, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: low.QueueID})
	require.NoError(t, err)
	require.True(t, fail.DLQ)

	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[contracts.Status]int{"PENDING": 1, "PROCESSING": 0, "DONE": 1, "ERROR": 1}, st.ByStatus)
	require.Equal(t, map[contracts.Priority]int{"HIGH": 1, "NORMAL": 0, "LOW": 0}, st.PendingByPriority)
	require.Equal(t, 1, st.DLQ)
	require.Equal(t, 3, st.Total)
	page, err := b.l.List(b.ctx, contracts.ListQuery{Limit: 2, History: true})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 2)
	require.NotEmpty(t, page.NextCursor)
	require.NotEmpty(t, page.Tasks[0].History)

	// Retention, with the backfill of DONE tasks the done index lacks.
	require.NoError(t, b.l.ForgetDoneIndex(b.ctx))
	purged, err := b.l.PurgeDone(b.ctx, b.clock.Advance(8*24*time.Hour), 7*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{done.QueueID}, purged.Purged)
	_, err = b.l.Get(b.ctx, done.QueueID)
	requireCode(t, err, contracts.CodeNotFound)
}
