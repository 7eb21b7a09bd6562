package booking_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// A queued booking Cloud9 refuses for good is not silent: booking_failed
// names the caller (the call's session: patient name and phone), the child,
// the slot, the reason and the practice's next step; queue-status shows the
// operation failed with the same; the metric counts it.
func TestQueuedBookingFailureIsReported(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	require.NoError(t, a.e.Sessions.Put(ctx, booking.Session{PatientGUID: bt.Patient, PatientName: "Mary Smith",
		PhoneNumber: "412-555-0100", UUI: "call-session-123", CreatedAt: bt.T0, ExpiresAt: bt.T0.Add(15 * time.Minute)}))
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.SlotTaken())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)

	const reason = "SLOT_NOT_AVAILABLE: Error: This appointment cannot be scheduled in the specified time slot."
	next := "Call the family back to book another time: Cloud9 refused the slot (taken, or not bookable)."
	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.NotEmpty(t, evs[0].FailedAt)
	require.Equal(t, contracts.BookingCompletedEvent{Event: contracts.EventBookingFailed, OperationID: q.OperationID,
		OperationType: contracts.OpSetAppointment, PatientGUID: bt.Patient, PatientName: "Mary Smith", ChildName: "Johnny Smith",
		StartTime: start, PhoneNumber: "412-555-0100", Attempts: 1, CompletedAt: evs[0].FailedAt, FailedAt: evs[0].FailedAt,
		ErrorType: contracts.BookingErrSlotNotAvailable, Reason: reason, NextStep: next}, evs[0])

	require.Equal(t, contracts.OpFailed, op.Status)
	require.Equal(t, reason+": skip retry for the task", *op.LastError)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, op.ErrorType)
	require.Equal(t, next, op.NextStep)
	require.Equal(t, evs[0].FailedAt, op.FailedAt)
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", "SLOT_NOT_AVAILABLE"))
	require.Zero(t, metric(t, a.reg, "flowgate_booking_completed_total", "operation", "SetAppointment"))
}

// The last attempt's outcome is unknown (a timeout): the appointment may
// exist, so the next step is to look in Cloud9 before calling back.
func TestQueuedBookingLastAttemptUncertain(t *testing.T) {
	t.Parallel()
	a := setupAsync(t, func(c *booking.Config) { c.AsyncMaxAttempts, c.LeaseGrace = 2, time.Millisecond })
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.Timeout(), bt.Timeout())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)
	require.Equal(t, 2, op.Attempts)
	require.Equal(t, contracts.BookingErrTimeout, op.ErrorType)
	require.Contains(t, op.NextStep, "Check the family's appointments in Cloud9 first")
	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.Equal(t, contracts.EventBookingFailed, evs[0].Event)
	require.Equal(t, 2, evs[0].Attempts)
	require.Equal(t, op.NextStep, evs[0].NextStep)
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", "TIMEOUT"))
	require.NotEmpty(t, a.e.Cloud9.Calls(cloud9.ProcGetAppointmentListByPatient), "the second attempt looked before sending again")
}

// A retry is not a failure: an attempt that fails and is tried again
// publishes nothing and counts nothing.
func TestQueuedBookingRetriedIsNotReported(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.RateLimited(), bt.Unreachable())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 3, op.Attempts)
	require.Empty(t, op.NextStep)
	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.Equal(t, contracts.EventBookingCompleted, evs[0].Event)
	require.Zero(t, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", "RATE_LIMIT"))
}

// An operation archived without its failure written (by hand in Asynqmon,
// or past its run's deadline) still shows a next step: the cautious one.
func TestFailedOperationWithoutResult(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	id := booking.NewOperationID("op", time.Now())
	require.NoError(t, a.w.EnqueueAppointment(ctx, booking.AppointmentTask{OperationID: id, CreatedAt: bt.T0,
		Appointment: booking.Appointment{PatientGUID: bt.Patient, StartTime: start, ChildName: "Johnny Smith"}}))
	require.NoError(t, a.rt.Inspector.ArchiveTask(asynqrt.QueueCritical, id))
	st, err := a.s.QueueStatus(ctx, contracts.QueueStatusQuery{Operator: true})
	require.NoError(t, err)
	require.Equal(t, 1, st.Failed)
	op := st.Operations[0]
	require.Equal(t, contracts.OpFailed, op.Status)
	require.Empty(t, op.ErrorType)
	require.Equal(t, contracts.FailedNextStep(contracts.OpSetAppointment, "", true), op.NextStep)
}
