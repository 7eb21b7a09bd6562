package buffer

import (
	"context"
	"time"
)

// Alerter is told once per crossing of the DLQ alert threshold.
type Alerter interface {
	DLQAlert(ctx context.Context, count, threshold int64) error
}

// AlerterFunc adapts a function to Alerter.
type AlerterFunc func(ctx context.Context, count, threshold int64) error

// DLQAlert implements Alerter.
func (f AlerterFunc) DLQAlert(ctx context.Context, count, threshold int64) error {
	return f(ctx, count, threshold)
}

// DLQCount is the number of dead letters across the buffer's queues.
func (b *Buffer) DLQCount(ctx context.Context) (int64, error) {
	sizes, err := b.rt.DLQ.Size(ctx)
	if err != nil {
		return 0, persistence("buffer.DLQCount", err)
	}
	var n int64
	for _, v := range sizes {
		n += v
	}
	return n, nil
}

// afterDeadLetter runs the seed's checkAndAlert. The dead letter is written
// by the runtime's error handler after this handler returns, so the count
// includes it (+1).
func (b *Buffer) afterDeadLetter(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	n, err := b.DLQCount(ctx)
	if err != nil {
		b.log.Warn("buffer: DLQ count for the alert check failed", "err", err)
		return
	}
	b.checkAlert(ctx, n+1)
}

// checkAlert alerts once per crossing: a SET NX key marks "over" until the
// count drops below the threshold again, across instances.
func (b *Buffer) checkAlert(ctx context.Context, n int64) {
	th := b.cfg.DLQAlertThreshold
	k := alertKey(b.cfg.KeyPrefix)
	if n < th {
		b.cfg.Redis.Del(ctx, k)
		return
	}
	first, err := b.cfg.Redis.SetNX(ctx, k, n, 0).Result()
	if err != nil || !first {
		return
	}
	b.log.Error("buffer: dead-letter queue crossed its alert threshold", "count", n, "threshold", th)
	if b.cfg.Alerter != nil {
		if err := b.cfg.Alerter.DLQAlert(ctx, n, th); err != nil {
			b.log.Error("buffer: DLQ alert delivery failed", "err", err)
		}
	}
}
