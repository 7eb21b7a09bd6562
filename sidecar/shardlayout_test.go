package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// A Redis remembers the REDIS_SHARDS its data was written with, and a
// flowgate with another count is refused before it could hide that data.
func TestShardLayoutIsRecordedAndEnforced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := redistest.New(t)
	require.NoError(t, checkShardLayout(ctx, db.Client, 6), "an empty Redis takes any count")
	require.Equal(t, "6", db.Client.Get(ctx, shardsKey).Val())
	require.NoError(t, checkShardLayout(ctx, db.Client, 6), "the same count again")
	requireShardsRefused(t, checkShardLayout(ctx, db.Client, 1), "REDIS_SHARDS=6")
	requireShardsRefused(t, checkShardLayout(ctx, db.Client, 3), "REDIS_SHARDS=6")
}

// Data from before the record is one shard's: a count above one is refused
// on it, one is recorded.
func TestShardLayoutOfOlderData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, key := range oneShardKeys(false) {
		db := redistest.New(t)
		require.NoError(t, db.Client.Set(ctx, key, "1", 0).Err())
		requireShardsRefused(t, checkShardLayout(ctx, db.Client, 6), key)
		require.Zero(t, db.Client.Exists(ctx, shardsKey).Val(), "nothing recorded on a refusal")
		require.NoError(t, checkShardLayout(ctx, db.Client, 1))
		require.Equal(t, "1", db.Client.Get(ctx, shardsKey).Val())
	}
}

// On Redis Cluster the hold engine's keys carry its tag, and the record is
// one key like any other.
func TestShardLayoutOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := rediscluster.Start(t)
	require.NoError(t, c.Client().HSet(ctx, oneShardKeys(true)[2], "h1", "{}").Err())
	requireShardsRefused(t, checkShardLayout(ctx, c.Client(), 6), "{holds}:holds:records")
	require.NoError(t, checkShardLayout(ctx, c.Client(), 1))
	requireShardsRefused(t, checkShardLayout(ctx, c.Client(), 6), "REDIS_SHARDS=1")
}

func requireShardsRefused(t *testing.T, err error, mention string) {
	t.Helper()
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "want a ConfigError, got %v", err)
	require.Equal(t, "REDIS_SHARDS", ce.Var)
	require.Contains(t, ce.Error(), mention)
}
