package booking_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestRateLimitedThenRetriedOnce(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited())
	r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
	require.Equal(t, 2, r.Debug.Attempts)
	require.True(t, r.Debug.Retried)
	require.Equal(t, []time.Duration{5 * time.Second}, e.Clock.Slept(), "one 5 s retry delay")
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 2)
	require.Empty(t, e.Queue.Appointments)
}

// With the limiter's spacing known, a retry whose turn could not come
// within the call budget (BOOKING_INCALL_WAIT, 15 s) is not slept for:
// queued at once, no dead air. One that can (12.25 s: 5/min + margin) is
// waited for and confirmed in the call, as the original did in ~15 s.
func TestRateLimitedRetryThatCannotFitIsQueuedAtOnce(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Limiter.Every = 16 * time.Second // the next turn is beyond the 15 s in-call wait
	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited())
	r := body[contracts.ApptQueuedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
	require.True(t, r.Queued)
	require.Empty(t, e.Clock.Slept(), "no 5 s sleep before queueing")
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Len(t, e.Queue.Appointments, 1)

	e = bt.NewEnv()
	e.Limiter.Every = 12250 * time.Millisecond
	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited())
	r2 := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
	require.Equal(t, 2, r2.Debug.Attempts)
}

func TestRateLimitedTwiceIsQueued(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	r := body[contracts.ApptQueuedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
	require.True(t, r.Queued)
	require.False(t, r.Success)
	require.Regexp(t, `^op-\d{13}-[0-9a-z]{20}$`, r.OperationID)
	require.Equal(t, contracts.QueuedMessage, r.Message)
	require.Equal(t, contracts.BookingErrRateLimitedQueued, r.Debug.ErrorType)
	require.Equal(t, 2, r.Debug.SyncAttempts)
	require.Equal(t, "Too many requests within the timeframe for procedure SetAppointment", r.Debug.LastError)
	require.Equal(t, "Your appointment request is being processed. You will receive a confirmation shortly.", r.LLMGuidance.VoiceResponse)

	require.Len(t, e.Queue.Appointments, 1)
	task := e.Queue.Appointments[0]
	require.Equal(t, r.OperationID, task.OperationID)
	require.False(t, task.CheckFirst, "rate limit answers are certain: nothing was created")
	require.Equal(t, request(e).Note, task.Note)
	require.Equal(t, "flowise-session-456", task.CallSessionID, "queue-status finds the call's operations by its sessionId")
	require.Equal(t, "call-session-123", task.UUI, "and by its uui")
	state, _ := e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state, "the slot stays held while the booking is queued")
	require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetPatientComment), "the note waits for the booking")
}

func TestLimiterWait(t *testing.T) {
	t.Parallel()
	t.Run("within the budget: wait, then call", func(t *testing.T) {
		e := bt.NewEnv()
		e.Limiter.Script(cloud9.ProcSetAppointment, 4*time.Second, 3*time.Second)
		r := body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.Equal(t, int64(7000), r.Debug.SpacingWaitMS)
		require.Equal(t, []time.Duration{4 * time.Second, 3 * time.Second}, e.Clock.Slept())
	})
	t.Run("beyond the budget: queued at once, Cloud9 not called", func(t *testing.T) {
		e := bt.NewEnv()
		e.Limiter.Script(cloud9.ProcSetAppointment, 16*time.Second) // BOOKING_INCALL_WAIT is 15 s
		r := body[contracts.ApptQueuedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
		require.Equal(t, contracts.QueueReasonLimiterWait, r.Debug.QueueReason)
		require.Equal(t, 0, r.Debug.SyncAttempts)
		require.Empty(t, e.Cloud9.Calls(""))
		require.Empty(t, e.Clock.Slept(), "no dead air")
	})
	t.Run("limiter down: fail open", func(t *testing.T) {
		e := bt.NewEnv()
		e.Limiter.Err = errors.New("redis down")
		body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, request(e)))
	})
}
