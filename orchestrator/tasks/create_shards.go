package tasks

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// createSharded creates items, grouped by home shard: a create on a
// sharded ledger (Config.Shards > 1) runs one create script per home shard
// of its tasks. Each is atomic, as a create on one shard;
// the batch as a whole is all or nothing only as far as a read-only
// pre-check can make it: before anything is written, every involved shard
// is read for a queue_id that would be refused (queue_id_reused). A
// conflict that appears between that check and the writes (a concurrent
// create of the same queue_id for another encounter) fails the batch with
// the tasks of the shards before it created; sending the batch again is
// idempotent (those answer Duplicate).
func (l *Ledger) createSharded(ctx context.Context, op string, now time.Time, items []newTask) ([]contracts.CreateResult, error) {
	groups := map[int][]newTask{}
	at := map[int][]int{}
	for i, it := range items {
		h := l.home(it.id, it.encounter)
		groups[h] = append(groups[h], it)
		at[h] = append(at[h], i)
	}
	shards := make([]int, 0, len(groups))
	for sh := range groups {
		shards = append(shards, sh)
	}
	slices.Sort(shards)
	if len(shards) > 1 {
		if err := l.precheckCreate(ctx, op, now, items); err != nil {
			return nil, err
		}
	}
	claimed := map[string]bool{}
	for _, it := range items {
		if h := l.home(it.id, it.encounter); h != l.set.Of(it.id) && !claimed[it.id] {
			if err := l.claimLocator(ctx, op, it.id, h, now); err != nil {
				return nil, err
			}
			claimed[it.id] = true
		}
	}
	out := make([]contracts.CreateResult, len(items))
	for _, sh := range shards {
		res, err := l.createIn(ctx, op, now, sh, groups[sh])
		if err != nil {
			return nil, err
		}
		for i, r := range res {
			out[at[sh][i]] = r
		}
	}
	return out, nil
}

// createIn runs the create script for chunk in shard sh; a stale locator
// in the way is cleared and the script run again.
func (l *Ledger) createIn(ctx context.Context, op string, now time.Time, sh int, chunk []newTask) ([]contracts.CreateResult, error) {
	for try := 0; ; try++ {
		out, err := l.createChunks(ctx, op, now, sh, [][]newTask{chunk})
		var located *errLocated
		if !errors.As(err, &located) {
			if err != nil {
				return nil, err
			}
			return out[0], nil
		}
		if try == 2 {
			return nil, reusedConflict(op, located.id, string(contracts.StatusPending))
		}
		if err := l.clearLocated(ctx, op, located.id, now); err != nil {
			return nil, err
		}
	}
}

// precheckCreate reads, in one pipeline, what the create scripts will
// check: a stored task of each queue_id in its home shard (another
// encounter or payload: queue_id_reused), in the shard of its id when that
// is not the home (a task of another home), and its locator (pointing to
// another home whose task exists or may be under way). It writes nothing.
func (l *Ledger) precheckCreate(ctx context.Context, op string, now time.Time, items []newTask) error {
	pipe := l.rdb.Pipeline()
	cur := make([]*redis.SliceCmd, len(items))
	byID := make([]*redis.StringCmd, len(items))
	locs := make([]*redis.StringCmd, len(items))
	for i, it := range items {
		h, own := l.home(it.id, it.encounter), l.set.Of(it.id)
		cur[i] = pipe.HMGet(ctx, l.ks[h].task(it.id), "status", "encounter_id", "fp")
		if h != own {
			byID[i] = pipe.HGet(ctx, l.ks[own].task(it.id), "status")
		}
		locs[i] = pipe.Get(ctx, l.ks[own].locator(it.id))
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		for _, c := range cmds { // a missing key is redis.Nil; any other error fails the check
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return storeError(op, err)
			}
		}
	}
	for i, it := range items {
		v := cur[i].Val()
		if st, ok := v[0].(string); ok && (str(v[1]) != it.encounter || str(v[2]) != it.fp) {
			return reusedConflict(op, it.id, st)
		}
		if byID[i] != nil && byID[i].Val() != "" {
			return reusedConflict(op, it.id, byID[i].Val())
		}
		raw := locs[i].Val()
		if loc, ok := l.parseLocator(raw); ok && loc.home != l.home(it.id, it.encounter) {
			if err := l.replaceable(ctx, op, it.id, raw, now); err != nil {
				return err
			}
		}
	}
	return nil
}
