package buffer

import (
	"context"

	"github.com/flowgate/flowgate/contracts"
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
		n, err := b.purgeIDs(ctx, expired)
		purged += n
		if err != nil {
			return purged, err
		}
	}
	if purged > 0 {
		b.log.Info("buffer: purged expired dead letters", "count", purged, "older_than", cutoff)
	}
	return purged, nil
}

// purgeIDs deletes the dead letters ids. One that vanished meanwhile (a
// replay, a delete, another instance's purge) is skipped, not an error.
func (b *Buffer) purgeIDs(ctx context.Context, ids []string) (int, error) {
	purged := 0
	for _, id := range ids {
		err := b.DeleteDLQ(ctx, id)
		switch {
		case err == nil:
			purged++
		case contracts.ErrorCode(err) == contracts.CodeNotFound:
			continue
		default:
			return purged, err
		}
	}
	return purged, nil
}

// Run implements scheduler.Job with PurgeExpired.
func (p purgeJob) Run(ctx context.Context) error {
	if _, err := p.b.PurgeExpired(ctx); err != nil {
		return err
	}
	return p.b.resyncDLQ(ctx)
}

type purgeJob struct{ b *Buffer }

// Purger is the buffer_dlq_purge job.
func (b *Buffer) Purger() interface{ Run(context.Context) error } { return purgeJob{b} }
