package holds_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// On Redis Cluster every key carries the {holds} tag, so each script's keys
// lie in one hash slot (the cluster would refuse a cross-slot script).
func TestOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	b := setupOn(t, c.Client(), func(cfg *holds.Config) { cfg.HoldTTL = 200 * time.Millisecond; cfg.Now = time.Now })
	require.Equal(t, holds.ClusterTag, b.eng.Config().HashTag)
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	require.Equal(t, "hold", next(t, events).Type)
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, b.p+"{holds}:hold:"+typeA+":2025-03-15T09:00:00Z:"+specX).Val())
	_, err = b.eng.Claim(b.ctx, claimReq("b", specX, slot9))
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	_, ok, err := b.eng.Heartbeat(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "heartbeat", next(t, events).Type)
	active, err := b.eng.Active(b.ctx, typeA)
	require.NoError(t, err)
	require.Len(t, active, 1)
	_, err = b.eng.Confirm(b.ctx, "a", h.HoldID, "appt1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, "confirm", next(t, events).Type)
	ok, err = b.eng.ClearCooldown(b.ctx, "appt1")
	require.NoError(t, err)
	require.True(t, ok)

	h2, err := b.eng.Claim(b.ctx, claimReq("b", specX, slot9))
	require.NoError(t, err)
	require.Equal(t, "hold", next(t, events).Type)
	require.Eventually(t, func() bool { // the TTL runs out: Redis drops the key, the clock passes the expiry
		return time.Now().After(h2.HoldExpiresAt) && b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val() == 0
	}, 5*time.Second, 10*time.Millisecond)
	n, err := b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ev := next(t, events)
	require.Equal(t, "release", ev.Type)
	require.Equal(t, h2.HoldID, ev.HoldID)
	_, _, _, err = b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: claimReq("c", specY, slot9)})
	require.NoError(t, err)
	ok, err = b.eng.ReleaseSlot(b.ctx, typeA, specY, slot9)
	require.NoError(t, err)
	require.True(t, ok)
}
