package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// shardsKey records the REDIS_SHARDS that a Redis's data is written with.
// Keys written under one shard count are not read under another (each
// count has its own hash tags, docs/scale-out.md), so a flowgate started
// with another count would not see the tasks, holds and messages already
// there: it must not start.
const shardsKey = "flowgate:redis-shards"

// oneShardKeys are keys only a flowgate with one shard writes, and that a
// Redis holding such data has (once a task, an enqueue or a hold was
// made): the data of a deployment from before shardsKey existed.
func oneShardKeys(cluster bool) []string {
	holdsRecords := "holds:records"
	if cluster {
		holdsRecords = holds.ClusterTag + ":holds:records"
	}
	return []string{"flowgate:{tasks}:seq", "flowgate:buffer:{buffer}:depth", holdsRecords}
}

// checkShardLayout refuses (a *ConfigError on REDIS_SHARDS) a shard count
// other than the one the data in rdb was written with, and records n the
// first time. Data from before the record has one shard. Two instances
// starting at once with different counts: one records its count, the
// other is refused.
func checkShardLayout(ctx context.Context, rdb redis.UniversalClient, n int) error {
	was, evidence, err := writtenShards(ctx, rdb, n)
	if err != nil {
		return err
	}
	switch {
	case was == strconv.Itoa(n) && evidence == shardsKey:
		return nil
	case was != "" && was != strconv.Itoa(n):
		return shardsMismatch(n, was, evidence)
	}
	set, err := rdb.SetNX(ctx, shardsKey, strconv.Itoa(n), 0).Result()
	if err != nil {
		return fmt.Errorf("recording %s: %w", shardsKey, err)
	}
	if set {
		return nil
	}
	return checkShardLayout(ctx, rdb, n) // recorded meanwhile by another instance: compare with it
}

// writtenShards is the shard count rdb's data was written with and where
// that shows ("" when it holds nothing of flowgate's yet): the record, or,
// for a count n above one, the keys of one shard's data from before it.
func writtenShards(ctx context.Context, rdb redis.UniversalClient, n int) (was, evidence string, err error) {
	v, err := rdb.Get(ctx, shardsKey).Result()
	switch {
	case err == nil:
		return v, shardsKey, nil
	case !errors.Is(err, redis.Nil):
		return "", "", fmt.Errorf("reading %s: %w", shardsKey, err)
	case n == 1:
		return "", "", nil
	}
	_, cluster := rdb.(*redis.ClusterClient)
	for _, k := range oneShardKeys(cluster) {
		found, err := rdb.Exists(ctx, k).Result()
		if err != nil {
			return "", "", fmt.Errorf("reading %s: %w", k, err)
		}
		if found == 1 {
			return "1", k, nil
		}
	}
	return "", "", nil
}

func shardsMismatch(n int, was, evidence string) error {
	return &ConfigError{Var: "REDIS_SHARDS", Err: fmt.Errorf(
		"is %d, but this Redis holds data written with REDIS_SHARDS=%s (%s): flowgate would not see its tasks, holds "+
			"and messages; keep REDIS_SHARDS=%s, or drain them first and delete %s (docs/scale-out.md)",
		n, was, evidence, was, shardsKey)}
}
