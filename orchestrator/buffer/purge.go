package buffer

import (
	"context"
)

// PurgeExpired deletes the dead letters that failed longer than
// FailedRetention ago (seed: a failed message expires 7 d after it
// failed): the record, the archived task, its errors and its idempotency
// key. It reads each queue's record in pages (one ZREVRANGE + HMGET each);
// the dead-letter queue is small by design (it alerts at
// BUFFER_DLQ_ALERT_THRESHOLD). It is the body of the buffer_dlq_purge cron
// job.
func (b *Buffer) PurgeExpired(ctx context.Context) (int, error) {
	cutoff := b.cfg.Now().Add(-b.cfg.FailedRetention)
	purged := 0
	for _, q := range queueNames {
		var expired []string
		for off := int64(0); ; off += 500 {
			recs, err := b.rt.DLQ.List(ctx, q, off, 500)
			if err != nil {
				return purged, persistence("buffer.PurgeExpired", err)
			}
			for _, r := range recs {
				if r.FailedAt.Before(cutoff) {
					expired = append(expired, r.TaskID)
				}
			}
			if len(recs) < 500 {
				break
			}
		}
		for _, id := range expired {
			if err := b.DeleteDLQ(ctx, id); err != nil {
				return purged, err
			}
			purged++
		}
	}
	if purged > 0 {
		b.log.Info("buffer: purged expired dead letters", "count", purged, "older_than", cutoff)
	}
	return purged, nil
}

// Run implements scheduler.Job with PurgeExpired.
func (p purgeJob) Run(ctx context.Context) error {
	_, err := p.b.PurgeExpired(ctx)
	return err
}

type purgeJob struct{ b *Buffer }

// Purger is the buffer_dlq_purge job.
func (b *Buffer) Purger() interface{ Run(context.Context) error } { return purgeJob{b} }
