package holds_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// TestSweepKeepsAHoldInItsLastMillisecond: a key in its last millisecond
// still exists while PTTL answers 0 (Redis rounds down and expires a key
// only once its time has passed; the embedded store, moved on by ticks,
// keeps one so for up to a tick). The sweep must treat such a hold as
// live and come back for it — dropping it silently left a ghost hold on
// every board (CI, TestEmbeddedExpiry: no release event).
func TestSweepKeepsAHoldInItsLastMillisecond(t *testing.T) {
	t.Parallel()
	mini := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := setupOn(t, rdb, func(c *holds.Config) { c.HoldTTL = 2 * time.Second })
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	next(t, events)

	mini.FastForward(2*time.Second - 500*time.Microsecond)
	b.clock.Advance(2 * time.Second)
	pttl, err := rdb.PTTL(b.ctx, b.eng.SlotKey(specX, slot9)).Result()
	require.NoError(t, err)
	require.Zero(t, pttl, "the slot key's last millisecond: PTTL 0, the key still there")
	n, err := b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a key still there is a live hold")

	mini.FastForward(time.Millisecond)
	b.clock.Advance(time.Second)
	n, err = b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "announced on the next sweep, not dropped")
	ev := next(t, events)
	require.Equal(t, holds.EventRelease, ev.Type)
	require.Equal(t, h.HoldID, ev.HoldID)
	require.Empty(t, b.snapshot(t), "indexes cleaned")
}
