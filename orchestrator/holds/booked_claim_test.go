package holds_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/redistest"
)

// A web booking's slot claim embeds the hold it came from: the engine's
// other scripts must not take it for that hold.

// beforeScript runs once, on the first EVALSHA/EVAL whose arguments
// contain marker, before it is sent (PlainRedis: one command per script).
type beforeScript struct {
	marker string
	run    func()
	once   sync.Once
}

func (*beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && strings.Contains(s, h.marker) {
					h.once.Do(h.run)
					break
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (*beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A heartbeat that read the hold's record just before a concurrent
// confirm booked it (a retried /book: each heartbeats first) must not turn
// the booking back into a hold: the booked slot claim stays, no record,
// no index, no heartbeat event. Before, the heartbeat script found the
// booked claim (it embeds the hold) and re-set the slot key to a 30 s
// hold, whose expiry then freed a booked slot.
func TestHeartbeatRacingConfirmLeavesTheBooking(t *testing.T) {
	t.Parallel()
	rdb := redistest.New(t).Client
	b := setupOn(t, rdb, func(c *holds.Config) { c.PlainRedis = true })
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	confirmer := setupOn(t, rdb, func(c *holds.Config) { c.KeyPrefix, c.Now = b.p, b.clock.Now })
	hook := &beforeScript{marker: `"type":"heartbeat"`, run: func() {
		_, err := confirmer.eng.Confirm(b.ctx, "a", h.HoldID, "appt1", time.Hour)
		require.NoError(t, err)
	}}
	rdb.AddHook(hook)
	_, ok, err := b.eng.Heartbeat(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "the hold was booked under the heartbeat")
	id, err := b.eng.BookedAppointment(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.Equal(t, "appt1", id, "the slot key is still the booking's claim")
	_, ttl, found, err := b.eng.HolderOf(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, slot9.Add(30*time.Minute).Sub(t0), ttl.Round(time.Second), "kept until the slot ends, not a hold's 30 s")
	active, err := b.eng.Active(b.ctx, h.AppointmentTypeID)
	require.NoError(t, err)
	require.Empty(t, active, "no hold came back")
}

// A client that booked a slot on the web face and claims it again (a type
// without cooldown) is refused (taken by its booking), not answered with
// its booking as a hold it already has.
func TestClaimOfOwnBookedSlotIsTaken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := claimReq("a", specX, slot9)
	req.Cooldown = -1
	h, err := b.eng.Claim(b.ctx, req)
	require.NoError(t, err)
	_, err = b.eng.Confirm(b.ctx, "a", h.HoldID, "appt1", 0)
	require.NoError(t, err)
	_, err = b.eng.Claim(b.ctx, req)
	require.ErrorIs(t, err, holds.ErrSlotTaken)
}
