package tasks

import (
	"context"
	"time"
)

// OldestActivity is the last activity (claim, heartbeat or any update) of
// the PROCESSING task that has been silent longest, from the active index;
// ok is false when no task is PROCESSING. Every shard is read. The heartbeat monitor puts a task
// silent past its threshold back to PENDING, so an old one here means the
// sweeps are not keeping up or not running.
func (l *Ledger) OldestActivity(ctx context.Context) (at time.Time, ok bool, err error) {
	for _, k := range l.ks {
		zs, err := l.rdb.ZRangeWithScores(ctx, k.active(), 0, 0).Result()
		if err != nil {
			return time.Time{}, false, storeError("tasks.OldestActivity", err)
		}
		if len(zs) > 0 && (!ok || int64(zs[0].Score) < at.UnixMilli()) {
			at, ok = time.UnixMilli(int64(zs[0].Score)), true
		}
	}
	return at, ok, nil
}
