package booking_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The booking:consultation task's runs against a slow Cloud9 (the async
// setup of worker_test.go), and the run's timeout.

// shortRuns is an async setup whose consultation runs are too short for
// a family: a run is 2 s, a patient step may take 1.1 s (a 100 ms lookup,
// an 800 ms write, 100 ms note and event) and Cloud9 takes 300 ms per
// SetPatient. task is a parent and four children (slots at 8–11 AM).
func shortRuns(t *testing.T) (*async, booking.ConsultationTask) {
	t.Helper()
	a := setupAsync(t, func(c *booking.Config) {
		c.ReadTimeout, c.WriteTimeout, c.NoteTimeout, c.EventTimeout = 100*time.Millisecond, 800*time.Millisecond,
			100*time.Millisecond, 100*time.Millisecond
		c.TaskTimeout = 2 * time.Second
	})
	patient := func(key, first string, child bool) booking.ConsultPatient {
		return booking.ConsultPatient{Key: key, PatientTask: booking.PatientTask{OperationID: "op-consult-short",
			FirstName: first, LastName: "Parker", BirthDate: "04/01/2016", Phone: "4125550142", IsChild: child,
			LocationGUID: booking.DefaultLocationGUID}}
	}
	task := booking.ConsultationTask{OperationID: "op-consult-short", CreatedAt: time.Now().UTC(), SessionID: "call-short",
		LocationGUID: booking.DefaultLocationGUID, Parent: patient("parent-pat", "Pat", false), FamilyID: "fam-short"}
	for i := range 4 {
		task.Children = append(task.Children, booking.ConsultChildTask{Index: i,
			Patient: patient(fmt.Sprintf("child-%d", i), fmt.Sprintf("Kid%d", i), true), AppointmentOpID: fmt.Sprintf("op-appt-short-%d", i),
			Appointment: booking.Appointment{StartTime: fmt.Sprintf("01/21/2026 %d:00 AM", 8+i), ScheduleViewGUID: bt.View,
				ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 45}})
	}
	return a, task
}

// A consultation whose patient steps do not fit one run (shortRuns): each
// run defers before a child it may not finish, the next goes on from the
// marks, and the parent and four children are each created once, with no
// attempt spent; every run starts by extending the children's slot holds,
// so the last child's is held while the first ones are created. Before,
// the run's deadline cut a SetPatient mid-call and spent an attempt (on
// the last one, the children not reached failed).
func TestConsultationDefersWhenItsRunIsShort(t *testing.T) {
	t.Parallel()
	a, task := shortRuns(t)
	lastSlot := booking.SlotHold{LocationGUID: booking.DefaultLocationGUID, StartTime: "01/21/2026 11:00 AM", ScheduleColumnGUID: bt.Column}
	var lastHeld atomic.Value
	a.e.Cloud9.Hook = func(procedure string) {
		if procedure == cloud9.ProcSetPatient {
			if lastHeld.Load() == nil {
				state, session := a.e.Reservations.State(lastSlot)
				lastHeld.Store(state + " by " + session)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	require.NoError(t, a.w.EnqueueConsultation(ctx, task))
	a.start(t)
	op := a.waitOp(t, task.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts, "an attempt was spent")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatient), 5, "each patient once")
	for i := range 4 {
		a.waitOp(t, fmt.Sprintf("op-appt-short-%d", i), contracts.OpCompleted)
	}
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 4)
	require.Equal(t, "confirmed by call-short", lastHeld.Load(), "the last child's slot was not held from the run's start")
	// Every run kept the last child's slot (its patient was created in the
	// last run), then its booking confirmed it; the first child's patient
	// existed before the last run, whose keep left its slot alone.
	firstSlot := lastSlot
	firstSlot.StartTime = "01/21/2026 8:00 AM"
	require.Less(t, a.e.Reservations.Confirms(firstSlot), a.e.Reservations.Confirms(lastSlot),
		"a run kept the slot of a child whose patient existed")
}

// A run that defers while an earlier child is to be retried returns that
// retry instead (shortRuns; the first child's SetPatient is refused once,
// connection refused): the attempt is counted and the backoff applies, so
// a failing Cloud9 cannot keep a family deferring without spending
// attempts.
func TestConsultationDeferralKeepsAnEarlierRetry(t *testing.T) {
	t.Parallel()
	a, task := shortRuns(t)
	a.e.Cloud9.Hook = func(procedure string) {
		if procedure == cloud9.ProcSetPatient {
			time.Sleep(300 * time.Millisecond)
		}
	}
	a.e.Cloud9.Script(cloud9.ProcSetPatient, nil, bt.Unreachable()) // the parent, then the first child
	require.NoError(t, a.w.EnqueueConsultation(ctx, task))
	a.start(t)
	op := a.waitOp(t, task.OperationID, contracts.OpCompleted)
	require.Equal(t, 2, op.Attempts, "the first child's retry was dropped for the deferral")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatient), 6, "each patient once, the first child twice")
}

// On the last attempt a run short of time does not defer: Asynq would
// archive the task without its failure being reported.
func TestConsultationLastAttemptDoesNotDefer(t *testing.T) {
	t.Parallel()
	a, _ := shortRuns(t)
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	require.Error(t, a.w.TimeShort(short, false))
	require.NoError(t, a.w.TimeShort(short, true))
}

// A queued operation's run is sized from the Cloud9 timeouts (two list
// reads, the write, the note, its event, a write window and the lease
// grace), and a run shorter than one consultation patient step is refused.
func TestTaskTimeoutFollowsTheCloud9Timeouts(t *testing.T) {
	t.Parallel()
	c, err := booking.Defaulted(booking.Config{})
	require.NoError(t, err)
	require.Equal(t, 4*time.Minute+25*time.Second, c.TaskTimeout)
	c, err = booking.Defaulted(booking.Config{ReadTimeout: 2 * time.Minute, WriteTimeout: 90 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 7*time.Minute+10*time.Second, c.TaskTimeout)
	c, err = booking.Defaulted(booking.Config{ReadTimeout: time.Second, WriteTimeout: time.Second, NoteTimeout: time.Second,
		EventTimeout: time.Second})
	require.NoError(t, err)
	require.Equal(t, booking.DefaultTaskTimeout, c.TaskTimeout, "never under 2 min")
	_, err = booking.Defaulted(booking.Config{TaskTimeout: 2 * time.Minute})
	require.ErrorContains(t, err, "must hold one patient step", "2 min < 60 s + 45 s + 15 s + 15 s")
}

// A child Cloud9 refuses for good is reported once and left alone by the
// task's later runs: here the first child's SetPatient is refused
// (invalid birth date) and the second's fails for now (connection
// refused), so the task runs again. The second run sends no SetPatient for
// the refused child (a write of Cloud9's scarce quota), publishes no
// second booking_failed and does not hold its released slot again.
func TestConsultationRefusedChildIsNotRetried(t *testing.T) {
	t.Parallel()
	a, task := shortRuns(t)
	task.Children = task.Children[:2]
	a.e.Cloud9.Script(cloud9.ProcSetPatient, nil, // the parent
		bt.StatusError(cloud9.ProcSetPatient, 3, "Error: invalid parameter birthdayDateTime"), bt.Unreachable())
	require.NoError(t, a.w.EnqueueConsultation(ctx, task))
	a.start(t)
	op := a.waitOp(t, task.OperationID, contracts.OpCompleted)
	require.Equal(t, 2, op.Attempts, "the second child's failure retried the task")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatient), 4, "the parent, the refused child once, the second child twice")
	a.waitOp(t, "op-appt-short-1", contracts.OpCompleted)
	failed := 0
	for _, ev := range a.e.Events.All() {
		if ev.Event == contracts.EventBookingFailed {
			failed++
		}
	}
	require.Equal(t, 1, failed, "booking_failed for the refused child, once")
	refusedSlot := booking.SlotHold{LocationGUID: booking.DefaultLocationGUID, StartTime: "01/21/2026 8:00 AM", ScheduleColumnGUID: bt.Column}
	state, _ := a.e.Reservations.State(refusedSlot)
	require.Equal(t, 1, a.e.Reservations.Confirms(refusedSlot), "only the first run's start kept the refused child's slot")
	require.NotEqual(t, "confirmed", state, "the refused child's slot was taken back")
}

// The Done mark outlives a queued operation's retries: with the defaults
// 10 runs of 4 min 25 s, the 10 s queue delay and 30 min of backoff.
func TestDoneMarkOutlivesTheRetries(t *testing.T) {
	t.Parallel()
	c := booking.Config{}
	require.Equal(t, 74*time.Minute+20*time.Second, c.RetryHorizon())
	require.Equal(t, c.RetryHorizon(), c.MarksDoneTTL())
	short := booking.Config{AsyncMaxAttempts: 2}
	require.Equal(t, booking.DefaultDoneTTL, short.MarksDoneTTL(), "never under an hour")
}

// A queued booking's hold, confirmed at each run's start, outlasts the
// run and the longest backoff after it: with the defaults 4 min 25 s +
// the 300 s cap + a minute, where the 300 s hold lapsed between retries.
func TestHoldKeepOutlastsTheRetryGap(t *testing.T) {
	t.Parallel()
	require.Equal(t, 10*time.Minute+25*time.Second, booking.Config{}.HoldKeepTTL())
	fast := booking.Config{Backoff: booking.BackoffPolicy{Base: time.Second, Max: 30 * time.Second}}
	require.Equal(t, 4*time.Minute+25*time.Second+30*time.Second+time.Minute, fast.HoldKeepTTL())
}
