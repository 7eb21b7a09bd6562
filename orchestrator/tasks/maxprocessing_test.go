package tasks_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// A worker whose job hangs while its heartbeat thread lives gets its task
// taken back: heartbeats extend the claim until TASK_MAX_PROCESSING since
// the claim, then answer 409 max_processing; the heartbeat monitor then
// recovers the task (a counted recovery) once the last extension is stale,
// and another worker claims it.
func TestMaxProcessingRecoversLiveHeartbeats(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.MaxProcessing = time.Hour })
	task := b.create(t, "enc-hang", contracts.PriorityNormal)
	b.claimOne(t, "vm-hang")
	const stale = 2 * time.Minute // HEARTBEAT_STALE_AFTER

	// Heartbeats every 30 s for the whole hour keep it.
	for b.clock.Now().Before(t0.Add(time.Hour - 30*time.Second)) {
		b.clock.Advance(30 * time.Second)
		_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-hang"})
		require.NoError(t, err, "at %s", b.clock.Now().Sub(t0))
		res, err := b.l.RecoverStale(b.ctx, b.clock.Now(), stale, "")
		require.NoError(t, err)
		require.Empty(t, res.Recovered)
	}
	// Past the hour a heartbeat is refused and extends nothing.
	b.clock.Advance(time.Minute)
	_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-hang"})
	requireCode(t, err, contracts.CodeConflict)
	var ce *contracts.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "max_processing", ce.Details["reason"])
	require.Equal(t, contracts.StatusProcessing, b.get(t, task.QueueID).Status)

	// The worker keeps sending; the monitor recovers it all the same.
	for range 4 {
		b.clock.Advance(30 * time.Second)
		_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-hang"})
		requireCode(t, err, contracts.CodeConflict)
	}
	res, err := b.l.RecoverStale(b.ctx, b.clock.Now(), stale, "")
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, res.Recovered)
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, 1, got.Recoveries)
	require.Equal(t, task.QueueID, b.claimOne(t, "vm-2").QueueID)
	_, err = b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-2"})
	require.NoError(t, err, "a new claim starts a new processing time")
}

func TestMaxProcessingBounds(t *testing.T) {
	t.Parallel()
	db := setup(t).rdb
	for _, d := range []time.Duration{time.Second, tasks.MaxMaxProcessing + time.Second} {
		_, err := tasks.New(db, tasks.Config{KeyPrefix: "bounds", MaxProcessing: d})
		require.Error(t, err, "%s", d)
	}
	_, err := tasks.New(db, tasks.Config{KeyPrefix: "bounds", MaxProcessing: tasks.MaxMaxProcessing})
	require.NoError(t, err)
}
