package reservation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// On Redis Cluster the engine's keys carry the {holds} tag, so each script
// (canonical slot key, SlotReservation key, indexes) runs in one hash slot;
// a web claim on the same engine is refused for a reserved slot.
func TestOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	b := setupOn(t, c.Client())
	var list []slots.Slot
	for i := range 60 {
		list = append(list, slot(slots.FormatTime(time.Date(2026, 3, 11, 7, 0, 0, 0, time.UTC).Add(time.Duration(i)*5*time.Minute))))
	}
	for i := 0; i < len(list); i += 3 {
		res, err := b.st.Reserve(b.ctx, list[i], sessA, "A")
		require.NoError(t, err)
		require.Equal(t, reservation.Reserved, res.Outcome)
	}
	_, err := b.st.Reserve(b.ctx, list[0], sessB, "B")
	requireHeld(t, err)
	// the web face on the same engine: refused for list[0] (7:00 CDT = 12:00 UTC), free for list[1]
	web := holds.ClaimRequest{AppointmentTypeID: "t1", ClientID: "web", SpecialistID: chair8,
		SlotStart: time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC), SlotEnd: time.Date(2026, 3, 11, 12, 45, 0, 0, time.UTC)}
	_, err = b.st.Engine().Claim(b.ctx, web)
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	web.SlotStart, web.SlotEnd = web.SlotStart.Add(5*time.Minute), web.SlotEnd.Add(5*time.Minute)
	_, err = b.st.Engine().Claim(b.ctx, web)
	require.NoError(t, err)
	_, err = b.st.Reserve(b.ctx, list[1], sessB, "B")
	requireHeld(t, err)

	out, err := b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Len(t, out, 39, "A's 20 and the web hold")
	out, err = b.st.Filter(b.ctx, list, sessA)
	require.NoError(t, err)
	require.Len(t, out, 59, "all but the web hold")

	_, err = b.st.Confirm(b.ctx, list[0], sessA, "A")
	require.NoError(t, err)
	ok, err := b.st.Release(b.ctx, list[3], sessA)
	require.NoError(t, err)
	require.True(t, ok)
	out, err = b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Len(t, out, 40)
}
