package tasks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	require.Equal(t, 1, task.Attempts, "a recovery counts as an attempt")
	require.Equal(t, "heartbeat monitor: no heartbeat for > 2m", task.ErrorMessage)
	require.Empty(t, task.WorkerID)
	require.Nil(t, task.ClaimedAt)
	require.Nil(t, task.HeartbeatAt)
	last := task.History[len(task.History)-1]
	require.Equal(t, "heartbeat-monitor", last.By)
	require.Contains(t, last.Reason, "vm-quiet")
	require.Equal(t, now, last.At)
	require.Equal(t, contracts.StatusProcessing, b.get(t, beating.QueueID).Status)

	// The old worker's heartbeat is refused now; its task is claimable again.
	_, err = b.l.Heartbeat(b.ctx, quiet.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-quiet"})
	requireConflict(t, err, quiet.QueueID, contracts.StatusPending)
	require.Equal(t, quiet.QueueID, b.claimOne(t, "vm-2").QueueID)
}

// The VT sweep goes by claimed_at: heartbeats do not keep a task forever.
func TestRecoverExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	b.claimOne(t, "vm-1")
	for i := 0; i < 10; i++ {
		b.clock.Advance(time.Minute)
		_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
		require.NoError(t, err)
	}
	now := b.clock.Advance(time.Second)
	stale, err := b.l.RecoverStale(b.ctx, now, 2*time.Minute, "")
	require.NoError(t, err)
	require.Empty(t, stale.Recovered, "heartbeats keep it off the heartbeat monitor")

	res, err := b.l.RecoverExpired(b.ctx, now, 10*time.Minute, "VT sweep: PROCESSING for > 10m, recovered")
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, res.Recovered)
	got := b.get(t, task.QueueID)
	require.Equal(t, "VT sweep: PROCESSING for > 10m, recovered", got.ErrorMessage)
	require.Equal(t, "vt-sweep", got.History[len(got.History)-1].By)
}

// A recovery that uses the last attempt makes a dead letter, as a FAIL would.
func TestRecoverToDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-1", MaxAttempts: 2})
	require.NoError(t, err)
	id := res.Task.QueueID
	for i := 1; i <= 2; i++ {
		b.claimOne(t, "vm-1")
		out, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "stale")
		require.NoError(t, err)
		if i == 1 {
			require.Equal(t, []string{id}, out.Recovered)
			continue
		}
		require.Empty(t, out.Recovered)
		require.Equal(t, []string{id}, out.DeadLettered)
	}
	task := b.get(t, id)
	require.True(t, task.InDLQ())
	require.Equal(t, 2, task.Attempts)
	require.Equal(t, contracts.DLQErrorMessage, task.ErrorMessage)
	require.Contains(t, task.History[len(task.History)-1].Reason, "stale")
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
