package booking_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
)

func slot(startTime, endTime string) contracts.ApptSlot {
	return contracts.ApptSlot{StartTime: startTime, EndTime: endTime, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
		ScheduleColumnDescription: "Chair 3", AppointmentTypeGUID: bt.Type, Minutes: "40", LocationGUID: booking.DefaultLocationGUID}
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
	require.NoError(t, e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID,
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
	require.Equal(t, contracts.TransferNoSlotsFound, r.LLMGuidance.TransferReason, "no retry made: not \"after retries\"")

	e.Slots.Retries = 7 // the original's 4 × 2 tries
	r = body[contracts.GetApptSlotsResponse](t, s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{}))
	require.Equal(t, contracts.TransferNoSlots, r.LLMGuidance.TransferReason)
	require.Equal(t, 7, r.Retries)

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
	require.NoError(t, e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID,
		StartTime: "1/22/2026 9:40:00 AM", ScheduleColumnGUID: bt.Column, SessionID: "other"}))
	r = body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 3}))
	require.Equal(t, contracts.BookingModeIndividual, r.BookingMode)
	require.Equal(t, 0, r.TotalGroups)
	require.Equal(t, contracts.ActionOfferSeparateTimes, r.LLMGuidance.ActionRequired)

	r = body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 5}))
	require.Equal(t, contracts.BookingModeNone, r.BookingMode)
	require.Equal(t, contracts.ActionExpandOrTransfer, r.LLMGuidance.ActionRequired)
	// No slots: the original's grouped transfer, its sentence and list.
	require.Equal(t, contracts.TransferNowVoice, r.LLMGuidance.VoiceResponse)
	require.Equal(t, contracts.SlotsTransferProhibited(), r.LLMGuidance.ProhibitedResponses)
	require.Equal(t, "PARENT_AS_PATIENT_V63", r.LLMGuidance.Model)
	require.Empty(t, r.SearchRange.EndDate, "no endDate asked: null, as the original")

	e.Slots.Err = errors.New("cloud9 down")
	a := s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{})
	require.True(t, a.Failed, "answered 500 with the transfer guidance, as the original (nodered-endpoints §1.5)")
	er := a.Body.(contracts.GroupedSlotsResponse)
	require.True(t, er.Error)
	require.Equal(t, contracts.ActionTransferToAgent, er.LLMGuidance.ActionRequired)
	require.Equal(t, contracts.TransferNowVoice, er.LLMGuidance.VoiceResponse)
}

// getApptSlots asks for startDate and the 30 days after it whatever
// endDate says (the original's query: docs/reference/nodered-endpoints.md §1.4), and "tomorrow" —
// a missing or past startDate — is the day after today in the practice's
// zone: at 20:00 in New York (01:00 UTC the next day) New York's tomorrow
// is not skipped.
func TestGetApptSlotsSpanAndTomorrowInPracticeZone(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	e := bt.NewEnv()
	e.Clock.Advance(9*time.Hour + 30*time.Minute) // 2026-01-21 01:00 UTC = 20 Jan 20:00 New York
	s := e.Service(t, func(c *booking.Config) { c.PracticeZone = ny })
	utc := e.Service(t) // the default zone, UTC: already the 21st

	last := func() booking.SlotQuery { return e.Slots.Queries[len(e.Slots.Queries)-1] }
	for _, c := range []struct {
		name       string
		svc        *booking.Service
		req        contracts.GetApptSlotsRequest
		start, end string
	}{
		{"no startDate: New York's tomorrow", s, contracts.GetApptSlotsRequest{}, "01/21/2026", "02/20/2026"},
		{"no startDate in UTC", utc, contracts.GetApptSlotsRequest{}, "01/22/2026", "02/21/2026"},
		{"endDate ignored", s, contracts.GetApptSlotsRequest{StartDate: "01/26/2026", EndDate: "01/28/2026"}, "01/26/2026", "02/25/2026"},
		{"endDate beyond 30 days ignored", s, contracts.GetApptSlotsRequest{StartDate: "2026-01-26", EndDate: "2026-04-30"}, "01/26/2026", "02/25/2026"},
		{"New York's tomorrow is not past", s, contracts.GetApptSlotsRequest{StartDate: "01/21/2026", EndDate: "01/21/2026"}, "01/21/2026", "02/20/2026"},
		{"New York's today is past", s, contracts.GetApptSlotsRequest{StartDate: "01/20/2026"}, "01/21/2026", "02/20/2026"},
	} {
		_ = body[contracts.GetApptSlotsResponse](t, c.svc.GetApptSlots(ctx, c.req))
		require.Equal(t, c.start, last().StartDate, c.name)
		require.Equal(t, c.end, last().EndDate, c.name)
	}

	// getGroupedApptSlots keeps its endDate; its tomorrow is New York's too.
	_ = body[contracts.GroupedSlotsResponse](t, s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{EndDate: "01/23/2026"}))
	require.Equal(t, booking.SlotQuery{StartDate: "01/21/2026", EndDate: "01/23/2026"}, last())
}
