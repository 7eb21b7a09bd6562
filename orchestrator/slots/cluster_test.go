package slots_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Every key of the cache shares the {slots} hash tag, so its scripts run
// on Redis Cluster.
func TestCacheOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	now := time.Date(2026, 1, 19, 12, 0, 0, 0, time.UTC)
	cache, err := slots.NewCache(c.Client(), slots.CacheConfig{KeyPrefix: "test", Now: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, cache.Put(ctx, tier1, janList))
	require.NoError(t, cache.Put(ctx, tier2, janList))
	n, err := cache.Invalidate(ctx, janList[0])
	require.NoError(t, err)
	require.Equal(t, 2, n)
	ok, err := cache.Contains(ctx, janList[1].TokenSlot())
	require.NoError(t, err)
	require.True(t, ok)
	e, found, err := cache.Get(ctx, tier1)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, e.Slots, 2)
	deleted, err := cache.Delete(ctx, tier2)
	require.NoError(t, err)
	require.True(t, deleted)
}
