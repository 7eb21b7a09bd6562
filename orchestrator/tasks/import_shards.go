package tasks

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// locatedText is the reason of an import refused by a locator.
const locatedText = "queue_id is held by a task of another encounter (or a create of one under way); import again later if that create failed"

// runSharded imports batch, grouped by home shard.
//
// On a sharded ledger an import writes each task to its home shard, one
// script call per shard of a batch. A queue_id whose task already lives in
// another shard (another encounter) is a conflict, as it is on one shard;
// a task whose home is not the shard of its id gets its locator first
// (claimLocator), as a create's does.
func (im *Importer) runSharded(ctx context.Context, op string, now time.Time, batch []importItem) ([]ImportResult, error) {
	out := make([]ImportResult, len(batch))
	groups := map[int][]importItem{}
	at := map[int][]int{}
	for i, it := range batch {
		done, err := im.placeElsewhere(ctx, op, now, it)
		if err != nil {
			return nil, err
		}
		if done != nil {
			out[i] = *done
			continue
		}
		h := im.l.home(it.ID, it.Enc)
		groups[h] = append(groups[h], it)
		at[h] = append(at[h], i)
	}
	shards := make([]int, 0, len(groups))
	for sh := range groups {
		shards = append(shards, sh)
	}
	slices.Sort(shards) // a dry run's tracking sees the same order every time
	for _, sh := range shards {
		res, err := im.runIn(ctx, op, sh, now, groups[sh])
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			if r.Outcome == ImportConflict && r.Reason == locatedText {
				// A stale locator is cleared so that the next import succeeds.
				if err := im.l.clearLocated(ctx, op, r.QueueID, now); storeFailed(err) {
					return nil, err
				}
			}
			out[at[sh][j]] = r
		}
	}
	return out, nil
}

// placeElsewhere answers, for a task whose queue_id names a task in a shard
// other than its home, the conflict (nil when there is none); for a task
// whose home is not the shard of its id it claims the locator (not in a dry
// run).
func (im *Importer) placeElsewhere(ctx context.Context, op string, now time.Time, it importItem) (*ImportResult, error) {
	l, h := im.l, im.l.home(it.ID, it.Enc)
	var stored map[string]string
	err := l.lookup(ctx, op, it.ID, "", func(sh int) (bool, error) {
		if sh == h {
			return false, nil
		}
		f, err := l.rdb.HGetAll(ctx, l.ks[sh].task(it.ID)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, storeError(op, err)
		}
		if len(f) > 0 {
			stored = f
		}
		return len(f) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	if stored != nil {
		reason := "not_imported"
		if stored["ifp"] != "" {
			reason = "different_content"
		}
		return &ImportResult{QueueID: it.ID, From: it.res.From, Status: contracts.Status(stored["status"]),
			Outcome: ImportConflict, Reason: importConflictText(reason, "")}, nil
	}
	if im.dry || h == l.set.Of(it.ID) {
		return nil, nil
	}
	if err := l.claimLocator(ctx, op, it.ID, h, now); err != nil {
		var e *contracts.Error
		if errors.As(err, &e) && e.Code == contracts.CodeConflict {
			return &ImportResult{QueueID: it.ID, From: it.res.From, Status: contracts.Status(str(e.Details["current_status"])),
				Outcome: ImportConflict, Reason: locatedText}, nil
		}
		return nil, err
	}
	return nil, nil
}

// storeFailed reports whether err is a failure of the store (not a
// conflict).
func storeFailed(err error) bool {
	var e *contracts.Error
	return err != nil && (!errors.As(err, &e) || e.Code != contracts.CodeConflict)
}
