package bookingsvc_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingsvc"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingsvc/bookingsvctest"
)

func slot(startTime, endTime string) contracts.ApptSlot {
	return contracts.ApptSlot{StartTime: startTime, EndTime: endTime, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
		ScheduleColumnDescription: "Chair 3", AppointmentTypeGUID: bt.Type, Minutes: "40", LocationGUID: bookingsvc.DefaultLocationGUID}
}

// Slots of 1/22: 9:00, 9:40 and 10:20 chain within 40 minutes; 13:00 does not.
func daySlots() []contracts.ApptSlot {
	return []contracts.ApptSlot{
		slot("1/22/2026 1:00:00 PM", "1/22/2026 1:40:00 PM"),
		slot("1/22/2026 9:00:00 AM", "1/22/2026 9:40:00 AM"),
		slot("1/22/2026 9:40:00 AM", "1/22/2026 10:20:00 AM"),
		slot("1/22/2026 10:20:00 AM", "1/22/2026 11:00:00 AM"),
	}
}

func TestGetApptSlots(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = daySlots()
	// Another session is booking 9:40.
	require.NoError(t, e.Reservations.Reserve(ctx, bookingsvc.SlotHold{LocationGUID: bookingsvc.DefaultLocationGUID,
		StartTime: "1/22/2026 9:40:00 AM", ScheduleColumnGUID: bt.Column, SessionID: "other"}))
	s := e.Service(t)
	r := body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{StartDate: "01/01/2020", SessionID: "me"}))
	require.Equal(t, 3, r.Count)
	for _, sl := range r.Slots {
		require.NotEqual(t, "1/22/2026 9:40:00 AM", sl.StartTime, "held by another session")
		ref, err := bt.BookingTokens{}.Decode(ctx, sl.BookingToken)
		require.NoError(t, err)
		require.Equal(t, sl.StartTime, ref.StartTime)
		require.Equal(t, 40, ref.Minutes)
	}
	require.Len(t, r.VoiceSlots, 3)
	require.Equal(t, "01/21/2026", e.Slots.Queries[0].StartDate, "a past startDate becomes tomorrow")
	require.Equal(t, contracts.ActionOfferTime, r.LLMGuidance.ActionRequired)

	// The session holding 9:40 still sees it.
	mine := body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{SessionID: "other"}))
	require.Equal(t, 4, mine.Count)

	e.Reservations.Err = errors.New("redis down")
	failOpen := body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{SessionID: "me"}))
	require.Equal(t, 4, failOpen.Count, "reservation filtering fails open")
}

func TestGetApptSlotsNoneOrError(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	r := body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{}))
	require.Equal(t, 0, r.Count)
	require.Equal(t, []contracts.ApptSlot{}, r.Slots)
	require.Equal(t, contracts.TransferNoSlots, r.LLMGuidance.TransferReason)

	e.Slots.Err = bt.Timeout()
	r = body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{}))
	require.Equal(t, contracts.TransferTimeout, r.LLMGuidance.TransferReason)
}

func TestGetGroupedApptSlots(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = daySlots()
	s := e.Service(t)

	r := body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 3}))
	require.Equal(t, contracts.BookingModeConsecutive, r.BookingMode)
	require.Equal(t, 1, r.TotalGroups)
	require.Equal(t, []string{"9:00 AM", "9:40 AM", "10:20 AM"}, r.Groups[0].Times)
	require.Len(t, r.LLMGuidance.BookingPlan, 3)
	require.NotEmpty(t, r.LLMGuidance.BookingPlan[0].BookingToken)
	require.Equal(t, "1/22/2026 9:00:00 AM", r.Slots[0].StartTime, "sorted")

	// 9:40 held elsewhere: no three in a row; individual times are offered.
	require.NoError(t, e.Reservations.Reserve(ctx, bookingsvc.SlotHold{LocationGUID: bookingsvc.DefaultLocationGUID,
		StartTime: "1/22/2026 9:40:00 AM", ScheduleColumnGUID: bt.Column, SessionID: "other"}))
	r = body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 3}))
	require.Equal(t, contracts.BookingModeIndividual, r.BookingMode)
	require.Equal(t, 0, r.TotalGroups)
	require.Equal(t, contracts.ActionOfferSeparateTimes, r.LLMGuidance.ActionRequired)

	r = body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 5}))
	require.Equal(t, contracts.BookingModeNone, r.BookingMode)
	require.Equal(t, contracts.ActionExpandOrTransfer, r.LLMGuidance.ActionRequired)

	e.Slots.Err = errors.New("cloud9 down")
	a := s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{})
	require.False(t, a.Failed, "answered 200 with the transfer guidance, as the original (never a bare 500)")
	er := a.Body.(contracts.GroupedSlotsResponse)
	require.True(t, er.Error)
	require.Equal(t, contracts.ActionTransferToAgent, er.LLMGuidance.ActionRequired)
}
