package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

// Until the holds engine is merged, cancelAppt's hold release is the
// seed-003 reservation: the slot's holder, whoever it is, is released, at
// the practice-zone instant the engine's signature carries.
func TestReservationHoldsReleaseSlot(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	st, err := reservation.New(db.Client, reservation.Config{Prefix: "t"})
	require.NoError(t, err)
	const loc, col = "1fef9297-7c8b-426b-b0d1-f2275136e48b", "07687884-7e37-49aa-8028-d43b751c9034"
	slot := slots.Slot{StartTime: "1/20/2026 10:00:00 AM", ScheduleColumnGUID: col, LocationGUID: loc}
	_, err = st.Reserve(context.Background(), slot, "session-a", "Mary Smith")
	require.NoError(t, err)

	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	h := reservationHolds{st: st, location: loc, zone: ny}
	at := time.Date(2026, 1, 20, 15, 0, 0, 0, time.UTC) // 10:00 in New York
	ok, err := h.ReleaseSlot(context.Background(), "type", col, at.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, ok, "another slot's hold is not touched")
	ok, err = h.ReleaseSlot(context.Background(), "type", col, at)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, found, err := st.Get(context.Background(), slot)
	require.NoError(t, err)
	require.False(t, found)
	ok, err = h.ReleaseSlot(context.Background(), "type", col, at)
	require.NoError(t, err)
	require.False(t, ok, "nothing left to release")
	cleared, err := h.ClearCooldown(context.Background(), "appt")
	require.NoError(t, err)
	require.False(t, cleared)
}
