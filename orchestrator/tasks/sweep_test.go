package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

func TestClaimOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	created := map[contracts.Priority][]string{}
	for i, p := range []contracts.Priority{"LOW", "NORMAL", "HIGH", "LOW", "NORMAL", "HIGH", "NORMAL", "LOW", "HIGH"} {
		created[p] = append(created[p], b.create(t, fmt.Sprintf("enc-%d", i), p).QueueID)
		b.clock.Advance(time.Millisecond)
	}
	for _, p := range contracts.AllPriorities() {
		want = append(want, created[p]...)
	}
	var got []string
	first, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 4}) // spans HIGH and NORMAL
	require.NoError(t, err)
	for _, task := range first {
		got = append(got, task.QueueID)
	}
	for len(got) < len(want) {
		got = append(got, b.claimOne(t, "vm-1").QueueID)
	}
	require.Equal(t, want, got, "HIGH before NORMAL before LOW, FIFO within each")
	none, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 50})
	require.NoError(t, err)
	require.NotNil(t, none)
	require.Empty(t, none)
}

// A requeued task goes last in its priority; a promoted one keeps its place
// in order of becoming pending.
func TestRequeueAndPromotionOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	oldNormal := b.create(t, "enc-old", contracts.PriorityNormal)
	b.clock.Advance(time.Millisecond)
	oldLow := b.create(t, "enc-old-low", contracts.PriorityLow)
	b.clock.Advance(20 * time.Minute)
	high1 := b.create(t, "enc-h1", contracts.PriorityHigh)
	failed := b.create(t, "enc-f", contracts.PriorityHigh)
	b.clock.Advance(11 * time.Minute)
	newLow := b.create(t, "enc-low", contracts.PriorityLow)

	// fail "failed" (claim order: high1 first, so claim two and fail the second)
	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{high1.QueueID, failed.QueueID}, []string{claimed[0].QueueID, claimed[1].QueueID})
	_, err = b.l.UpdateStatus(b.ctx, high1.QueueID, contracts.StatusUpdateRequest{Status: contracts.StatusPending})
	require.NoError(t, err)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: failed.QueueID})
	require.NoError(t, err)
	_, err = b.l.Requeue(b.ctx, failed.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)

	// SLA: pending for more than 30 min by created_at, NORMAL/LOW only.
	now := b.clock.Now()
	res, err := b.l.PromoteOverdue(b.ctx, now, 30*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{oldNormal.QueueID, oldLow.QueueID}, res.Promoted)
	require.Equal(t, contracts.PriorityHigh, b.get(t, oldNormal.QueueID).Priority)
	require.Equal(t, contracts.PriorityHigh, b.get(t, oldLow.QueueID).Priority)
	again, err := b.l.PromoteOverdue(b.ctx, now, 30*time.Minute)
	require.NoError(t, err)
	require.Empty(t, again.Promoted, "promotion is idempotent")
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 4, st.PendingByPriority[contracts.PriorityHigh])
	require.Equal(t, 0, st.PendingByPriority[contracts.PriorityNormal])
	require.Equal(t, 1, st.PendingByPriority[contracts.PriorityLow])

	var order []string
	for i := 0; i < 5; i++ {
		order = append(order, b.claimOne(t, "vm").QueueID)
	}
	require.Equal(t, []string{oldNormal.QueueID, oldLow.QueueID, high1.QueueID, failed.QueueID, newLow.QueueID}, order)

	h := b.get(t, oldNormal.QueueID).History
	require.Equal(t, "sla", h[1].By)
	require.Equal(t, "PENDING>PENDING", statusesOf(h)[1])
}

func TestRecoverStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	quiet := b.create(t, "enc-quiet", contracts.PriorityHigh)
	beating := b.create(t, "enc-beating", contracts.PriorityHigh)
	b.claimOne(t, "vm-quiet")
	b.claimOne(t, "vm-beating")
	b.clock.Advance(90 * time.Second)
	_, err := b.l.Heartbeat(b.ctx, beating.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-beating"})
	require.NoError(t, err)

	// Exactly 2 min without activity is not yet stale (> 2 min is).
	now := b.clock.Advance(30 * time.Second)
	res, err := b.l.RecoverStale(b.ctx, now, 2*time.Minute, "")
	require.NoError(t, err)
	require.Empty(t, res.Recovered)

	now = b.clock.Advance(time.Millisecond)
	res, err = b.l.RecoverStale(b.ctx, now, 2*time.Minute, "heartbeat monitor: no heartbeat for > 2m")
	require.NoError(t, err)
	require.Equal(t, []string{quiet.QueueID}, res.Recovered)
	require.Empty(t, res.DeadLettered)
	require.Equal(t, 1, res.Batches)

	task := b.get(t, quiet.QueueID)
	require.Equal(t, contracts.StatusPending, task.Status)
	require.Equal(t, contracts.PriorityHigh, task.Priority)
	require.Zero(t, task.Attempts, "a recovery is not an attempt")
	require.Equal(t, 1, task.Recoveries, "it is counted apart")
	require.Equal(t, "heartbeat monitor: no heartbeat for > 2m", task.ErrorMessage)
	require.Empty(t, task.WorkerID)
	require.Nil(t, task.ClaimedAt)
	require.Nil(t, task.HeartbeatAt)
	last := task.History[len(task.History)-1]
	require.Equal(t, "heartbeat-monitor", last.By)
	require.Contains(t, last.Reason, "vm-quiet")
	require.Contains(t, last.Reason, "recovery 1 of 5; no attempt counted")
	require.Equal(t, now, last.At)
	require.Equal(t, contracts.StatusProcessing, b.get(t, beating.QueueID).Status)

	// The old worker's heartbeat is refused now; its task is claimable again.
	_, err = b.l.Heartbeat(b.ctx, quiet.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-quiet"})
	requireConflict(t, err, quiet.QueueID, contracts.StatusPending)
	require.Equal(t, quiet.QueueID, b.claimOne(t, "vm-2").QueueID)
}

// The VT sweep has SQS's visibility semantics: a heartbeat extends the
// timeout, so a task whose worker keeps beating is never taken however long
// it runs; once the heartbeats stop, it is taken VT after the last one.
func TestRecoverExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	quiet := b.create(t, "enc-2", "")
	b.claimOne(t, "vm-1")
	b.claimOne(t, "vm-quiet")
	for i := 0; i < 30; i++ { // 3 × the 10 min timeout
		now := b.clock.Advance(time.Minute)
		_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
		require.NoError(t, err)
		res, err := b.l.RecoverExpired(b.ctx, now, 10*time.Minute, "")
		require.NoError(t, err)
		if i == 10 { // the quiet one, claimed 11 min ago, never beat
			require.Equal(t, []string{quiet.QueueID}, res.Recovered)
			continue
		}
		require.Empty(t, res.Recovered, "minute %d: heartbeats extend the visibility timeout", i+1)
	}
	require.Equal(t, contracts.StatusProcessing, b.get(t, task.QueueID).Status)

	// The worker vanishes: exactly 10 min after its last heartbeat is not
	// yet more than 10 min.
	last := b.clock.Now()
	res, err := b.l.RecoverExpired(b.ctx, b.clock.Advance(10*time.Minute), 10*time.Minute, "VT sweep: no heartbeat for > 10m, recovered")
	require.NoError(t, err)
	require.Empty(t, res.Recovered)
	res, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(time.Millisecond), 10*time.Minute, "VT sweep: no heartbeat for > 10m, recovered")
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, res.Recovered)
	got := b.get(t, task.QueueID)
	require.Equal(t, "VT sweep: no heartbeat for > 10m, recovered", got.ErrorMessage)
	require.Equal(t, "vt-sweep", got.History[len(got.History)-1].By)
	require.Zero(t, got.Attempts)
	require.Equal(t, 1, got.Recoveries)
	require.Equal(t, last.Add(10*time.Minute+time.Millisecond), got.UpdatedAt)

	q := b.get(t, quiet.QueueID)
	require.Equal(t, "visibility timeout: no heartbeat for more than 10m0s", q.ErrorMessage)
	require.Zero(t, q.Attempts)
	require.Equal(t, 1, q.Recoveries)
}

// A task whose worker keeps sending heartbeats for 3 × VT_TIMEOUT, with both
// sweeps running meanwhile, completes DONE with no attempt and no recovery
// used: long work is not a failure.
func TestLongTaskWithHeartbeatsCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const vt, stale = 10 * time.Minute, 2 * time.Minute
	task := b.create(t, "enc-long", "")
	b.claimOne(t, "vm-1")
	for elapsed := time.Duration(0); elapsed < 3*vt+time.Minute; elapsed += 30 * time.Second {
		now := b.clock.Advance(30 * time.Second)
		_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
		require.NoError(t, err)
		st, err := b.l.RecoverStale(b.ctx, now, stale, "")
		require.NoError(t, err)
		vts, err := b.l.RecoverExpired(b.ctx, now, vt, "")
		require.NoError(t, err)
		require.Empty(t, append(st.Recovered, append(st.DeadLettered, append(vts.Recovered, vts.DeadLettered...)...)...))
	}
	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: task.QueueID, WorkerID: "vm-1", ExperityActions: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, ack.Task.Status)
	require.Zero(t, ack.Task.Attempts)
	require.Zero(t, ack.Task.Recoveries)
	require.Equal(t, []string{">PENDING", "PENDING>PROCESSING", "PROCESSING>DONE"}, statusesOf(b.get(t, task.QueueID).History))
}

// Recoveries are counted apart from FAILs, with their own limit: the
// recovery that reaches MaxRecoveries makes a dead letter, however few
// attempts were used.
func TestRecoverToDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.MaxRecoveries = 2 })
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-1", MaxAttempts: 2})
	require.NoError(t, err)
	id := res.Task.QueueID
	// One FAIL first: recoveries do not add to it, nor it to them.
	b.claimOne(t, "vm-1")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "x"})
	require.NoError(t, err)
	_, err = b.l.Requeue(b.ctx, id, contracts.RequeueRequest{})
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		b.claimOne(t, "vm-1")
		out, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "stale")
		require.NoError(t, err)
		if i == 1 {
			require.Equal(t, []string{id}, out.Recovered)
			require.Equal(t, 1, b.get(t, id).Attempts, "the FAIL only")
			continue
		}
		require.Empty(t, out.Recovered)
		require.Equal(t, []string{id}, out.DeadLettered)
	}
	task := b.get(t, id)
	require.True(t, task.InDLQ())
	require.Equal(t, 1, task.Attempts)
	require.Equal(t, 2, task.Recoveries)
	require.Equal(t, contracts.DLQRecoveriesErrorMessage, task.ErrorMessage)
	last := task.History[len(task.History)-1].Reason
	require.Contains(t, last, "stale")
	require.Contains(t, last, "recovery 2 of 2; moved to the dead letter queue")

	replayed, err := b.l.Replay(b.ctx, id, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Zero(t, replayed.Attempts)
	require.Zero(t, replayed.Recoveries, "a replay starts both counts again")
}

// Sweeps work in batches and touch only what is affected.
func TestSweepBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.SweepBatch = 7 })
	reqs := make([]contracts.CreateTaskRequest, 100)
	for i := range reqs {
		reqs[i] = contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i)}
	}
	_, err := b.l.CreateBatch(b.ctx, reqs)
	require.NoError(t, err)
	_, err = b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "old", Limit: 30}) // stale later
	require.NoError(t, err)
	b.clock.Advance(5 * time.Minute)
	for i := 0; i < 2; i++ {
		_, err = b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "fresh", Limit: 35})
		require.NoError(t, err)
	}
	res, err := b.l.RecoverStale(b.ctx, b.clock.Advance(time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Len(t, res.Recovered, 30)
	require.Equal(t, 5, res.Batches, "30 stale tasks in batches of 7: 7+7+7+7+2")

	promoted, err := b.l.PromoteOverdue(b.ctx, b.clock.Advance(time.Hour), 30*time.Minute)
	require.NoError(t, err)
	require.Empty(t, promoted.Promoted, "the recovered tasks are HIGH already")
	_, err = b.l.PromoteOverdue(context.Background(), b.clock.Now(), -time.Second)
	requireCode(t, err, contracts.CodeInvalid)
}

// A FAIL whose scheduled requeue was lost is requeued by RetryOverdue; one
// whose requeue happened, and dead letters, are not touched.
func TestRetryOverdue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lost := b.create(t, "enc-lost", contracts.PriorityLow)
	b.claimOne(t, "vm-1")
	_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: lost.QueueID, ErrorMessage: "x"})
	require.NoError(t, err)
	dead, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-dead", MaxAttempts: 1})
	require.NoError(t, err)
	b.claimOne(t, "vm-1")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: dead.Task.QueueID})
	require.NoError(t, err)
	b.clock.Advance(4 * time.Minute)
	recent := b.create(t, "enc-recent", "")
	b.claimOne(t, "vm-1")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: recent.QueueID})
	require.NoError(t, err)

	now := b.clock.Advance(2 * time.Minute)
	res, err := b.l.RetryOverdue(b.ctx, now, 5*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{lost.QueueID}, res.Requeued)
	task := b.get(t, lost.QueueID)
	require.Equal(t, contracts.StatusPending, task.Status)
	require.Equal(t, contracts.PriorityHigh, task.Priority)
	require.Equal(t, 1, task.Attempts)
	require.Equal(t, "retry-sweep", task.History[len(task.History)-1].By)
	require.True(t, b.get(t, dead.Task.QueueID).InDLQ())
	require.Equal(t, contracts.StatusError, b.get(t, recent.QueueID).Status)

	// The late requeue, if it does arrive, is a no-op.
	out, err := b.l.Requeue(b.ctx, lost.QueueID, contracts.RequeueRequest{})
	require.NoError(t, err)
	require.True(t, out.Noop)
}

// The second index of PROCESSING tasks, claimed (by last heartbeat), which
// an instance of before 2026-11-26 may write during a rolling upgrade
// (CHANGELOG.md), is swept too: a heartbeat keeps its entries current, a
// task whose heartbeats stop is recovered once, and entries of tasks not
// PROCESSING drop out, so the index ends empty.
func TestRecoverExpiredSweepsTheClaimedIndexOfAnEarlierVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claimed := b.l.KeyBase() + "claimed"
	alive := b.create(t, "enc-alive", "")
	gone := b.create(t, "enc-gone", "")
	acked := b.create(t, "enc-acked", "")
	for _, task := range []contracts.Task{alive, gone, acked} {
		got := b.claimOne(t, "vm-"+task.EncounterID)
		// As that instance's claim script writes it.
		require.NoError(t, b.rdb.ZAdd(b.ctx, claimed, redis.Z{Score: float64(got.ClaimedAt.UnixMilli()), Member: got.QueueID}).Err())
	}
	_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: acked.QueueID, WorkerID: "vm-enc-acked", ExperityActions: json.RawMessage(`{}`)})
	require.NoError(t, err)

	const vt = 10 * time.Minute
	for i := 0; i < 15; i++ {
		now := b.clock.Advance(time.Minute)
		_, err := b.l.Heartbeat(b.ctx, alive.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-enc-alive"})
		require.NoError(t, err)
		res, err := b.l.RecoverExpired(b.ctx, now, vt, "")
		require.NoError(t, err)
		if i == 10 { // 11 min after the claims: the silent one, once
			require.Equal(t, []string{gone.QueueID}, res.Recovered)
			continue
		}
		require.Empty(t, res.Recovered, "minute %d", i+1)
	}
	score, err := b.rdb.ZScore(b.ctx, claimed, alive.QueueID).Result()
	require.NoError(t, err)
	require.Equal(t, float64(b.clock.Now().UnixMilli()), score, "the heartbeat moved the earlier version's entry")
	require.Equal(t, contracts.StatusProcessing, b.get(t, alive.QueueID).Status)
	require.Equal(t, 1, b.get(t, gone.QueueID).Recoveries)

	// The alive task is ACKed here: its entry drops out once expired.
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: alive.QueueID, WorkerID: "vm-enc-alive", ExperityActions: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(vt+time.Millisecond), vt, "")
	require.NoError(t, err)
	require.Zero(t, b.rdb.Exists(b.ctx, claimed).Val(), "the earlier version's index is empty")
}

// A claim answers each task as Get then shows it: the claim reads and
// answers only part of the hash and the ledger fills in what it set
// (status, worker, claim and heartbeat times), so every field a task
// shows is checked here on a task that has them all — a payload, a
// parsed_payload with experityActions, an error, attempts and a recovery.
func TestClaimAnswersTheTaskAsGetShowsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-full", Priority: contracts.PriorityLow,
		MaxAttempts: 5, Payload: json.RawMessage(`{"patient":{"id":7}}`)})
	require.NoError(t, err)
	id := res.Task.QueueID
	b.claimOne(t, "vm-1")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, WorkerID: "vm-1", ErrorMessage: "portal timeout"})
	require.NoError(t, err)
	msg := "amended"
	_, err = b.l.UpdateStatus(b.ctx, id, contracts.StatusUpdateRequest{Status: contracts.StatusPending, ErrorMessage: &msg,
		ParsedPayload: json.RawMessage(`{"codes":[1],"experityActions":{"x":true}}`)})
	require.NoError(t, err)
	b.claimOne(t, "vm-2")
	_, err = b.l.RecoverStale(b.ctx, b.clock.Advance(time.Hour), time.Minute, "")
	require.NoError(t, err)

	b.clock.Advance(time.Second)
	got := b.claimOne(t, "vm-3")
	want := noHistory(b.get(t, id))
	require.Equal(t, want, got)
	require.Equal(t, contracts.StatusProcessing, got.Status)
	require.Equal(t, "vm-3", got.WorkerID)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, 1, got.Recoveries)
	require.NotEmpty(t, got.ErrorMessage)
	require.JSONEq(t, `{"codes":[1],"experityActions":{"x":true}}`, string(got.ParsedPayload))
	require.JSONEq(t, `{"patient":{"id":7}}`, string(got.Payload))
	require.Equal(t, b.clock.Now(), *got.HeartbeatAt)
}

// A claimed entry (CHANGELOG.md, 2026-11-26) can outlive its task's
// recovery (a recovery does not remove it) and meet the task claimed again: the
// visibility sweep then finds an old score on a task claimed a moment ago.
// It moves the entry to the task's heartbeat and takes nothing.
func TestRecoverExpiredTrustsTheTaskOverAStaleEntry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claimed := b.l.KeyBase() + "claimed"
	task := b.create(t, "enc-stale", "")
	first := b.claimOne(t, "vm-1")
	require.NoError(t, b.rdb.ZAdd(b.ctx, claimed, redis.Z{Score: float64(first.ClaimedAt.UnixMilli()), Member: task.QueueID}).Err())
	// The worker dies; the heartbeat monitor recovers the task, and the
	// claimed entry, which no script here removes, stays at the first claim.
	st, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, st.Recovered)
	// The entry survives when the sweep's pass over it finds the task
	// PROCESSING again: claimed anew 20 min after the first claim.
	b.clock.Advance(17 * time.Minute)
	again := b.claimOne(t, "vm-2")
	require.Equal(t, task.QueueID, again.QueueID)
	res, err := b.l.RecoverExpired(b.ctx, b.clock.Advance(time.Second), 10*time.Minute, "")
	require.NoError(t, err)
	require.Empty(t, res.Recovered, "claimed a second ago")
	require.Equal(t, contracts.StatusProcessing, b.get(t, task.QueueID).Status)
	score, err := b.rdb.ZScore(b.ctx, claimed, task.QueueID).Result()
	require.NoError(t, err)
	require.Equal(t, float64(again.ClaimedAt.UnixMilli()), score)
	// Its worker then goes silent: taken once, VT after the claim.
	res, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(10*time.Minute), 10*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, res.Recovered)
	_, err = b.l.RecoverExpired(b.ctx, b.clock.Advance(time.Minute), 10*time.Minute, "")
	require.NoError(t, err)
	require.Zero(t, b.rdb.Exists(b.ctx, claimed).Val())
}
