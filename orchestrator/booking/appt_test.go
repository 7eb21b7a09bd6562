package booking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const start = "01/21/2026 10:00 AM"

var ctx = context.Background()

// request is a complete single booking for bt.Patient with a valid token.
func request(e *bt.Env) contracts.CreateApptRequest {
	return contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), StartTime: start,
		ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 45,
		ChildName: "Johnny Smith", Note: "Child: Johnny Smith | DOB: 01/15/2015 | Insurance: Aetna",
		UUI: "call-session-123", SessionID: "flowise-session-456"}
}

func hold(startTime, column string) booking.SlotHold {
	return booking.SlotHold{LocationGUID: booking.DefaultLocationGUID, StartTime: startTime, ScheduleColumnGUID: column}
}

func body[T any](t *testing.T, a booking.Answer) T {
	t.Helper()
	require.False(t, a.Failed, "answered 200 by bookinghttp")
	v, ok := a.Body.(T)
	require.Truef(t, ok, "answer is %T: %+v", a.Body, a.Body)
	return v
}

func TestBookedWithNote(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	r := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))

	require.True(t, r.Success)
	require.True(t, r.NoteAdded)
	require.Equal(t, "Appointment GUID Added: "+r.AppointmentGUID, r.Message)
	require.Equal(t, 1, r.Debug.Attempts)
	require.False(t, r.Debug.Retried)
	require.Equal(t, contracts.AuthMethodToken, r.Debug.AuthMethod)
	require.True(t, r.Debug.NoteResult.Success)
	require.Equal(t, contracts.StateConfirmation, r.LLMGuidance.CurrentState)
	require.Equal(t, "Your appointment is confirmed! Johnny, Wednesday 1/21/2026 at 10:00:00 AM.", r.LLMGuidance.VoiceResponse)

	calls := e.Cloud9.Calls(cloud9.ProcSetAppointment)
	require.Len(t, calls, 1)
	in := calls[0].Args.(cloud9.AppointmentInput)
	require.Equal(t, bt.Column, in.ScheduleColumnGUID, "the request's column is honoured (no Chair 8)")
	notes := e.Cloud9.Calls(cloud9.ProcSetPatientComment)
	require.Len(t, notes, 1)
	require.Equal(t, [2]string{bt.Patient, request(e).Note}, notes[0].Args)

	state, holder := e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state, "held 300 s after success")
	require.Equal(t, "flowise-session-456", holder)
	require.Equal(t, 1, e.Limiter.Calls(cloud9.ProcSetAppointment), "every call takes a limiter turn")
}

func TestAuthRejected(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	cases := map[string]struct {
		token   string
		guid    string
		correct string
	}{
		contracts.BookingAuthMissing:          {token: ""},
		contracts.BookingAuthMalformed:        {token: "not-a-token"},
		contracts.BookingAuthSignatureInvalid: {token: e.Tokens.Forge(bt.Patient)},
		contracts.BookingAuthExpired:          {token: e.Tokens.Expired(bt.Patient)},
		contracts.BookingAuthGUIDMismatch:     {token: e.Token(bt.Other), correct: bt.Other},
	}
	for code, c := range cases {
		t.Run(code, func(t *testing.T) {
			e := bt.NewEnv() // same secret and start time as the tokens above
			s := e.Service(t)
			req := request(e)
			req.BookingAuthToken, req.UUI = c.token, "" // no session cache to fall back on
			r := body[contracts.ApptAuthRejectedResponse](t, s.CreateAppt(ctx, req))
			require.False(t, r.Success)
			require.Equal(t, code, r.Debug.ErrorType)
			require.Equal(t, contracts.AuthMessage(code), r.Message)
			require.Equal(t, bt.Patient, r.Debug.ReceivedPatientGUID)
			require.Equal(t, c.correct, string(r.Debug.CorrectPatientGUID))
			require.Equal(t, "booking_auth_failed", r.LLMGuidance.ErrorType)
			require.Equal(t, "Let me verify your information.", r.LLMGuidance.VoiceResponse)
			require.Equal(t, "Call chord_ortho_patient action=create FIRST", r.LLMGuidance.Critical)
			require.Empty(t, e.Cloud9.Calls(""), "nothing reaches Cloud9")
			state, _ := e.Reservations.State(hold(start, bt.Column))
			require.Empty(t, state, "no slot is reserved before auth")
		})
	}
}

func TestAuthModes(t *testing.T) {
	t.Parallel()
	// A session entry without a token (say, cached by an older flow).
	put := func(e *bt.Env) {
		require.NoError(t, e.Sessions.Put(ctx, booking.Session{PatientGUID: bt.Patient, UUI: "call-1"}))
	}
	t.Run("session mode accepts a matching session", func(t *testing.T) {
		e := bt.NewEnv()
		put(e)
		req := request(e)
		req.BookingAuthToken = ""
		r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
		require.Equal(t, contracts.AuthMethodSessionMatch, r.Debug.AuthMethod)
	})
	t.Run("token mode refuses it", func(t *testing.T) {
		e := bt.NewEnv()
		put(e)
		req := request(e)
		req.BookingAuthToken = ""
		s := e.Service(t, func(c *booking.Config) { c.AuthMode = booking.AuthModeToken })
		r := body[contracts.ApptAuthRejectedResponse](t, s.CreateAppt(ctx, req))
		require.Equal(t, contracts.BookingAuthMissing, r.Debug.ErrorType)
	})
	t.Run("session mode refuses a bare GUID", func(t *testing.T) {
		e := bt.NewEnv()
		req := request(e)
		req.BookingAuthToken = ""
		r := body[contracts.ApptAuthRejectedResponse](t, e.Service(t).CreateAppt(ctx, req))
		require.Equal(t, contracts.BookingAuthMissing, r.Debug.ErrorType)
	})
	t.Run("legacy mode accepts a bare GUID, but never a bad token", func(t *testing.T) {
		e := bt.NewEnv()
		s := e.Service(t, func(c *booking.Config) { c.AuthMode = booking.AuthModeLegacy })
		req := request(e)
		req.BookingAuthToken = ""
		r := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
		require.Equal(t, contracts.AuthMethodLegacy, r.Debug.AuthMethod)
		req.BookingAuthToken, req.StartTime = e.Tokens.Forge(bt.Patient), "01/21/2026 11:00 AM"
		rej := body[contracts.ApptAuthRejectedResponse](t, s.CreateAppt(ctx, req))
		require.Equal(t, contracts.BookingAuthSignatureInvalid, rej.Debug.ErrorType)
	})
}

// docs/booking.md#createappt-step-by-step, step 1: the token and the patientGUID come from the session cache,
// by patientGUID first, then by uui.
func TestSessionAutoInjection(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	require.NoError(t, e.Sessions.Put(ctx, booking.Session{PatientGUID: bt.Patient, UUI: "call-session-123",
		BookingAuthToken: e.Token(bt.Patient)}))
	s := e.Service(t)

	req := request(e)
	req.PatientGUID, req.BookingAuthToken = "", "" // the LLM forgot both
	r := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, bt.Patient, r.Debug.RequestParams.PatientGUID)
	require.Equal(t, contracts.AuthMethodToken, r.Debug.AuthMethod)

	req = request(e)
	req.BookingAuthToken, req.UUI, req.StartTime = "", "", "01/21/2026 11:00 AM" // found by patientGUID
	r = body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, contracts.AuthMethodToken, r.Debug.AuthMethod)

	// A wrong GUID with the call's uui: the call's token is injected and the
	// answer names the right patient instead of sending the IVA to create one.
	req = request(e)
	req.PatientGUID, req.BookingAuthToken = bt.Other, ""
	rej := body[contracts.ApptAuthRejectedResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, contracts.BookingAuthGUIDMismatch, rej.Debug.ErrorType)
	require.Equal(t, bt.Patient, rej.LLMGuidance.CorrectPatientGUID)
}

func TestNoteFailureDoesNotFailTheBooking(t *testing.T) {
	t.Parallel()
	t.Run("refused note", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetPatientComment, bt.PatientMissing())
		r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.True(t, r.Success)
		require.False(t, r.NoteAdded)
		require.False(t, r.Debug.NoteResult.Success)
		require.False(t, r.Debug.NoteResult.Queued)
		require.Contains(t, r.Debug.NoteResult.Error, "PATIENT_NOT_FOUND")
		require.Empty(t, e.Queue.Notes)
	})
	t.Run("rate-limited note is queued", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetPatientComment, bt.RateLimited())
		r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.True(t, r.Success)
		require.False(t, r.NoteAdded)
		require.True(t, r.Debug.NoteResult.Queued)
		require.Len(t, e.Queue.Notes, 1)
		require.Equal(t, r.Debug.NoteResult.OperationID, e.Queue.Notes[0].OperationID)
		require.Equal(t, request(e).Note, e.Queue.Notes[0].Note)
	})
	t.Run("no note", func(t *testing.T) {
		e := bt.NewEnv()
		req := request(e)
		req.Note = ""
		r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
		require.False(t, r.NoteAdded)
		require.True(t, r.Debug.NoteResult.Skipped)
		require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetPatientComment))
	})
}

// A confirmed booking takes its slot out of the slot cache (SlotBooker),
// not by invalidating it: its token must still decode for the idempotent
// answer. Asked again, the same request is answered from the Done mark and
// the slot is handed over again (idempotent in the cache). A refused
// booking is not "booked".
func TestConfirmedBookingLeavesTheSlotCache(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	r := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))
	require.True(t, r.Success)
	ref := booking.SlotRef{StartTime: start, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
		AppointmentTypeGUID: bt.Type, Minutes: 45}
	require.Equal(t, []booking.SlotRef{ref}, e.Slots.Booking())
	require.Empty(t, e.Slots.Invalidated)
	again := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))
	require.Equal(t, r.AppointmentGUID, again.AppointmentGUID)
	require.Equal(t, []booking.SlotRef{ref, ref}, e.Slots.Booking())

	refused := bt.NewEnv()
	refused.Cloud9.Script(cloud9.ProcSetAppointment, bt.SlotTaken())
	body[contracts.ApptFailedResponse](t, refused.Service(t).CreateAppt(ctx, request(refused)))
	require.Empty(t, refused.Slots.Booking(), "a refused booking left the cache as booked")
	require.Len(t, refused.Slots.Invalidated, 1)
}

func TestUncertainOutcomeIsQueuedWithCheckFirst(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Committed{Err: bt.Timeout()})
	s := e.Service(t)
	r := body[contracts.ApptQueuedResponse](t, s.CreateAppt(ctx, request(e)))
	require.Equal(t, contracts.BookingErrTimeoutQueued, r.Debug.ErrorType)
	require.Equal(t, contracts.QueueReasonUncertain, r.Debug.QueueReason)
	require.Len(t, e.Queue.Appointments, 1)
	require.True(t, e.Queue.Appointments[0].CheckFirst)
	key := booking.IdentityKey(bt.Patient, start, bt.Column)
	inflight, _ := e.Marks.InFlight(ctx, key)
	require.True(t, inflight, "the in-flight mark stays")

	// The IVA asks again at once: the lease is kept a little after the
	// uncertain outcome (a late commit at Cloud9 may still land), so it is
	// queued too, with a check first — nothing is sent.
	soon := body[contracts.ApptQueuedResponse](t, s.CreateAppt(ctx, request(e)))
	require.Equal(t, contracts.QueueReasonInProgress, soon.Debug.QueueReason)
	require.True(t, e.Queue.Appointments[1].CheckFirst)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)

	// Later: the mark makes the service look first, and the appointment the
	// timed-out call made is found — not booked twice.
	e.Clock.Advance(booking.DefaultLeaseGrace)
	again := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))
	require.True(t, again.Debug.Recovered)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcGetAppointmentListByPatient), 1)
	require.Len(t, e.Cloud9.Appointments(bt.Patient), 1)
}

func TestRepeatAfterSuccessIsIdempotent(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	first := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))
	again := body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, request(e)))
	require.Equal(t, first.AppointmentGUID, again.AppointmentGUID)
	require.True(t, again.Debug.Recovered)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetPatientComment), 1, "the note is not added twice")
}

// docs/holds.md#the-hold-engine: a slot one session is booking is refused to another; the same
// session may ask again.
func TestReservationConflictBetweenSessions(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	require.NoError(t, e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID,
		StartTime: "1/21/2026 10:00:00 AM", ScheduleColumnGUID: bt.Column, SessionID: "session-A"}))
	s := e.Service(t)

	req := request(e)
	req.SessionID = "session-B"
	r := body[contracts.ApptSlotReservedResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, contracts.BookingErrSlotReserved, r.Debug.ErrorType)
	require.Equal(t, contracts.ActionOfferAlternativeSlot, r.LLMGuidance.ActionRequired)
	require.Empty(t, e.Cloud9.Calls(""))

	req.SessionID = "session-A"
	body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
}

func TestCloud9Refusals(t *testing.T) {
	t.Parallel()
	t.Run("slot taken", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetAppointment, bt.SlotTaken())
		r := body[contracts.ApptFailedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.Equal(t, contracts.BookingErrSlotNotAvailable, r.Debug.FlowgateErrorType, "the documented conflict text is classified")
		require.Equal(t, contracts.BookingErrCloud9, r.Debug.ErrorType, "the original's name for the text")
		require.Equal(t, contracts.ActionOfferAlternativeSlot, r.LLMGuidance.ActionRequired)
		require.Equal(t, "Error: This appointment cannot be scheduled in the specified time slot.", r.Message)
		state, _ := e.Reservations.State(hold(start, bt.Column))
		require.Empty(t, state, "released on failure")
		inflight, _ := e.Marks.InFlight(ctx, booking.IdentityKey(bt.Patient, start, bt.Column))
		require.False(t, inflight)
		require.Len(t, e.Slots.Invalidated, 1, "a slot Cloud9 refuses is no longer offered")
		require.Equal(t, start, e.Slots.Invalidated[0].StartTime)
	})
	t.Run("patient not found", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetAppointment, bt.PatientMissing())
		r := body[contracts.ApptFailedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.Equal(t, contracts.BookingErrPatientNotFound, r.Debug.ErrorType)
		require.Equal(t, contracts.ActionRecreatePatient, r.LLMGuidance.ActionRequired)
	})
	t.Run("queue down after an uncertain outcome", func(t *testing.T) {
		e := bt.NewEnv()
		e.Queue.Err = errors.New("redis down")
		e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Timeout())
		r := body[contracts.ApptFailedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.Equal(t, contracts.BookingErrTimeout, r.Debug.ErrorType)
		require.Equal(t, contracts.ActionTransferToAgent, r.LLMGuidance.ActionRequired)
		require.Equal(t, "could not queue the booking", r.Debug.ErrorMessage, "the Redis error stays in the log")
	})
}

// A definite Cloud9 error — an answer that is neither a rate limit nor a
// timeout — is answered in the call as the original answers it: the slot
// guidance for a slot Cloud9 refuses, CLOUD9_ERROR (or its class) with
// transfer_to_agent otherwise. Nothing is queued. Only outcomes that may
// have created the appointment (Cloud9's code 0, a timeout) and rate
// limits are queued.
func TestDefiniteCloud9ErrorsAnswerInCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, errType, action string
		err                   error
	}{
		// error_type is the original's name (CLOUD9_ERROR); flowgate's class,
		// which chose the slot guidance, is flowgate_error_type.
		{"slot cannot be scheduled", contracts.BookingErrCloud9, contracts.ActionOfferAlternativeSlot, bt.SlotTaken()},
		{"unknown view", contracts.BookingErrCloud9, contracts.ActionTransferToAgent,
			bt.ResultError(cloud9.ProcSetAppointment, "Error: Schedule View/Column GUID specified does not exist.")},
		{"in the past", contracts.BookingErrCloud9, contracts.ActionTransferToAgent,
			bt.ResultError(cloud9.ProcSetAppointment, "Error: Appointments cannot be scheduled in the past.")},
		{"minutes", contracts.BookingErrCloud9, contracts.ActionTransferToAgent,
			bt.ResultError(cloud9.ProcSetAppointment, "Error: Minutes must be greater than 0.")},
		{"invalid parameter (code 3)", contracts.BookingErrUnknown, contracts.ActionTransferToAgent,
			bt.StatusError(cloud9.ProcSetAppointment, 3, "Invalid value for parameter: 'StartTime'")},
		{"not authorized (code 6)", "AUTHORIZATION_ERROR", contracts.ActionTransferToAgent,
			bt.StatusError(cloud9.ProcSetAppointment, 6, "Not authorized to access client.")},
		// As the client reports an HTTP refusal without the envelope.
		{"HTTP 401", "AUTHORIZATION_ERROR", contracts.ActionTransferToAgent,
			&cloud9.Error{Procedure: cloud9.ProcSetAppointment, Kind: cloud9.KindTransport, Class: cloud9.ClassAuthorization,
				Code: -1, Message: "HTTP 401 without a GetDataResponse", Err: cloud9.ErrMalformed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := bt.NewEnv()
			e.Cloud9.Script(cloud9.ProcSetAppointment, c.err)
			r := body[contracts.ApptFailedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
			require.Equal(t, c.errType, r.Debug.ErrorType)
			var ce *cloud9.Error
			require.ErrorAs(t, c.err, &ce)
			require.Equal(t, string(ce.Class), r.Debug.FlowgateErrorType)
			require.Equal(t, c.action, r.LLMGuidance.ActionRequired)
			require.Equal(t, 1, r.Debug.Attempts)
			require.Empty(t, e.Queue.Appointments, "a definite refusal is not queued")
			require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
			state, _ := e.Reservations.State(hold(start, bt.Column))
			require.Empty(t, state, "the slot is released")
		})
	}
	for _, c := range []struct {
		name, queueType string
		err             error
	}{
		// Code 0 may have acted (the client marks it uncertain). Each queued
		// answer is labelled by its cause: only a timeout is TIMEOUT_QUEUED.
		{"unknown error (code 0)", contracts.BookingErrUncertainQueued, &cloud9.Error{Procedure: cloud9.ProcSetAppointment,
			Kind: cloud9.KindStatus, Class: cloud9.ClassCloud9, Code: 0, Message: "An unknown error occurred.", Uncertain: true}},
		{"unreadable answer (HTTP 502 page)", contracts.BookingErrUncertainQueued, &cloud9.Error{Procedure: cloud9.ProcSetAppointment,
			Kind: cloud9.KindTransport, Class: cloud9.ClassCloud9, Code: -1, Message: "HTTP 502 without a GetDataResponse",
			Uncertain: true, Err: cloud9.ErrMalformed}},
		{"timeout", contracts.BookingErrTimeoutQueued, bt.Timeout()},
		{"connection dropped after sending", contracts.BookingErrTimeoutQueued, &cloud9.Error{Procedure: cloud9.ProcSetAppointment,
			Kind: cloud9.KindTransport, Class: cloud9.ClassUnknown, Code: -1, Message: "connection reset by peer", Uncertain: true}},
		{"connection refused", contracts.BookingErrUnreachableQueued, bt.Unreachable()},
		{"rate limited twice", contracts.BookingErrRateLimitedQueued, bt.RateLimited()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := bt.NewEnv()
			e.Cloud9.Script(cloud9.ProcSetAppointment, c.err, c.err)
			r := body[contracts.ApptQueuedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
			require.Equal(t, c.queueType, r.Debug.ErrorType)
			require.Len(t, e.Queue.Appointments, 1)
		})
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	req := request(e)
	req.StartTime, req.ScheduleViewGUID, req.Minutes = "", "not-a-guid", -5
	r := body[contracts.ApptValidationResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, contracts.BookingErrValidation, r.Debug.ErrorType)
	require.Equal(t, []string{"startTime"}, r.Debug.MissingFields)
	require.Equal(t, []string{"minutes", "scheduleViewGUID"}, r.Debug.InvalidFields)
	require.Equal(t, false, r.Debug.ReceivedParams["hasBookingToken"])
	require.NotContains(t, r.Debug.ReceivedParams, "bookingAuthToken", "no secrets echoed")
	require.Equal(t, contracts.ActionTransferToAgent, r.LLMGuidance.ActionRequired)
	require.Empty(t, e.Cloud9.Calls(""))

	req = request(e)
	req.BookingToken = "%%%"
	r = body[contracts.ApptValidationResponse](t, s.CreateAppt(ctx, req))
	require.Equal(t, []string{"bookingToken"}, r.Debug.InvalidFields)

	r = body[contracts.ApptValidationResponse](t, s.MalformedAppt(contracts.Errorf(contracts.CodeInvalid, "malformed JSON")))
	require.Equal(t, []string{}, r.Debug.MissingFields)
	require.Equal(t, "malformed JSON", r.Debug.ErrorMessage)
}

// docs/booking.md#the-booking-calls: the bookingToken replaces startTime and the GUIDs, and wins
// over mistyped ones.
func TestBookingToken(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	tok, _ := bt.BookingTokens{}.Encode(booking.SlotRef{StartTime: "1/22/2026 9:10:00 AM", ScheduleViewGUID: bt.View,
		ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 40})
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), BookingToken: tok,
		ScheduleColumnGUID: "99999999-2222-4333-8444-555555555555", ChildName: "Jane"}
	r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
	in := e.Cloud9.Calls(cloud9.ProcSetAppointment)[0].Args.(cloud9.AppointmentInput)
	require.Equal(t, cloud9.AppointmentInput{PatientGUID: bt.Patient, StartTime: "1/22/2026 9:10:00 AM",
		ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 40}, in)
	require.Equal(t, "Your appointment is confirmed! Jane, Thursday 1/22/2026 at 9:10:00 AM.", r.LLMGuidance.VoiceResponse)
}

func TestDefaultsApply(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), StartTime: start}
	body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
	in := e.Cloud9.Calls(cloud9.ProcSetAppointment)[0].Args.(cloud9.AppointmentInput)
	require.Equal(t, booking.DefaultScheduleColumnGUID, in.ScheduleColumnGUID)
	require.Equal(t, booking.DefaultScheduleViewGUID, in.ScheduleViewGUID)
	require.Equal(t, booking.DefaultAppointmentTypeGUID, in.AppointmentTypeGUID)
	require.Equal(t, 45, in.Minutes)
}

func TestBatchWithOneChildQueued(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	// Child 1 books at once; child 2 is rate limited twice and queued.
	e.Cloud9.Script(cloud9.ProcSetAppointment, nil, bt.RateLimited(), bt.RateLimited())
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), UUI: "call-1",
		Children: []contracts.BookingChild{
			{ChildName: "Johnny Smith", StartTime: start, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, Note: "Child: Johnny"},
			{ChildName: "Jane Smith", StartTime: "01/21/2026 10:45 AM", ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column},
			{ChildName: "Jim Smith", ScheduleViewGUID: bt.View},
			{ChildName: "Stranger", PatientGUID: bt.Other, StartTime: "01/21/2026 1:00 PM"},
		}}
	r := body[contracts.ApptBatchResponse](t, e.Service(t).CreateAppt(ctx, req))
	require.Equal(t, 4, r.TotalChildren)
	require.Equal(t, 1, r.SuccessfulBookings)
	require.Equal(t, 1, r.QueuedBookings)
	require.Equal(t, 2, r.FailedBookings)
	require.False(t, r.Success)
	require.Equal(t, contracts.StatePartialSuccess, r.LLMGuidance.CurrentState)

	require.True(t, r.Results[0].Success)
	require.True(t, r.Results[0].NoteAdded)
	require.True(t, r.Results[1].Queued)
	require.Equal(t, e.Queue.Appointments[0].OperationID, r.Results[1].OperationID)
	require.Equal(t, "call-1", e.Queue.Appointments[0].UUI, "queue-status finds the call's operations by its uui")
	require.Empty(t, e.Queue.Appointments[0].CallSessionID, "no sessionId was sent")
	require.Equal(t, contracts.BookingErrValidation, r.Results[2].ErrorType)
	require.Equal(t, contracts.BookingAuthGUIDMismatch, r.Results[3].ErrorType, "children are checked against the token's patient")
	require.Equal(t, []string{"Johnny Smith"}, r.LLMGuidance.SuccessfulChildren)
	require.Equal(t, []string{"Jane Smith"}, r.LLMGuidance.QueuedChildren)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 3)
}

func TestBatchAuthRejected(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, Children: []contracts.BookingChild{{StartTime: start}}}
	r := body[contracts.ApptAuthRejectedResponse](t, e.Service(t).CreateAppt(ctx, req))
	require.Equal(t, contracts.BookingAuthMissing, r.Debug.ErrorType)
	require.Empty(t, e.Cloud9.Calls(""))
}

// The children share one sync budget: after a long limiter wait for the
// first, the second is queued at once instead of waiting again.
func TestBatchSharesTheSyncBudget(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Limiter.Script(cloud9.ProcSetAppointment, 8*time.Second, 0, 8*time.Second)
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), Children: []contracts.BookingChild{
		{ChildName: "A", StartTime: start}, {ChildName: "B", StartTime: "01/21/2026 10:45 AM"}}}
	r := body[contracts.ApptBatchResponse](t, e.Service(t).CreateAppt(ctx, req))
	require.True(t, r.Results[0].Success)
	require.True(t, r.Results[1].Queued)
	require.Equal(t, contracts.StateBookingQueued, r.LLMGuidance.CurrentState)
	require.Equal(t, []time.Duration{8 * time.Second}, e.Clock.Slept())
}
