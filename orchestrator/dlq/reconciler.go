package dlq

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"
)

// ArchiveMax is asynq's per-queue archive bound (internal/rdb maxArchiveSize):
// past it, asynq drops the oldest archived tasks.
const ArchiveMax = 10000

// Archive is what the reconciler needs of asynq; *asynq.Inspector has it.
type Archive interface {
	ListArchivedTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
	Queues() ([]string, error)
}

// Reconciler copies archived tasks that are not yet in the durable record,
// and raises the archive-fill alert before asynq starts trimming.
type Reconciler struct {
	Store      *Store
	Archive    Archive
	Metrics    *Metrics
	Logger     *slog.Logger
	PageSize   int     // default 1000
	AlertRatio float64 // default 0.8 of ArchiveMax
}

// Result tells what one run did.
type Result struct {
	Scanned  int
	Recorded int
	Fill     map[string]float64
}

// Run makes one full pass over every queue's archive. It is the body of the
// dlq_reconcile cron job.
func (r *Reconciler) Run(ctx context.Context) error {
	_, err := r.Reconcile(ctx)
	return err
}

// Reconcile is Run returning what it did.
func (r *Reconciler) Reconcile(ctx context.Context) (Result, error) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	res := Result{Fill: map[string]float64{}}
	known, err := r.Archive.Queues()
	if err != nil {
		return res, fmt.Errorf("dlq: reconcile: list queues: %w", err)
	}
	exists := make(map[string]bool, len(known))
	for _, q := range known {
		exists[q] = true
	}
	for _, q := range r.Store.Queues() {
		if !exists[q] {
			continue // nothing was ever enqueued there
		}
		if err := r.reconcileQueue(ctx, q, log, &res); err != nil {
			return res, err
		}
	}
	if res.Recorded > 0 {
		log.Warn("dlq: reconciler recorded archived tasks the error handler never saw (crash-recovered or archived by hand)",
			"recorded", res.Recorded, "scanned", res.Scanned)
	}
	return res, ctx.Err()
}

// reconcileQueue measures one queue's archive fill and copies its archived
// tasks, page by page, adding to res.
func (r *Reconciler) reconcileQueue(ctx context.Context, q string, log *slog.Logger, res *Result) error {
	pageSize := r.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	alert := r.AlertRatio
	if alert <= 0 {
		alert = 0.8
	}
	info, err := r.Archive.GetQueueInfo(q)
	if err != nil {
		return fmt.Errorf("dlq: reconcile %s: queue info: %w", q, err)
	}
	fill := float64(info.Archived) / ArchiveMax
	res.Fill[q] = fill
	if r.Metrics != nil {
		r.Metrics.archiveFill.WithLabelValues(q).Set(fill)
	}
	if fill >= alert {
		log.Warn("dlq: asynq archive is filling up; asynq drops the oldest archived tasks past its bound (the durable record keeps them)",
			"alert", "dlq_archive_fill", "queue", q, "archived", info.Archived, "bound", ArchiveMax, "fill", fill)
	}
	for page := 1; ctx.Err() == nil; page++ {
		tasks, err := r.Archive.ListArchivedTasks(q, asynq.PageSize(pageSize), asynq.Page(page))
		if err != nil {
			return fmt.Errorf("dlq: reconcile %s: list archived: %w", q, err)
		}
		recs := make([]Record, 0, len(tasks))
		for _, t := range tasks {
			recs = append(recs, FromTaskInfo(t, SourceReconciler))
		}
		added, err := r.Store.RecordMany(ctx, recs)
		if err != nil {
			return err
		}
		res.Scanned += len(tasks)
		res.Recorded += added
		if r.Metrics != nil && added > 0 {
			r.Metrics.recorded.WithLabelValues(q, string(SourceReconciler)).Add(float64(added))
		}
		if len(tasks) < pageSize {
			break
		}
	}
	return nil
}

// FromTaskInfo converts an archived asynq task.
func FromTaskInfo(t *asynq.TaskInfo, src Source) Record {
	return Record{
		TaskID:   t.ID,
		Queue:    t.Queue,
		Type:     t.Type,
		Payload:  t.Payload,
		Error:    t.LastErr,
		Retried:  t.Retried,
		MaxRetry: t.MaxRetry,
		FailedAt: t.LastFailedAt.UTC(),
		Source:   src,
	}
}
