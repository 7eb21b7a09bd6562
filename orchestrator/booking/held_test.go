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

// heldBooking is the web face's booking of bt.Column at start, its hold
// adopted as the reservation of session "web-h1".
func heldBooking() booking.HeldBooking {
	return booking.HeldBooking{SessionID: "web-h1", Appointment: booking.Appointment{PatientGUID: bt.Patient,
		StartTime: start, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 45}}
}

func heldCode(t *testing.T, err error) (contracts.Code, map[string]any) {
	t.Helper()
	var ce *contracts.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	return ce.Code, ce.Details
}

// A held booking goes through the booking core: one limiter turn, one
// SetAppointment, the reservation (the session's own) kept 300 s, the
// slot dropped from the cache; asked again it is answered from the Done
// mark without a second SetAppointment.
func TestBookHeldBooksOnce(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	require.NoError(t, e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID,
		StartTime: start, ScheduleColumnGUID: bt.Column, SessionID: "web-h1"}), "the adopted web hold")
	o, err := s.BookHeld(ctx, heldBooking())
	require.NoError(t, err)
	require.NotEmpty(t, o.AppointmentGUID)
	require.False(t, o.Queued())
	require.Equal(t, 1, o.Attempts)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Equal(t, 1, e.Limiter.Calls(cloud9.ProcSetAppointment))
	require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetPatientComment), "no note")
	state, holder := e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state)
	require.Equal(t, "web-h1", holder)
	require.Len(t, e.Slots.Booking(), 1, "the booked slot leaves the cache")

	again, err := s.BookHeld(ctx, heldBooking())
	require.NoError(t, err)
	require.Equal(t, o.AppointmentGUID, again.AppointmentGUID)
	require.True(t, again.Recovered)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1, "one appointment")
}

// No limiter turn within the sync budget: the booking is queued (durable
// task carrying the reservation's session) and the reservation kept.
func TestBookHeldQueuesWhenTheBudgetRunsOut(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Limiter.Script(cloud9.ProcSetAppointment, 11*time.Second)
	o, err := e.Service(t).BookHeld(ctx, heldBooking())
	require.NoError(t, err)
	require.True(t, o.Queued())
	require.Equal(t, contracts.QueueReasonLimiterWait, o.QueueReason)
	require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetAppointment))
	require.Len(t, e.Queue.Appointments, 1)
	task := e.Queue.Appointments[0]
	require.Equal(t, o.OperationID, task.OperationID)
	require.Equal(t, "web-h1", task.SessionID, "the worker keeps the same reservation")
	state, _ := e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state, "held while queued")
}

// Refusals are flowgate errors with the createAppt error type: a taken
// slot 409 (the reservation released), an unknown patient 404, a booking
// that cannot be named 400, another holder 409; nothing is queued.
func TestBookHeldRefusals(t *testing.T) {
	t.Parallel()
	t.Run("slot not available", func(t *testing.T) {
		t.Parallel()
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetAppointment, bt.SlotTaken())
		_, err := e.Service(t).BookHeld(ctx, heldBooking())
		code, d := heldCode(t, err)
		require.Equal(t, contracts.CodeConflict, code)
		require.Equal(t, contracts.BookingErrSlotNotAvailable, d["errorType"])
		require.Equal(t, "slot_taken", d["reason"])
		state, _ := e.Reservations.State(hold(start, bt.Column))
		require.Empty(t, state, "released")
		require.Empty(t, e.Queue.Appointments)
	})
	t.Run("patient unknown", func(t *testing.T) {
		t.Parallel()
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetAppointment, bt.PatientMissing())
		_, err := e.Service(t).BookHeld(ctx, heldBooking())
		code, d := heldCode(t, err)
		require.Equal(t, contracts.CodeNotFound, code)
		require.Equal(t, "patientGUID", d["field"])
	})
	t.Run("not a GUID", func(t *testing.T) {
		t.Parallel()
		e := bt.NewEnv()
		hb := heldBooking()
		hb.PatientGUID = "not-a-guid"
		_, err := e.Service(t).BookHeld(ctx, hb)
		code, d := heldCode(t, err)
		require.Equal(t, contracts.CodeInvalid, code)
		require.Equal(t, "patientGUID", d["field"])
		require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetAppointment))
	})
	t.Run("held by another session", func(t *testing.T) {
		t.Parallel()
		e := bt.NewEnv()
		require.NoError(t, e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID,
			StartTime: start, ScheduleColumnGUID: bt.Column, SessionID: "iva-call"}))
		_, err := e.Service(t).BookHeld(ctx, heldBooking())
		code, d := heldCode(t, err)
		require.Equal(t, contracts.CodeConflict, code)
		require.Equal(t, contracts.BookingErrSlotReserved, d["errorType"])
		require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetAppointment))
	})
}

// The web face's patient check follows BOOKING_AUTH_MODE: a token, when
// given, must be the patient's in every mode; without one, token mode
// refuses (401, createAppt's BOOKING_AUTH_MISSING) and the other modes
// accept the patient the hold's client names.
func TestAuthorizeHeldFollowsTheAuthMode(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	for _, mode := range []string{booking.AuthModeSession, booking.AuthModeLegacy, booking.AuthModeToken} {
		s := e.Service(t, func(c *booking.Config) { c.AuthMode = mode })
		require.NoError(t, s.AuthorizeHeld(e.Token(bt.Patient), bt.Patient), mode)
		code, details := heldCode(t, s.AuthorizeHeld(e.Token("0F0F0F0F-0000-4000-8000-000000000001"), bt.Patient))
		require.Equal(t, contracts.CodeUnauthorized, code, mode)
		require.Equal(t, contracts.BookingAuthGUIDMismatch, details["errorType"], mode)
		_, details = heldCode(t, s.AuthorizeHeld("not-a-token", bt.Patient))
		require.Equal(t, "bookingAuthToken", details["field"], mode)
		if mode != booking.AuthModeToken {
			require.NoError(t, s.AuthorizeHeld("", bt.Patient), mode)
			continue
		}
		code, details = heldCode(t, s.AuthorizeHeld("", bt.Patient))
		require.Equal(t, contracts.CodeUnauthorized, code)
		require.Equal(t, contracts.BookingAuthMissing, details["errorType"])
	}
}
