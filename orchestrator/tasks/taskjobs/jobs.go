package taskjobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/scheduler"
)

// Names of the jobs Jobs returns.
const (
	JobHeartbeat    = "tasks_heartbeat_monitor"
	JobVTSweep      = "tasks_vt_sweep"
	JobSLAPromotion = "tasks_sla_promotion"
	JobRetryOverdue = "tasks_retry_overdue"
	JobDLQRepair    = "tasks_dlq_repair"
	JobPurgeDone    = "tasks_purge_done"
)

// minPurgeAfter is the shortest PurgeAfter accepted: a purged task's
// queue_id is free again, so a create retried after the purge would make
// the task anew (and its work would be done twice), and a late ACK would
// find no task.
const minPurgeAfter = time.Hour

// SweepSettings are the schedules (scheduler specs) and thresholds of the
// jobs. Zero values take the seed's defaults; specs are checked by
// scheduler.Register.
type SweepSettings struct {
	HeartbeatSpec  string        // default "@every 30s"
	HeartbeatStale time.Duration // PROCESSING without activity this long → PENDING; default 2m
	VTSpec         string        // default "@every 5m"
	VTTimeout      time.Duration // PROCESSING this long since the last heartbeat or claim → PENDING (a heartbeat extends it); default 10m
	SLASpec        string        // default "@every 15m"
	SLAThreshold   time.Duration // PENDING NORMAL/LOW this long since creation → HIGH; default 30m
	// RetryOverdueAfter: an ERROR task awaiting a retry this long since its
	// FAIL lost its requeue and is requeued by the job. It must exceed the
	// longest backoff; default 10m.
	RetryOverdueSpec  string // default "@every 1m"
	RetryOverdueAfter time.Duration
	// Dead letters updated between DLQRepairWindow and DLQRepairGrace ago get
	// their archived replay task and durable record if they lack them.
	DLQRepairSpec   string        // default "@every 5m"
	DLQRepairWindow time.Duration // default 1h
	DLQRepairGrace  time.Duration // default 1m
	// Retention: DONE tasks whose last update is older than PurgeAfter are
	// deleted (Ledger.PurgeDone). Dead letters are never purged: they wait
	// for manual review. PurgeAfter zero takes the default; negative
	// disables the job. When enabled it must be at least an hour, longer
	// than any retry of a create or an ACK.
	PurgeSpec  string        // default "@every 1h"
	PurgeAfter time.Duration // default 168h (7 days)
}

// DefaultSweepSettings are the seed's values.
func DefaultSweepSettings() SweepSettings { return SweepSettings{}.withDefaults() }

func (s SweepSettings) withDefaults() SweepSettings {
	s.HeartbeatSpec = valutil.ValOrDefault(s.HeartbeatSpec, "@every 30s")
	s.HeartbeatStale = valutil.ValOrDefault(s.HeartbeatStale, 2*time.Minute)
	s.VTSpec = valutil.ValOrDefault(s.VTSpec, "@every 5m")
	s.VTTimeout = valutil.ValOrDefault(s.VTTimeout, 10*time.Minute)
	s.SLASpec = valutil.ValOrDefault(s.SLASpec, "@every 15m")
	s.SLAThreshold = valutil.ValOrDefault(s.SLAThreshold, 30*time.Minute)
	s.RetryOverdueSpec = valutil.ValOrDefault(s.RetryOverdueSpec, "@every 1m")
	s.RetryOverdueAfter = valutil.ValOrDefault(s.RetryOverdueAfter, 10*time.Minute)
	s.DLQRepairSpec = valutil.ValOrDefault(s.DLQRepairSpec, "@every 5m")
	s.DLQRepairWindow = valutil.ValOrDefault(s.DLQRepairWindow, time.Hour)
	s.DLQRepairGrace = valutil.ValOrDefault(s.DLQRepairGrace, time.Minute)
	s.PurgeSpec = valutil.ValOrDefault(s.PurgeSpec, "@every 1h")
	s.PurgeAfter = valutil.ValOrDefault(s.PurgeAfter, 7*24*time.Hour)
	return s
}

func (s SweepSettings) validate(maxBackoff time.Duration) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatStale", s.HeartbeatStale}, {"VTTimeout", s.VTTimeout}, {"SLAThreshold", s.SLAThreshold},
		{"RetryOverdueAfter", s.RetryOverdueAfter}, {"DLQRepairWindow", s.DLQRepairWindow}, {"DLQRepairGrace", s.DLQRepairGrace},
	} {
		if d.v <= 0 {
			return fmt.Errorf("taskjobs: %s must be positive, got %s", d.name, d.v)
		}
	}
	if s.RetryOverdueAfter <= maxBackoff {
		return fmt.Errorf("taskjobs: RetryOverdueAfter %s must exceed the longest requeue backoff %s, "+
			"or the job would requeue tasks whose requeue is still scheduled", s.RetryOverdueAfter, maxBackoff)
	}
	if s.DLQRepairWindow <= s.DLQRepairGrace {
		return fmt.Errorf("taskjobs: DLQRepairWindow %s must exceed DLQRepairGrace %s", s.DLQRepairWindow, s.DLQRepairGrace)
	}
	if s.PurgeAfter > 0 && s.PurgeAfter < minPurgeAfter {
		return fmt.Errorf("taskjobs: PurgeAfter %s must be at least %s (a create or an ACK retried after the purge would find no task), "+
			"or negative to keep DONE tasks for good", s.PurgeAfter, minPurgeAfter)
	}
	return nil
}

// NamedJob is a job to register on the scheduler: Register(Name, Spec, Job).
type NamedJob struct {
	Name string
	Spec string
	Job  scheduler.Job
}

// Jobs returns the ledger's cron jobs with s (defaults filled in):
// heartbeat monitor, visibility-timeout sweep, SLA promotion, retry-overdue
// safety net, DLQ repair and — unless s.PurgeAfter is negative — the
// retention of DONE tasks. Each takes now from Config.Now, counts what it
// did in the metrics and logs it when it changed something. A run that
// fails part-way keeps what it did; the next tick goes on.
func (d *Dispatcher) Jobs(s SweepSettings) ([]NamedJob, error) {
	s = s.withDefaults()
	if err := s.validate(d.maxBackoff()); err != nil {
		return nil, err
	}
	l := d.cfg.Ledger
	jobs := []NamedJob{
		{JobHeartbeat, s.HeartbeatSpec, d.recoverJob(JobHeartbeat, sweepHeartbeat, s.HeartbeatStale, l.RecoverStale)},
		{JobVTSweep, s.VTSpec, d.recoverJob(JobVTSweep, sweepVT, s.VTTimeout, l.RecoverExpired)},
		{JobSLAPromotion, s.SLASpec, scheduler.JobFunc(func(ctx context.Context) error {
			res, err := l.PromoteOverdue(ctx, d.cfg.Now(), s.SLAThreshold)
			d.m.promoted.Add(float64(len(res.Promoted)))
			if len(res.Promoted) > 0 {
				d.log.Info("SLA promotion: PENDING tasks older than the threshold are now HIGH", "job", JobSLAPromotion,
					"promoted", len(res.Promoted), "threshold", s.SLAThreshold)
			}
			return err
		})},
		{JobRetryOverdue, s.RetryOverdueSpec, scheduler.JobFunc(func(ctx context.Context) error {
			res, err := l.RetryOverdue(ctx, d.cfg.Now(), s.RetryOverdueAfter)
			d.m.requeued.WithLabelValues(viaRetryOverdue).Add(float64(len(res.Requeued)))
			if len(res.Requeued) > 0 {
				d.log.Warn("requeued ERROR tasks whose scheduled requeue never came (a crash between FAIL and its enqueue, or Asynq far behind)",
					"job", JobRetryOverdue, "requeued", len(res.Requeued), "after", s.RetryOverdueAfter, "queue_ids", head(res.Requeued))
			}
			return err
		})},
		{JobDLQRepair, s.DLQRepairSpec, scheduler.JobFunc(func(ctx context.Context) error {
			_, err := d.repairDeadLetters(ctx, s.DLQRepairWindow, s.DLQRepairGrace)
			return err
		})},
	}
	if s.PurgeAfter > 0 {
		jobs = append(jobs, NamedJob{JobPurgeDone, s.PurgeSpec, scheduler.JobFunc(func(ctx context.Context) error {
			res, err := l.PurgeDone(ctx, d.cfg.Now(), s.PurgeAfter)
			d.m.purged.Add(float64(len(res.Purged)))
			if len(res.Purged) > 0 {
				d.log.Info("retention: deleted DONE tasks older than the threshold", "job", JobPurgeDone,
					"purged", len(res.Purged), "after", s.PurgeAfter)
			}
			return err
		})})
	}
	return jobs, nil
}

type recoverFunc func(ctx context.Context, now time.Time, olderThan time.Duration, reason string) (tasks.SweepResult, error)

// recoverJob runs a stale-claim sweep (the ledger's default reason is the
// recovery message) and gives the tasks it dead-lettered (their
// MAX_RECOVERIES-th recovery) their archived replay task.
func (d *Dispatcher) recoverJob(job, sweep string, olderThan time.Duration, sweepFn recoverFunc) scheduler.Job {
	return scheduler.JobFunc(func(ctx context.Context) error {
		res, err := sweepFn(ctx, d.cfg.Now(), olderThan, "")
		d.m.recovered.WithLabelValues(sweep).Add(float64(len(res.Recovered)))
		errs := []error{err}
		for _, id := range res.DeadLettered {
			errs = append(errs, d.followDeadLetter(ctx, id, sweep))
		}
		if n := len(res.Recovered) + len(res.DeadLettered); n > 0 {
			d.log.Info("recovered stuck PROCESSING tasks", "job", job, "older_than", olderThan,
				"recovered", len(res.Recovered), "dead_lettered", len(res.DeadLettered), "queue_ids", head(res.Recovered))
		}
		return errors.Join(errs...)
	})
}

// followDeadLetter gives the task a sweep just dead-lettered its archived
// replay task. A failure is left to the DLQ-repair job.
func (d *Dispatcher) followDeadLetter(ctx context.Context, id, via string) error {
	t, err := d.cfg.Ledger.Get(ctx, id)
	if err != nil || !t.InDLQ() { // replayed meanwhile: nothing to archive
		return err
	}
	_, _, err = d.deadLetter(ctx, t, via, true)
	return err
}

// repairDeadLetters gives every dead letter updated between window and
// grace ago its archived replay task and durable record if it lacks them,
// and returns how many it created. It reads the whole DLQ index (pages of
// MaxListLimit) and asks Asynq only about those in the window.
func (d *Dispatcher) repairDeadLetters(ctx context.Context, window, grace time.Duration) (int, error) {
	now := d.cfg.Now()
	from, to := now.Add(-window), now.Add(-grace)
	q := contracts.ListQuery{DLQ: true, Limit: contracts.MaxListLimit}
	var created []string
	var errs []error
	for ctx.Err() == nil {
		page, err := d.cfg.Ledger.List(ctx, q)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, t := range page.Tasks {
			if t.UpdatedAt.Before(from) || t.UpdatedAt.After(to) {
				continue
			}
			_, ok, err := d.deadLetter(ctx, t, viaRepair, false)
			if err != nil {
				errs = append(errs, fmt.Errorf("dead letter %s: %w", t.QueueID, err))
			}
			if ok {
				created = append(created, t.QueueID)
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	if len(created) > 0 {
		d.log.Info("gave dead letters their archived replay task (dead-lettered by hand, or by a process that died before archiving)",
			"job", JobDLQRepair, "created", len(created), "queue_ids", head(created))
	}
	return len(created), errors.Join(append(errs, ctx.Err())...)
}

// head shortens an id list for a log line.
func head(ids []string) []string {
	const n = 10
	if len(ids) > n {
		return ids[:n]
	}
	return ids
}
