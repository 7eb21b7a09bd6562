package reservation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

// A Cloud9 wall clock in the spring-forward gap (02:30 on 2026-03-08 in
// America/Chicago) maps to the instant the availability face gives it
// (slots.WallInstant), so both faces claim one slot key.
func TestSpringForwardSlotMatchesTheAvailabilityFace(t *testing.T) {
	t.Parallel()
	chicago, err := time.LoadLocation("America/Chicago")
	require.NoError(t, err)
	ctx := context.Background()
	eng, err := holds.New(redistest.New(t).Client, holds.Config{KeyPrefix: fmt.Sprintf("wall%d:", time.Now().UnixNano())})
	require.NoError(t, err)
	st, err := reservation.New(nil, reservation.Config{Engine: eng, Location: chicago, AppointmentTypeID: "type-a"})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/8/2026 2:30:00 AM", ScheduleColumnGUID: "col-1", LocationGUID: "loc-1", Minutes: 30}
	_, err = st.Reserve(ctx, s, "sess-1", "P")
	require.NoError(t, err)

	web := slots.WallInstant(chicago, time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), 2*60+30)
	require.Equal(t, time.Date(2026, 3, 8, 8, 0, 0, 0, time.UTC), web.UTC())
	h, _, found, err := eng.HolderOf(ctx, "col-1", web)
	require.NoError(t, err)
	require.True(t, found, "the IVA reservation is on the availability face's slot key")
	require.True(t, web.Equal(h.SlotStartDate), "%s vs %s", web, h.SlotStartDate)
	_, err = eng.Claim(ctx, holds.ClaimRequest{AppointmentTypeID: "type-a", ClientID: "web-1", SpecialistID: "col-1",
		SlotStart: web, SlotEnd: web.Add(30 * time.Minute)})
	require.ErrorIs(t, err, holds.ErrSlotTaken, "a web hold on the same slot is refused")
}
