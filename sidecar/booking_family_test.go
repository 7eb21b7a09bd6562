package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/redistest"
)

// cancelAppt's hold release goes to the engine: whatever holds the freed
// chair at that instant is released, whichever appointment type it was
// taken for, and the cooldown the appointment's booking set is cleared.
func TestSlotHoldsReleaseAndCooldown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := redistest.New(t)
	eng, err := holds.New(db.Client, holds.Config{})
	require.NoError(t, err)
	h := slotHolds{e: eng}
	const col = "07687884-7e37-49aa-8028-d43b751c9034"
	at := time.Date(2026, 1, 20, 15, 0, 0, 0, time.UTC)
	claim := func(client string, start time.Time) holds.Hold {
		hold, err := eng.Claim(ctx, holds.ClaimRequest{AppointmentTypeID: "web-type", ClientID: client, SpecialistID: col,
			SlotStart: start, SlotEnd: start.Add(45 * time.Minute)})
		require.NoError(t, err)
		return hold
	}
	claim("web-a", at)

	ok, err := h.ReleaseSlot(ctx, "cloud9-type", col, at.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, ok, "another slot's hold is not touched")
	ok, err = h.ReleaseSlot(ctx, "cloud9-type", col, at)
	require.NoError(t, err)
	require.True(t, ok, "a hold of another appointment type on the freed chair is released")
	_, _, found, err := eng.HolderOf(ctx, col, at)
	require.NoError(t, err)
	require.False(t, found)
	ok, err = h.ReleaseSlot(ctx, "cloud9-type", col, at)
	require.NoError(t, err)
	require.False(t, ok, "nothing left to release")

	booked := claim("web-b", at)
	_, err = eng.Confirm(ctx, "web-b", booked.HoldID, "appt-1", time.Hour)
	require.NoError(t, err)
	left, err := eng.CooldownRemaining(ctx, "web-b", "web-type")
	require.NoError(t, err)
	require.Positive(t, left)
	cleared, err := h.ClearCooldown(ctx, "appt-1")
	require.NoError(t, err)
	require.True(t, cleared)
	left, err = eng.CooldownRemaining(ctx, "web-b", "web-type")
	require.NoError(t, err)
	require.Zero(t, left)
	cleared, err = h.ClearCooldown(ctx, "appt-1")
	require.NoError(t, err)
	require.False(t, cleared)
}
