package holds

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sweep announces expired holds: every hold in the expiry index whose time
// is up and whose slot key is really gone gets its indexes cleaned and a
// "release" event, so no board keeps a ghost hold (the original web holds
// published nothing on expiry; docs/differences.md). A confirmed IVA hold (a booked slot kept from being
// re-offered) expires silently. It handles at most Config.SweepMax holds
// and returns how many it announced.
//
// It is meant to run once per tick across all instances: the sidecar
// registers it as the scheduler job "holds_expiry" (HOLDS_EXPIRY_SCHEDULE,
// docs/configuration.md), so an expired hold reaches streams within about a
// tick.
// Keyspace notifications were not used: they need a server setting
// (notify-keyspace-events) and are fire-and-forget, so an instance down at
// the moment of expiry would lose the event; the index is also what Active
// and the quota read.
//
// With several shards it visits each shard once, starting with a different
// one each call, within one budget of Config.SweepMax.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	const op = "holds.Sweep"
	now := e.cfg.Now()
	n, budget := 0, e.cfg.SweepMax
	for _, i := range e.rot.Order(e.r.set.N()) {
		if budget <= 0 {
			break
		}
		got, seen, err := e.sweepShard(ctx, e.r.ks[i], now, budget)
		n += got
		budget -= seen
		if err != nil {
			return n, unavailable(op, err)
		}
	}
	return n, nil
}

// sweepShard sweeps one shard's expiry index: the holds announced and
// the index entries looked at.
func (e *Engine) sweepShard(ctx context.Context, k keys, now time.Time, limit int) (int, int, error) {
	ids, err := e.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: k.expiry(), Start: "-inf",
		Stop: strconv.FormatInt(now.UnixMilli(), 10), ByScore: true, Count: int64(limit)}).Result()
	if err != nil || len(ids) == 0 {
		return 0, 0, err
	}
	raws, err := e.rdb.HMGet(ctx, k.records(), ids...).Result()
	if err != nil {
		return 0, len(ids), err
	}
	n := 0
	for i, raw := range raws {
		released, err := e.sweepOne(ctx, k, ids[i], raw, now)
		if err != nil {
			return n, len(ids), err
		}
		if released {
			n++
		}
	}
	return n, len(ids), nil
}

func (e *Engine) sweepOne(ctx context.Context, k keys, id string, raw any, now time.Time) (bool, error) {
	s, _ := raw.(string)
	var r record
	if s == "" || json.Unmarshal([]byte(s), &r) != nil {
		// no record (released meanwhile) or unreadable: drop the index entry
		return false, e.rdb.ZRem(ctx, k.expiry(), id).Err()
	}
	client, split := e.clientKey(k, r.Hold.ClientID)
	keys := []string{r.SlotKey, client, k.records(), k.expiry(), k.active(r.Hold.AppointmentTypeID)}
	n, err := lua.sweep.Run(ctx, e.hot, keys, id, now.UnixMilli(), e.channel(r.Hold.AppointmentTypeID),
		event(EventRelease, r.Hold)).Int()
	if err == nil && split && n != sweepLive { // split.go: the hold first, then its quota entry
		e.unindex(ctx, r.Hold.ClientID, id)
	}
	return n == sweepAnnounced, err
}

// Job is Sweep as a scheduler job (scheduler.JobFunc's signature).
func (e *Engine) Job(ctx context.Context) error {
	n, err := e.Sweep(ctx)
	if n > 0 {
		e.cfg.Logger.Debug("holds: expired holds released", "count", n)
	}
	return err
}
