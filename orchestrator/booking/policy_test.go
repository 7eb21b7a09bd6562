package booking_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

// effects are the side effects of one booking attempt that must not
// depend on who runs it (sync path or worker).
type effects struct {
	Verdict      string // booked | later | failed
	Sent         int    // SetAppointment calls
	LiveAppts    int    // not cancelled, at Cloud9
	Done         bool   // Done mark, naming a live appointment
	InFlight     bool   // the next attempt checks first
	LeaseFree    bool   // another attempt could claim the identity now
	Hold         string // reservation state
	Invalidated  int    // slot-cache drops
	Booked       int    // slots a confirmed booking took out of the cache
	NotesSent    int    // SetPatientComment calls
	GetApptCalls int    // GetAppointmentListByPatient calls
}

// policyCase is one outcome of an attempt.
type policyCase struct {
	name  string
	setup func(t *testing.T, e *bt.Env, key string)
	want  effects
}

func policyCases() []policyCase {
	return []policyCase{
		{name: "success", want: effects{Verdict: "booked", Sent: 1, LiveAppts: 1, Done: true, LeaseFree: true, Hold: "confirmed", NotesSent: 1,
			Booked: 1}},
		{name: "rate limited", setup: script(bt.RateLimited()),
			want: effects{Verdict: "later", Sent: 1, LeaseFree: true, Hold: "confirmed"}},
		{name: "slot not available", setup: script(bt.SlotTaken()),
			want: effects{Verdict: "failed", Sent: 1, LeaseFree: true, Invalidated: 1}},
		{name: "uncertain (committed, answer lost)", setup: script(bt.Committed{Err: bt.Timeout()}),
			want: effects{Verdict: "later", Sent: 1, LiveAppts: 1, InFlight: true, Hold: "confirmed"}},
		{name: "timeout", setup: script(bt.Timeout()),
			want: effects{Verdict: "later", Sent: 1, InFlight: true, Hold: "confirmed"}},
		{name: "unreachable", setup: script(bt.Unreachable()),
			want: effects{Verdict: "later", Sent: 1, LeaseFree: true, Hold: "confirmed"}},
		{name: "permanent error", setup: script(bt.PatientMissing()),
			want: effects{Verdict: "failed", Sent: 1, LeaseFree: true}},
		{name: "lease held elsewhere", setup: func(t *testing.T, e *bt.Env, key string) {
			got, _, err := e.Marks.Claim(ctx, key, booking.Lease{Owner: "elsewhere", ChildName: "Johnny Smith"}, time.Minute)
			require.NoError(t, err)
			require.True(t, got)
		}, want: effects{Verdict: "later", Hold: "confirmed"}},
		{name: "cancelled Done mark", setup: func(t *testing.T, e *bt.Env, key string) {
			a := apptOf(request(e))
			guid, _, err := e.Cloud9.SetAppointment(ctx, cloud9.AppointmentInput{PatientGUID: a.PatientGUID, StartTime: a.StartTime,
				ScheduleViewGUID: a.ScheduleViewGUID, ScheduleColumnGUID: a.ScheduleColumnGUID, AppointmentTypeGUID: a.AppointmentTypeGUID,
				Minutes: a.Minutes})
			require.NoError(t, err)
			require.NoError(t, e.Marks.Done(ctx, key, "", booking.DoneRecord{AppointmentGUID: guid, ChildName: "Johnny Smith"}))
			e.Cloud9.Cancel(bt.Patient, guid)
		}, want: effects{Verdict: "booked", Sent: 2, LiveAppts: 1, Done: true, LeaseFree: true, Hold: "confirmed", NotesSent: 1,
			GetApptCalls: 1, Booked: 1}},
	}
}

func apptOf(r contracts.CreateApptRequest) booking.Appointment {
	return booking.Appointment{PatientGUID: r.PatientGUID, StartTime: r.StartTime, ScheduleViewGUID: r.ScheduleViewGUID,
		ScheduleColumnGUID: r.ScheduleColumnGUID, AppointmentTypeGUID: r.AppointmentTypeGUID, Minutes: int(r.Minutes),
		ChildName: r.ChildName, Note: r.Note}
}

func script(errs ...error) func(*testing.T, *bt.Env, string) {
	return func(_ *testing.T, e *bt.Env, _ string) { e.Cloud9.Script(cloud9.ProcSetAppointment, errs...) }
}

// observe reads the side effects after an attempt.
func observe(t *testing.T, e *bt.Env, key, verdict string) effects {
	t.Helper()
	ef := effects{Verdict: verdict, Sent: len(e.Cloud9.Calls(cloud9.ProcSetAppointment)),
		NotesSent: len(e.Cloud9.Calls(cloud9.ProcSetPatientComment)), Invalidated: len(e.Slots.Invalidated),
		Booked:       len(e.Slots.Booking()),
		GetApptCalls: len(e.Cloud9.Calls(cloud9.ProcGetAppointmentListByPatient))}
	live := map[string]bool{}
	for _, a := range e.Cloud9.Appointments(bt.Patient) {
		if !a.Canceled() {
			ef.LiveAppts++
			live[a.AppointmentGUID] = true
		}
	}
	rec, done, err := e.Marks.Completed(ctx, key)
	require.NoError(t, err)
	ef.Done = done && live[rec.AppointmentGUID]
	ef.InFlight, err = e.Marks.InFlight(ctx, key)
	require.NoError(t, err)
	ef.LeaseFree, _, err = e.Marks.Claim(ctx, key, booking.Lease{Owner: "probe"}, time.Second)
	require.NoError(t, err)
	ef.Hold, _ = e.Reservations.State(hold(start, bt.Column))
	return ef
}

// The sync path: createAppt with one sync attempt (so that a rate limit
// is handed on as the worker hands it on).
func runSync(t *testing.T, e *bt.Env) string {
	t.Helper()
	a := e.Service(t, func(c *booking.Config) { c.SyncAttempts = 1 }).CreateAppt(ctx, request(e))
	switch r := a.Body.(type) {
	case contracts.ApptBookedResponse:
		return "booked"
	case contracts.ApptQueuedResponse:
		require.Len(t, e.Queue.Appointments, 1, "queued")
		return "later"
	case contracts.ApptFailedResponse:
		return "failed"
	default:
		t.Fatalf("unexpected answer %T: %+v", r, r)
		return ""
	}
}

// The worker: the same booking as a queued task's first (not last)
// attempt, the hold taken as the sync path took it before queueing.
func runWorker(t *testing.T, e *bt.Env, db *redistest.DB) string {
	t.Helper()
	rt, err := asynqrt.New(asynqrt.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 1,
		ShutdownTimeout: time.Second, Logger: bt.Discard(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	cfg := e.Config()
	cfg.Registerer = prometheus.NewRegistry()
	w, err := booking.NewWorker(rt, e.Deps(nil), cfg)
	require.NoError(t, err)
	r := request(e)
	p := booking.AppointmentTask{OperationID: "op-1", CreatedAt: bt.T0, Appointment: apptOf(r),
		LocationGUID: booking.DefaultLocationGUID, SessionID: r.SessionID}
	err = w.RunAppointment(ctx, p, 1, false)
	switch {
	case err == nil:
		require.Len(t, e.Events.All(), 1, "booking_completed published")
		return "booked"
	case errors.Is(err, asynq.SkipRetry):
		return "failed"
	default:
		return "later"
	}
}

// One attempt, two policies: every outcome leaves the same side effects
// whether the sync path or the worker ran it.
func TestOneAttemptTwoPolicies(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	for _, c := range policyCases() {
		for _, who := range []string{"sync", "worker"} {
			t.Run(c.name+"/"+who, func(t *testing.T) {
				e := bt.NewEnv()
				key := booking.IdentityKey(bt.Patient, start, bt.Column)
				if c.setup != nil {
					c.setup(t, e, key)
				}
				var verdict string
				if who == "sync" {
					verdict = runSync(t, e)
				} else {
					verdict = runWorker(t, e, db)
				}
				require.Equal(t, c.want, observe(t, e, key, verdict))
			})
		}
	}
}
