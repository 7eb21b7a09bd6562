package buffer

import (
	"context"
	"fmt"
	"strconv"
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

// DLQCount is the number of dead letters across the buffer's queues (the
// records themselves, not the alert counter).
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

// afterDeadLetter is the seed's checkAndAlert for one new dead letter.
func (b *Buffer) afterDeadLetter(ctx context.Context) { b.dlqMoved(ctx, 1) }

// dlqMoved moves the alert counter by delta and alerts on a crossing, one
// script call (dlqCountScript): the count and the "already alerted" flag
// change together, so concurrent dead letters on several instances alert
// exactly once per crossing.
func (b *Buffer) dlqMoved(ctx context.Context, delta int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.dlqCount(ctx, strconv.FormatInt(delta, 10), ""); err != nil {
		b.log.Warn("buffer: DLQ alert check failed", "err", err)
	}
}

// resyncDLQ sets the alert counter to the records' count (at start and
// with every purge), healing what a crash or the reconciler changed.
func (b *Buffer) resyncDLQ(ctx context.Context) error {
	n, err := b.DLQCount(ctx)
	if err != nil {
		return err
	}
	return b.dlqCount(ctx, strconv.FormatInt(n, 10), "set")
}

func (b *Buffer) dlqCount(ctx context.Context, arg, mode string) error {
	th := b.cfg.DLQAlertThreshold
	res, err := dlqCountScript.Run(ctx, b.cfg.Redis, []string{b.keys(0).dlqCount(), b.keys(0).alert()}, arg, th, mode).Int64Slice()
	if err != nil || len(res) != 2 {
		return fmt.Errorf("buffer: DLQ counter: %w", err)
	}
	if res[0] != dlqCrossed {
		return nil
	}
	n := res[1]
	b.log.Error("buffer: dead-letter queue crossed its alert threshold", "count", n, "threshold", th)
	if b.cfg.Alerter != nil {
		if err := b.cfg.Alerter.DLQAlert(ctx, n, th); err != nil {
			b.log.Error("buffer: DLQ alert delivery failed", "err", err)
		}
	}
	return nil
}
