package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// A session's keys share one hash tag: Put's MULTI and Lookup's pipeline
// work on Redis Cluster.
func TestOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	clk := clocktest.New(t0)
	cache, err := session.New(c.Client(), session.Config{KeyPrefix: "test", Now: clk.Now})
	require.NoError(t, err)
	ctx := context.Background()
	stored, err := cache.Put(ctx, parent())
	require.NoError(t, err)
	for _, q := range [][2]string{{guid, ""}, {"", "call-session-123"}, {guid2, "call-session-123"}} {
		got, found, err := cache.Lookup(ctx, q[0], q[1])
		require.NoError(t, err)
		require.True(t, found, q)
		require.Equal(t, stored, got)
	}
	got, found, err := cache.LookupPhone(ctx, "412 555 0100")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, stored, got)
}
