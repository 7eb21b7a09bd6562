package booking_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The chair's afternoon grid of 45-minute slots: S1 3:30, S2 4:15, S3 5:00.
const (
	s1 = "1/22/2026 3:30:00 PM"
	s2 = "1/22/2026 4:15:00 PM"
	s3 = "1/22/2026 5:00:00 PM"
)

func grid() []contracts.ApptSlot {
	out := []contracts.ApptSlot{}
	for _, st := range []string{s1, s2, s3} {
		sl := slot(st, "")
		sl.Minutes = "45"
		out = append(out, sl)
	}
	return out
}

// rawRequest books start on the grid's chair by raw fields, minutes as
// given (0: not sent).
func rawRequest(e *bt.Env, start string, minutes int) contracts.CreateApptRequest {
	req := request(e)
	req.StartTime, req.Minutes = start, contracts.FlexInt(minutes)
	return req
}

func holdOf(start string) booking.SlotHold {
	return booking.SlotHold{LocationGUID: booking.DefaultLocationGUID, StartTime: start, ScheduleColumnGUID: bt.Column}
}

// heldByBob is S2 held by another caller (a web hold or another call's
// reservation: both go through the one hold engine).
func heldByBob(t *testing.T, e *bt.Env) {
	t.Helper()
	h := holdOf(s2)
	h.SessionID = "bob-web-hold"
	require.NoError(t, e.Reservations.Reserve(ctx, h))
}

// refusedNotSent: SLOT_NOT_AVAILABLE with the "how about" guidance,
// nothing sent to Cloud9, nothing reserved on start, Bob's hold intact.
func refusedNotSent(t *testing.T, e *bt.Env, a booking.Answer, start string) {
	t.Helper()
	r := body[contracts.ApptFailedResponse](t, a)
	require.False(t, r.Success)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, r.Debug.ErrorType)
	require.Equal(t, contracts.SlotUnavailableVoice, r.LLMGuidance.VoiceResponse)
	require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), "nothing sent to Cloud9")
	st, _ := e.Reservations.State(holdOf(start))
	require.Empty(t, st, "nothing reserved")
	st, who := e.Reservations.State(holdOf(s2))
	require.Equal(t, "reserved", st)
	require.Equal(t, "bob-web-hold", who, "the hold on S2 is intact")
}

// Amy's raw 90 minutes from S1 would cover Bob's held S2.
func TestRawBookingLongerThanItsSlotIsRefused(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	refusedNotSent(t, e, e.Service(t).CreateAppt(ctx, rawRequest(e, s1, 90)), s1)
	// One minute over is over too.
	refusedNotSent(t, e, e.Service(t).CreateAppt(ctx, rawRequest(e, s1, 46)), s1)
}

// An off-grid start (4:00 PM, 45 min) would cover S2 as well.
func TestRawBookingOffTheGridIsRefused(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	refusedNotSent(t, e, e.Service(t).CreateAppt(ctx, rawRequest(e, "1/22/2026 4:00:00 PM", 45)), "1/22/2026 4:00:00 PM")
	// Another chair's slot at S1 is not this chair's.
	req := rawRequest(e, s1, 45)
	req.ScheduleColumnGUID = bt.GUID('E', 7)
	refusedNotSent(t, e, e.Service(t, func(c *booking.Config) { c.Chairs = []string{bt.Column, bt.GUID('E', 7)} }).CreateAppt(ctx, req), s1)
}

// The original's way: an offered slot by raw fields, minutes sent or not.
func TestRawBookingOfAnOfferedSlotBooks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		sent         int
		defMinutes   int
		sentToCloud9 int
	}{
		{"default minutes", 0, 0, 45},
		{"the slot's length", 45, 0, 45},
		{"shorter", 30, 0, 30},
		{"a default longer than the slot is cut to it", 0, 60, 45},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := bt.NewEnv()
			e.Slots.List = grid()
			heldByBob(t, e)
			s := e.Service(t, func(cfg *booking.Config) {
				if c.defMinutes > 0 {
					cfg.DefaultMinutes = c.defMinutes
				}
			})
			req := rawRequest(e, "01/22/2026 03:30 PM", c.sent) // another spelling of S1
			r := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
			require.True(t, r.Success)
			calls := e.Cloud9.Calls(cloud9.ProcSetAppointment)
			require.Len(t, calls, 1)
			require.Equal(t, c.sentToCloud9, calls[0].Args.(cloud9.AppointmentInput).Minutes)
		})
	}
}

// A slot the caller itself holds is offered to it; another caller's hold
// is SLOT_RESERVED, as before.
func TestRawBookingOfAHeldSlot(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	req := rawRequest(e, s1, 0)
	mine := holdOf(s1)
	mine.SessionID = req.SessionID
	require.NoError(t, e.Reservations.Reserve(ctx, mine))
	body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))

	heldByBob(t, e)
	body[contracts.ApptSlotReservedResponse](t, e.Service(t).CreateAppt(ctx, rawRequest(e, s2, 0)))
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
}

// The slot source failing refuses a raw-field booking (fail closed); the
// same request repeated after its booking (the slot has left the lists)
// is still answered from its mark.
func TestRawBookingUncheckedOrRepeated(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	s := e.Service(t)
	first := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, rawRequest(e, s1, 0)))

	e.Slots.List = grid()[1:] // S1 booked: no longer offered
	again := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, rawRequest(e, s1, 0)))
	require.Equal(t, first.AppointmentGUID, again.AppointmentGUID)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)

	e.Slots.Err = errors.New("cloud9 down")
	refusedNotSentAfter(t, e, s.CreateAppt(ctx, rawRequest(e, s3, 0)), 1)
}

func refusedNotSentAfter(t *testing.T, e *bt.Env, a booking.Answer, calls int) {
	t.Helper()
	r := body[contracts.ApptFailedResponse](t, a)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, r.Debug.ErrorType)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), calls)
}

// children[]: each raw child is checked as a single createAppt.
func TestRawBatchChildNotOffered(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), SessionID: "amy-call",
		Children: []contracts.BookingChild{
			{ChildName: "A", StartTime: s1, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, Minutes: 90},
			{ChildName: "B", StartTime: s3, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column}}}
	r := body[contracts.ApptBatchResponse](t, e.Service(t).CreateAppt(ctx, req))
	require.False(t, r.Results[0].Success)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, r.Results[0].ErrorType)
	require.True(t, r.Results[1].Success)
	calls := e.Cloud9.Calls(cloud9.ProcSetAppointment)
	require.Len(t, calls, 1)
	require.Equal(t, s3, calls[0].Args.(cloud9.AppointmentInput).StartTime)
}

func consultRequest(children ...contracts.ConsultationChild) contracts.BookConsultationRequest {
	return contracts.BookConsultationRequest{ParentFirstName: "Amy", ParentLastName: "Lee", ParentPhone: "4125550100",
		SessionID: "amy-call", Children: children}
}

func consultChild(first, start string, minutes int) contracts.ConsultationChild {
	return contracts.ConsultationChild{FirstName: first, LastName: "Lee", DOB: "01/15/2015", StartTime: start,
		ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: contracts.FlexInt(minutes)}
}

// bookConsultation: a child whose raw slot is not offered is answered
// SLOT_NOT_AVAILABLE with the slot-conflict advice — no hold, no patient,
// no appointment —; its sibling on an offered slot is booked.
func TestConsultationChildNotOffered(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	s := e.Service(t)
	a := s.BookConsultation(ctx, consultRequest(consultChild("Tom", s1, 90), consultChild("Sue", "1/22/2026 4:00:00 PM", 0),
		consultChild("Max", s3, 45)))
	r, ok := a.Body.(contracts.ConsultationResponse)
	require.Truef(t, ok, "answer is %T: %+v", a.Body, a.Body)
	require.Equal(t, contracts.ConsultPartial, a.Status)
	for _, i := range []int{0, 1} {
		c := r.Children[i]
		require.False(t, c.Success)
		require.Equal(t, contracts.BookingErrSlotNotAvailable, c.ErrorType)
		require.NotNil(t, c.LLMGuidance)
		require.Equal(t, contracts.ConsultActionFindOtherSlot, c.LLMGuidance.ActionRequired)
		require.Nil(t, c.PatientGUID, "no patient for a child that cannot be booked")
	}
	require.True(t, r.Children[2].Success)
	calls := e.Cloud9.Calls(cloud9.ProcSetAppointment)
	require.Len(t, calls, 1)
	require.Equal(t, s3, calls[0].Args.(cloud9.AppointmentInput).StartTime)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetPatient), 2, "the parent and Max")
	st, who := e.Reservations.State(holdOf(s2))
	require.Equal(t, "reserved", st)
	require.Equal(t, "bob-web-hold", who)
	st, _ = e.Reservations.State(holdOf(s1))
	require.Empty(t, st)

	// The same call repeated: Max is answered from the marks although S3
	// has left the lists.
	e.Slots.List = grid()[:2]
	a = s.BookConsultation(ctx, consultRequest(consultChild("Max", s3, 45)))
	require.Equal(t, contracts.ConsultAllBooked, a.Status)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
}

// Every child refused (or the slot source failing): nothing is sent, not
// even the parent.
func TestConsultationNothingOffered(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(*bt.Env){
		"not offered":         func(e *bt.Env) { e.Slots.List = grid() },
		"slot source failing": func(e *bt.Env) { e.Slots.Err = errors.New("cloud9 down") },
	} {
		t.Run(name, func(t *testing.T) {
			e := bt.NewEnv()
			setup(e)
			a := e.Service(t).BookConsultation(ctx, consultRequest(consultChild("Tom", s1, 90)))
			r, ok := a.Body.(contracts.ConsultationResponse)
			require.Truef(t, ok, "answer is %T: %+v", a.Body, a.Body)
			require.Equal(t, contracts.ConsultFailed, a.Status)
			require.Equal(t, contracts.BookingErrSlotNotAvailable, r.Children[0].ErrorType)
			require.Empty(t, e.Cloud9.Calls(""), "nothing sent to Cloud9")
		})
	}
}

// A bookingToken is an unsigned reference: minutes sent beside one (its
// own 0: a Cloud9 slot without a length), or a made-up token, are checked
// against the offered slot like raw fields — before, S1 with 90 minutes
// went to Cloud9 over Bob's hold.
func TestTokenBookingLongerThanItsSlotIsRefused(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()
	heldByBob(t, e)
	for _, mn := range []int{0, 90} {
		tok, err := bt.BookingTokens{}.Encode(booking.SlotRef{StartTime: s1, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
			AppointmentTypeGUID: bt.Type, Minutes: mn})
		require.NoError(t, err)
		req := request(e)
		req.StartTime, req.ScheduleColumnGUID, req.ScheduleViewGUID, req.AppointmentTypeGUID = "", "", "", ""
		req.BookingToken, req.Minutes = tok, 90
		refusedNotSent(t, e, e.Service(t).CreateAppt(ctx, req), s1)
	}
}

// A Done mark lets a repeat go on although its slot has left the lists —
// but not one asking for more than the standard length: a mark found
// stale (the appointment cancelled) has the request sent as it came, so
// S1 with 90 minutes reached Cloud9 over Bob's hold (a review's drill:
// book S1, cancel it, book it again for 90).
func TestMarkedRepeatLongerThanStandardIsRefused(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.List = grid()[1:] // S1 booked: left the lists
	heldByBob(t, e)
	req := rawRequest(e, s1, 90)
	key := booking.IdentityKey(req.PatientGUID, s1, bt.Column)
	got, _, err := e.Marks.Claim(ctx, key, booking.Lease{Owner: "earlier"}, time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	require.NoError(t, e.Marks.Done(ctx, key, "earlier", booking.DoneRecord{AppointmentGUID: "appt-s1"}))
	refusedNotSent(t, e, e.Service(t).CreateAppt(ctx, req), s1)
}

// A bookingToken's booking fails open when the offered slots cannot be
// read (a Redis outage), as its reservation then does: the token's slot
// was offered when it was made, and Cloud9 decides. A raw-field one is
// refused.
func TestTokenBookingFailsOpenWithoutTheSlotSource(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Slots.Err = errors.New("slot cache unreadable")
	tok, err := bt.BookingTokens{}.Encode(booking.SlotRef{StartTime: s1, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
		AppointmentTypeGUID: bt.Type, Minutes: 45})
	require.NoError(t, err)
	req := request(e)
	req.StartTime, req.ScheduleColumnGUID, req.ScheduleViewGUID, req.AppointmentTypeGUID = "", "", "", ""
	req.BookingToken = tok
	r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
	require.True(t, r.Success)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
}
