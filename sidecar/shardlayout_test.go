package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/shard"
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

// The record missing (deleted by hand: the operation endpoints refuse
// to), the data itself shows its layout: a start with a count that would
// not see it is refused, whichever count it was and whichever subsystem
// holds the data; the count it was written with starts and is recorded.
func TestShardLayoutWithoutTheRecordLooksAtTheData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, key := range map[string]func(tag string) string{
		"tasks":  func(tag string) string { return "flowgate:" + tag + ":seq" },
		"buffer": func(tag string) string { return "flowgate:buffer:" + tag + ":depth" },
		"holds":  func(tag string) string { return tag + ":holds:records" },
	} {
		db := redistest.New(t)
		require.NoError(t, checkShardLayout(ctx, db.Client, 6))
		for _, tag := range shard.Must(name, 6).Tags() {
			require.NoError(t, db.Client.Set(ctx, key(tag), "1", 0).Err())
		}
		require.NoError(t, db.Client.Del(ctx, shardsKey).Err(), "the record lost")
		for _, n := range []int{1, 2, 3, 12} {
			err := checkShardLayout(ctx, db.Client, n)
			requireShardsRefused(t, err, "REDIS_SHARDS=6")
			require.Contains(t, err.Error(), shardsKey+" is missing", name)
			require.Contains(t, err.Error(), "{"+name+":", name)
			require.Zero(t, db.Client.Exists(ctx, shardsKey).Val(), "nothing recorded on a refusal")
		}
		require.NoError(t, checkShardLayout(ctx, db.Client, 6), name)
		require.Equal(t, "6", db.Client.Get(ctx, shardsKey).Val())
	}
}

// One shard's keys on a single Redis, without the record, refuse a count
// above one and are what one shard reads; a key that only looks like a
// layout's (another program's, a tag flowgate never makes) is no layout.
func TestShardLayoutProbesReadOnlyFlowgatesTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := redistest.New(t)
	for _, k := range []string{"myapp:holds:records", "flowgate:{tasks}x:seq", "flowgate:{tasks}:{x}:seq", "flowgate:buffer:{bufferz}"} {
		require.NoError(t, db.Client.Set(ctx, k, "1", 0).Err())
	}
	require.NoError(t, checkShardLayout(ctx, db.Client, 6), "none of those is flowgate's data")
	require.NoError(t, db.Client.Del(ctx, shardsKey).Err())
	require.NoError(t, db.Client.Set(ctx, "flowgate:{tasks:0.99999}:seq", "1", 0).Err())
	requireShardsRefused(t, checkShardLayout(ctx, db.Client, 6), "another REDIS_SHARDS (flowgate:{tasks:0.99999}:seq)")
	require.NoError(t, db.Client.Set(ctx, "flowgate:{tasks}:seq", "1", 0).Err())
	requireShardsRefused(t, checkShardLayout(ctx, db.Client, 6), "REDIS_SHARDS=1 (flowgate:{tasks}:seq and 1 more)")
}

// layoutOf names the count whose tags include every tag found: data in
// shards 0..5 of six is six's, though shard 3's tag is also one of five's.
func TestLayoutOf(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3, 6, 16} {
		require.Equal(t, n, layoutOf("buffer", shard.Must("buffer", n).Tags()))
	}
	require.Equal(t, 1, layoutOf("holds", []string{""}))
	require.Equal(t, 1, layoutOf("holds", []string{"{holds}"}))
	require.Equal(t, 6, layoutOf("tasks", []string{shard.Must("tasks", 6).Tag(5), "{tasks}"}), "several counts: the first tag's")
	require.Equal(t, 1, layoutOf("tasks", []string{"{tasks:x}", "{tasks}"}), "a tag flowgate never makes is no count")
	require.Zero(t, layoutOf("tasks", []string{"{tasks:x}"}))
}

func requireShardsRefused(t *testing.T, err error, mention string) {
	t.Helper()
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "want a ConfigError, got %v", err)
	require.Equal(t, "REDIS_SHARDS", ce.Var)
	require.Contains(t, ce.Error(), mention)
}

// A Redis that lost flowgate's data while it ran (restarted without
// persistence; here FLUSHDB) is found by the redis_data_check job: one
// error line and one count, the marker recorded again, nothing more on
// the next run; a Redis that kept its data logs nothing. The job runs
// in the started binary's cron.
func TestRedisDataLossIsReported(t *testing.T) {
	ctx := context.Background()
	db := redistest.New(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	w, err := newDataWatch(db.Client, 2, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	require.NoError(t, err)
	require.NoError(t, checkShardLayout(ctx, db.Client, 2))
	require.NoError(t, w.Run(ctx))
	require.Empty(t, logs.String(), "the data is there")

	require.NoError(t, db.Client.FlushDB(ctx).Err())
	require.NoError(t, w.Run(ctx))
	require.Contains(t, logs.String(), `level=ERROR msg="REDIS LOST FLOWGATE'S DATA while it ran`)
	require.Equal(t, "2", db.Client.Get(ctx, shardsKey).Val(), "recorded again")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP flowgate_redis_data_lost_total Times this instance found that Redis had lost flowgate's data while it ran (its shard-layout marker gone).
# TYPE flowgate_redis_data_lost_total counter
flowgate_redis_data_lost_total 1
`)))
	logs.Reset()
	require.NoError(t, w.Run(ctx))
	require.Empty(t, logs.String(), "reported once")

	// The started binary runs it in its cron.
	db2 := redistest.New(t)
	var mlogs bytes.Buffer
	m, _ := startMainLogging(t, redisEnv(db2), slog.New(slog.NewTextHandler(&lockedWriter{w: &mlogs}, nil)))
	require.NoError(t, db2.Client.FlushDB(ctx).Err())
	ran, err := m.sched.RunNow(ctx, "redis_data_check", time.Time{})
	require.NoError(t, err)
	require.True(t, ran)
	require.Contains(t, mlogs.String(), "REDIS LOST FLOWGATE'S DATA")
}
