package booking_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The in-call wait (BOOKING_INCALL_WAIT, issue 36.6): a full write window
// that frees within the call's budget is waited for, and the booking
// confirmed in the call, as the original confirmed one after ~15 s; only
// beyond it is the booking queued. Flowgate's limiter is a 5 per 61 s
// window (5/min + 1 s margin) and Cloud9 refuses (code 8) a sixth write in
// any 60 s, both on the fake clock.
type inCall struct {
	e      *bt.Env
	lim    *bt.Window // flowgate's shared limiter
	cloud9 *bt.Window // Cloud9's own limit
	svc    *booking.Service
}

func newInCall(t *testing.T, mod ...func(*booking.Config)) *inCall {
	t.Helper()
	e := bt.NewEnv()
	f := &inCall{e: e, lim: bt.NewWindow(e.Clock, 5, 61*time.Second), cloud9: bt.NewWindow(e.Clock, 5, time.Minute)}
	e.Cloud9.Gate = f.cloud9.Over
	d := e.Deps(nil)
	d.Limiter = f.lim
	cfg := e.Config()
	for _, m := range mod {
		m(&cfg)
	}
	svc, err := booking.New(d, cfg)
	require.NoError(t, err)
	f.svc = svc
	return f
}

// full fills both windows with five SetAppointment at the clock's now (an
// earlier family's bookings), then lets ago pass.
func (f *inCall) full(ago time.Duration) {
	f.lim.Fill(cloud9.ProcSetAppointment, 5)
	f.cloud9.Fill(cloud9.ProcSetAppointment, 5)
	f.e.Clock.Advance(ago)
}

func slotAt(i int) string {
	return time.Date(2026, 1, 21, 8+i, 0, 0, 0, time.UTC).Format("01/02/2006 03:04 PM")
}

func TestInCallWaitConfirmsWhenTheWindowFreesInTime(t *testing.T) {
	t.Parallel()
	f := newInCall(t)
	f.full(50 * time.Second) // the window frees 11 s from now
	burst := f.e.Clock.Now()
	var took []time.Duration
	for i := range 3 {
		req := request(f.e)
		req.StartTime, req.SessionID, req.UUI = slotAt(i), "burst-"+string(rune('a'+i)), ""
		r := body[contracts.ApptBookedResponse](t, f.svc.CreateAppt(ctx, req))
		require.True(t, r.Success, "caller %d confirmed in the call", i+1)
		took = append(took, f.e.Clock.Now().Sub(burst))
	}
	t.Logf("burst of 3 after a full window: confirmed at %v", took)
	require.LessOrEqual(t, took[2], 15*time.Second, "the third of the burst confirmed within the in-call wait")
	require.Equal(t, 11*time.Second, took[0], "the first waited for the window, no longer")
	require.Empty(t, f.e.Queue.Appointments, "nothing queued")
	require.Zero(t, f.cloud9.Refused, "0 code 8")
}

func TestInCallWaitTwoFamiliesInOneMinute(t *testing.T) {
	t.Parallel()
	f := newInCall(t)
	family := func(call string, first int) contracts.ApptBatchResponse {
		req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: f.e.Token(bt.Patient), SessionID: call}
		for i := range 3 {
			req.Children = append(req.Children, contracts.BookingChild{ChildName: "Kid " + string(rune('A'+first+i)), StartTime: slotAt(first + i)})
		}
		return body[contracts.ApptBatchResponse](t, f.svc.CreateAppt(ctx, req))
	}
	began := f.e.Clock.Now()
	a := family("family-a", 0)
	f.e.Clock.Advance(50 * time.Second) // the second family calls in the same minute
	b := family("family-b", 3)
	for name, r := range map[string]contracts.ApptBatchResponse{"first": a, "second": b} {
		require.Equal(t, 3, r.SuccessfulBookings, "%s family: every child confirmed in the call", name)
		require.Zero(t, r.QueuedBookings, name)
	}
	t.Logf("two families of three in one minute: the second confirmed %v after the first called", f.e.Clock.Now().Sub(began))
	require.LessOrEqual(t, f.e.Clock.Now().Sub(began), 50*time.Second+15*time.Second)
	require.Len(t, f.e.Cloud9.Calls(cloud9.ProcSetAppointment), 6)
	require.Zero(t, f.cloud9.Refused, "0 code 8")
}

func TestInCallWaitBeyondTheBudgetIsQueuedAtOnce(t *testing.T) {
	t.Parallel()
	f := newInCall(t)
	f.full(40 * time.Second) // frees in 21 s: beyond 15 s
	r := body[contracts.ApptQueuedResponse](t, f.svc.CreateAppt(ctx, request(f.e)))
	require.Equal(t, contracts.QueueReasonLimiterWait, r.Debug.QueueReason)
	require.Empty(t, f.e.Clock.Slept(), "no dead air: queued at once")
	require.Empty(t, f.e.Cloud9.Calls(cloud9.ProcSetAppointment))

	g := newInCall(t, func(c *booking.Config) { c.InCallWait = 25 * time.Second })
	g.full(40 * time.Second)
	body[contracts.ApptBookedResponse](t, g.svc.CreateAppt(ctx, request(g.e)))
	require.Equal(t, []time.Duration{21 * time.Second}, g.e.Clock.Slept(), "BOOKING_INCALL_WAIT 25 s waits the 21 s")
}
