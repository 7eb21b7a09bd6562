package taskjobs_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/logtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
)

func TestJobsHaveTheSeedsSchedules(t *testing.T) {
	t.Parallel()
	d, _ := offline(t)
	jobs, err := d.Jobs(taskjobs.SweepSettings{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, j := range jobs {
		require.NotNil(t, j.Job)
		got[j.Name] = j.Spec
	}
	require.Equal(t, map[string]string{
		taskjobs.JobHeartbeat:    "@every 30s",
		taskjobs.JobVTSweep:      "@every 5m",
		taskjobs.JobSLAPromotion: "@every 15m",
		taskjobs.JobRetryOverdue: "@every 1m",
		taskjobs.JobDLQRepair:    "@every 5m",
		taskjobs.JobPurgeDone:    "@every 1h",
	}, got)
	require.Equal(t, taskjobs.SweepSettings{
		HeartbeatSpec: "@every 30s", HeartbeatStale: 2 * time.Minute,
		VTSpec: "@every 5m", VTTimeout: 10 * time.Minute,
		SLASpec: "@every 15m", SLAThreshold: 30 * time.Minute,
		RetryOverdueSpec: "@every 1m", RetryOverdueAfter: 10 * time.Minute,
		DLQRepairSpec: "@every 5m", DLQRepairWindow: time.Hour, DLQRepairGrace: time.Minute,
		PurgeSpec: "@every 1h", PurgeAfter: 7 * 24 * time.Hour,
	}, taskjobs.DefaultSweepSettings())

	// A negative PurgeAfter keeps DONE tasks for good: no retention job.
	jobs, err = d.Jobs(taskjobs.SweepSettings{PurgeAfter: -1})
	require.NoError(t, err)
	require.Len(t, jobs, 5)
	for _, j := range jobs {
		require.NotEqual(t, taskjobs.JobPurgeDone, j.Name)
	}
}

func TestSweepSettingsAreValidated(t *testing.T) {
	t.Parallel()
	d, _ := offline(t) // default backoff: at most 5 min
	for name, tc := range map[string]struct {
		s    taskjobs.SweepSettings
		want string
	}{
		"negative stale":         {taskjobs.SweepSettings{HeartbeatStale: -time.Second}, "HeartbeatStale must be positive"},
		"negative sla":           {taskjobs.SweepSettings{SLAThreshold: -time.Minute}, "SLAThreshold must be positive"},
		"overdue within backoff": {taskjobs.SweepSettings{RetryOverdueAfter: 5 * time.Minute}, "must exceed the longest requeue backoff 5m0s"},
		"window within grace":    {taskjobs.SweepSettings{DLQRepairWindow: time.Minute, DLQRepairGrace: time.Minute}, "DLQRepairWindow 1m0s must exceed"},
		"purge too soon":         {taskjobs.SweepSettings{PurgeAfter: 59 * time.Minute}, "PurgeAfter 59m0s must be at least 1h0m0s"},
	} {
		_, err := d.Jobs(tc.s)
		require.ErrorContains(t, err, tc.want, name)
	}
	_, err := d.Jobs(taskjobs.SweepSettings{RetryOverdueAfter: 5*time.Minute + time.Second, PurgeAfter: time.Hour})
	require.NoError(t, err)
}

// The retention job deletes DONE tasks older than PurgeAfter (7 days by
// default) and nothing else, counts and logs them.
func TestPurgeDoneJob(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	logs := &logtest.Buffer{}
	reg := prometheus.NewRegistry()
	d, err := taskjobs.New(taskjobs.Config{Ledger: b.l, Runtime: b.rt, Registerer: reg, Now: b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	jobs, err := d.Jobs(taskjobs.SweepSettings{})
	require.NoError(t, err)
	var purge taskjobs.NamedJob
	for _, j := range jobs {
		if j.Name == taskjobs.JobPurgeDone {
			purge = j
		}
	}
	require.NotNil(t, purge.Job)

	ack := func(id string) {
		t.Helper()
		b.claim(t, id)
		_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id})
		require.NoError(t, err)
	}
	dead := b.create(t, 1, contracts.PriorityHigh)
	require.True(t, b.failOnce(t, dead.QueueID).DLQ)
	old := b.create(t, 3, contracts.PriorityHigh)
	ack(old.QueueID)
	b.clock.Advance(24 * time.Hour)
	young := b.create(t, 3, contracts.PriorityHigh)
	ack(young.QueueID)

	b.clock.Advance(6 * 24 * time.Hour) // old: DONE exactly 7 days ago
	require.NoError(t, purge.Job.Run(b.ctx))
	require.Equal(t, 0.0, metric(t, reg, "flowgate_tasks_purged_total"), "exactly 7 days is not more")
	b.clock.Advance(time.Second)
	require.NoError(t, purge.Job.Run(b.ctx))
	_, err = b.l.Get(b.ctx, old.QueueID)
	requireCode(t, err, contracts.CodeNotFound)
	require.Equal(t, contracts.StatusDone, b.get(t, young.QueueID).Status)
	require.True(t, b.get(t, dead.QueueID).InDLQ(), "dead letters are never purged")
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_purged_total"))
	require.Contains(t, logs.String(), "job=tasks_purge_done purged=1 after=168h0m0s")

	require.NoError(t, purge.Job.Run(b.ctx))
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_purged_total"))
	require.Equal(t, 1, strings.Count(logs.String(), "retention"), "one line per run that changed something")
}

// The heartbeat monitor, the visibility-timeout sweep and the SLA promotion
// with the seed's thresholds, on the ledger's clock: what they change, what
// they count and what they log.
func TestSweepJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, options{maxRecoveries: 2})
	logs := &logtest.Buffer{}
	reg := prometheus.NewRegistry()
	d, err := taskjobs.New(taskjobs.Config{Ledger: b.l, Runtime: b.rt, Registerer: reg, Now: b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	jobs, err := d.Jobs(taskjobs.SweepSettings{})
	require.NoError(t, err)
	run := func(name string) {
		t.Helper()
		for _, j := range jobs {
			if j.Name == name {
				require.NoError(t, j.Job.Run(b.ctx))
				return
			}
		}
		t.Fatalf("no job %s", name)
	}

	// lastTry's worker went silent once already (recovered outside the
	// jobs, so nothing is counted or logged yet): its next recovery is its
	// last (MaxRecoveries 2 here).
	lastTry := b.create(t, 3, contracts.PriorityNormal) // no heartbeat, last recovery
	b.claim(t, lastTry.QueueID)
	pre, err := b.l.RecoverStale(b.ctx, b.clock.Advance(3*time.Minute), 2*time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, []string{lastTry.QueueID}, pre.Recovered)
	start := b.clock.Now()

	silent := b.create(t, 3, contracts.PriorityNormal) // no heartbeat
	alive := b.create(t, 3, contracts.PriorityNormal)  // heartbeats: holds the task as long as it beats
	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 3})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	heartbeat := func() {
		_, err := b.l.Heartbeat(b.ctx, alive.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
		require.NoError(t, err)
	}

	b.clock.Advance(2 * time.Minute) // exactly 2 min: not "more than 2 min"
	heartbeat()
	run(taskjobs.JobHeartbeat)
	require.Equal(t, contracts.StatusProcessing, b.get(t, silent.QueueID).Status)
	require.Empty(t, logs.String(), "nothing changed, nothing logged")

	b.clock.Advance(time.Millisecond)
	run(taskjobs.JobHeartbeat)
	got := b.get(t, silent.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Zero(t, got.Attempts, "a recovery is not an attempt")
	require.Equal(t, 1, got.Recoveries)
	require.Equal(t, "no heartbeat for more than 2m0s", got.ErrorMessage)
	require.Equal(t, "heartbeat-monitor", got.History[len(got.History)-1].By)
	dead := b.get(t, lastTry.QueueID)
	require.True(t, dead.InDLQ(), "its last recovery: a dead letter")
	require.Zero(t, dead.Attempts)
	require.Equal(t, 2, dead.Recoveries)
	require.Equal(t, contracts.DLQRecoveriesErrorMessage, dead.ErrorMessage)
	b.requireArchived(t, taskjobs.DeadLetterTaskID(dead))
	require.Equal(t, contracts.StatusProcessing, b.get(t, alive.QueueID).Status)
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_recovered_total", "sweep", "heartbeat"))
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_dead_lettered_total", "via", "heartbeat"))
	require.Contains(t, logs.String(), "level=INFO msg=\"recovered stuck PROCESSING tasks\" component=taskjobs job=tasks_heartbeat_monitor older_than=2m0s recovered=1 dead_lettered=1")

	// The visibility timeout counts from the last heartbeat: a heartbeat
	// extends it (SQS), so 3 × VT_TIMEOUT since the claim changes nothing.
	for range 30 {
		b.clock.Advance(time.Minute)
		heartbeat()
		run(taskjobs.JobHeartbeat)
		run(taskjobs.JobVTSweep)
	}
	require.Greater(t, b.clock.Now().Sub(start), 30*time.Minute)
	require.Equal(t, contracts.StatusProcessing, b.get(t, alive.QueueID).Status, "alive: never taken")
	// The worker vanishes; the VT sweep alone (as if the monitor were off).
	b.clock.Advance(10 * time.Minute)
	run(taskjobs.JobVTSweep)
	require.Equal(t, contracts.StatusProcessing, b.get(t, alive.QueueID).Status, "exactly 10 min is not more")
	b.clock.Advance(time.Millisecond)
	run(taskjobs.JobVTSweep)
	got = b.get(t, alive.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, "visibility timeout: no heartbeat for more than 10m0s", got.ErrorMessage)
	require.Zero(t, got.Attempts)
	require.Equal(t, 1, got.Recoveries)
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_recovered_total", "sweep", "heartbeat"))
	require.Equal(t, 1.0, metric(t, reg, "flowgate_tasks_recovered_total", "sweep", "vt"))

	// SLA: NORMAL and LOW tasks pending more than 30 min become HIGH.
	late := b.create(t, 3, contracts.PriorityNormal)
	low := b.create(t, 3, contracts.PriorityLow)
	b.clock.Advance(30 * time.Minute)
	fresh := b.create(t, 3, contracts.PriorityNormal)
	run(taskjobs.JobSLAPromotion)
	require.Equal(t, contracts.PriorityNormal, b.get(t, late.QueueID).Priority, "exactly 30 min is not more")
	b.clock.Advance(time.Millisecond)
	run(taskjobs.JobSLAPromotion)
	require.Equal(t, contracts.PriorityHigh, b.get(t, late.QueueID).Priority)
	require.Equal(t, contracts.PriorityHigh, b.get(t, low.QueueID).Priority)
	require.Equal(t, contracts.PriorityNormal, b.get(t, fresh.QueueID).Priority)
	require.Equal(t, 2.0, metric(t, reg, "flowgate_tasks_promoted_total"))
	require.Contains(t, logs.String(), "promoted=2 threshold=30m0s")
	require.Equal(t, 1, strings.Count(logs.String(), "SLA promotion"), "one line per run that changed something")
}

// A worker that keeps sending heartbeats holds its task however long the
// work takes: here 3 × VT_TIMEOUT, with the heartbeat monitor and the
// visibility-timeout sweep running on their default schedules (ticks of the
// injected clock), and the task ends DONE with no attempt and no recovery
// used. A worker that vanishes meanwhile still loses its task within
// HEARTBEAT_STALE_AFTER plus one monitor period of its last heartbeat.
func TestLongTaskKeepsItsClaim(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	s := taskjobs.DefaultSweepSettings()
	jobs, err := b.d.Jobs(s)
	require.NoError(t, err)
	byName := map[string]taskjobs.NamedJob{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	const (
		monitorEvery = 30 * time.Second // s.HeartbeatSpec
		vtEvery      = 5 * time.Minute  // s.VTSpec
		beatEvery    = time.Minute      // the workers' heartbeat interval
	)
	require.Equal(t, "@every 30s", byName[taskjobs.JobHeartbeat].Spec)
	require.Equal(t, "@every 5m", byName[taskjobs.JobVTSweep].Spec)

	long := b.create(t, 3, contracts.PriorityNormal)
	gone := b.create(t, 3, contracts.PriorityNormal)
	for _, w := range []string{"vm-long", "vm-gone"} {
		got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: w})
		require.NoError(t, err)
		require.Len(t, got, 1)
	}
	start := b.clock.Now()
	vanishAfter := 7 * time.Minute
	var lastGoneBeat, goneRecoveredAt time.Time
	for elapsed := monitorEvery; elapsed <= 3*s.VTTimeout+time.Minute; elapsed += monitorEvery {
		now := b.clock.Advance(monitorEvery)
		if elapsed%beatEvery == 0 {
			_, err := b.l.Heartbeat(b.ctx, long.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-long"})
			require.NoError(t, err, "at %s", elapsed)
			if elapsed <= vanishAfter {
				_, err := b.l.Heartbeat(b.ctx, gone.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-gone"})
				require.NoError(t, err)
				lastGoneBeat = now
			}
		}
		require.NoError(t, byName[taskjobs.JobHeartbeat].Job.Run(b.ctx))
		if elapsed%vtEvery == 0 {
			require.NoError(t, byName[taskjobs.JobVTSweep].Job.Run(b.ctx))
		}
		if goneRecoveredAt.IsZero() && b.get(t, gone.QueueID).Status == contracts.StatusPending {
			goneRecoveredAt = now
		}
		require.Equal(t, contracts.StatusProcessing, b.get(t, long.QueueID).Status, "at %s", elapsed)
	}
	require.Greater(t, b.clock.Now().Sub(start), 3*s.VTTimeout)

	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: long.QueueID, WorkerID: "vm-long",
		ExperityActions: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, ack.Task.Status)
	require.Zero(t, ack.Task.Attempts, "no attempt used")
	require.Zero(t, ack.Task.Recoveries, "never recovered")

	require.False(t, goneRecoveredAt.IsZero(), "the vanished worker's task was never recovered")
	silence := goneRecoveredAt.Sub(lastGoneBeat)
	require.Greater(t, silence, s.HeartbeatStale)
	require.LessOrEqual(t, silence, s.HeartbeatStale+monitorEvery, "within HEARTBEAT_STALE_AFTER + one sweep")
	g := b.get(t, gone.QueueID)
	require.Zero(t, g.Attempts)
	require.Equal(t, 1, g.Recoveries)
	require.Equal(t, "heartbeat-monitor", g.History[len(g.History)-1].By)
	require.Equal(t, 1.0, metric(t, b.reg, "flowgate_tasks_recovered_total", "sweep", "heartbeat"))
	require.Zero(t, metric(t, b.reg, "flowgate_tasks_recovered_total", "sweep", "vt"))
	require.Zero(t, metric(t, b.reg, "flowgate_tasks_dead_lettered_total", "via", "heartbeat"))
	require.Zero(t, metric(t, b.reg, "flowgate_tasks_dead_lettered_total", "via", "vt"))
}
