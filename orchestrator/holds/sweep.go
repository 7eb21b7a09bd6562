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
// "release" event, so no board keeps a ghost hold (seed 002 publishes
// nothing on expiry). A confirmed IVA hold (a booked slot kept from being
// re-offered) expires silently. It handles at most Config.SweepMax holds
// and returns how many it announced.
//
// It is meant to run once per tick across all instances: the sidecar
// registers it as the scheduler job "holds_expiry" ("@every 1s" by
// default), so an expired hold reaches streams within about a second.
// Keyspace notifications were not used: they need a server setting
// (notify-keyspace-events) and are fire-and-forget, so an instance down at
// the moment of expiry would lose the event; the index is also what Active
// and the quota read.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	const op = "holds.Sweep"
	now := e.cfg.Now()
	ids, err := e.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: e.k.expiry(), Start: "-inf",
		Stop: strconv.FormatInt(now.UnixMilli(), 10), ByScore: true, Count: int64(e.cfg.SweepMax)}).Result()
	if err != nil {
		return 0, unavailable(op, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	raws, err := e.rdb.HMGet(ctx, e.k.records(), ids...).Result()
	if err != nil {
		return 0, unavailable(op, err)
	}
	n := 0
	for i, raw := range raws {
		released, err := e.sweepOne(ctx, ids[i], raw, now)
		if err != nil {
			return n, unavailable(op, err)
		}
		if released {
			n++
		}
	}
	return n, nil
}

func (e *Engine) sweepOne(ctx context.Context, id string, raw any, now time.Time) (bool, error) {
	s, _ := raw.(string)
	var r record
	if s == "" || json.Unmarshal([]byte(s), &r) != nil {
		// no record (released meanwhile) or unreadable: drop the index entry
		return false, e.rdb.ZRem(ctx, e.k.expiry(), id).Err()
	}
	keys := []string{r.SlotKey, e.k.client(r.Hold.ClientID), e.k.records(), e.k.expiry(), e.k.active(r.Hold.AppointmentTypeID)}
	n, err := sweepScript.Run(ctx, e.hot, keys, id, now.UnixMilli(), e.k.channel(r.Hold.AppointmentTypeID),
		event(EventRelease, r.Hold)).Int()
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
