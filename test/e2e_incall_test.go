package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// LimiterSpacingName is CLOUD9_WRITE_LIMITER's other limiter.
const LimiterSpacingName = "spacing"

// simWindows are CLOUD9_SIM_WINDOW's values.
var simWindows = []string{"sliding", "fixed"}

// startSimWindow is startSim at scale 1 and the simulator's default write
// limit (5/min), counting it in window ("sliding" or "fixed").
func startSimWindow(t *testing.T, window string) *simProc {
	t.Helper()
	return startSim(t, 1, "5/min", "-window", window)
}

// incall is one case's simulator, flowgate and client.
type incall struct {
	t   *testing.T
	sim *simProc
	p   *proc
	c   *bookingClient
}

// newIncall starts a simulator counting in window and a flowgate on a
// fresh Redis database with every booking setting at its default, except
// CLOUD9_WRITE_LIMITER when limiter is not "".
func newIncall(t *testing.T, window, limiter string) *incall {
	t.Helper()
	db := redistest.New(t)
	sim := startSimWindow(t, window)
	extra := map[string]string{}
	if limiter != "" {
		extra["CLOUD9_WRITE_LIMITER"] = limiter
	}
	if limiter == LimiterSpacingName {
		// The baseline as it was: no in-call wait beyond the 10 s sync
		// budget (BOOKING_INCALL_WAIT's 15 s would fit one 12.25 s turn).
		extra["BOOKING_INCALL_WAIT"] = "10s"
	}
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "5/min", extra)) // 5/min: CLOUD9_WRITE_LIMIT's default
	return &incall{t: t, sim: sim, p: p, c: newBookingClient(t, p)}
}

// noCode8 requires that Cloud9 never answered "Too many requests": not in
// the simulator's count, not in flowgate's metric.
func (f *incall) noCode8() {
	f.t.Helper()
	st := f.sim.state()
	n := 0
	for _, v := range st.RateLimited {
		n += v
	}
	require.Zero(f.t, n, "code 8 answers by procedure: %v", st.RateLimited)
	require.Zero(f.t, metricSum(scrape(f.t, f.p), "flowgate_cloud9_rate_limited_total"), "flowgate counted code 8")
}

// timedAppt posts createAppt and returns the raw answer, its error_type and
// how long the caller waited for it.
func (f *incall) timedAppt(req contracts.CreateApptRequest) ([]byte, string, time.Duration) {
	f.t.Helper()
	start := time.Now()
	raw, et := f.c.appt(req)
	return raw, et, time.Since(start)
}

// bookedNow requires raw to be a booking made on this call, with no wait
// and no retry.
func bookedNow(t *testing.T, raw []byte, et, what string) contracts.ApptBookedResponse {
	t.Helper()
	require.Empty(t, et, "%s not confirmed in-call: %s", what, truncate(raw))
	ok := strictDecode[contracts.ApptBookedResponse](t, raw)
	require.True(t, ok.Success)
	require.NotEmpty(t, ok.AppointmentGUID)
	require.Equal(t, 1, ok.Debug.Attempts, "%s: %+v", what, ok.Debug)
	require.Zero(t, ok.Debug.SpacingWaitMS, "%s waited for the limiter", what)
	return ok
}

// requireAppt: the simulator holds exactly one appointment of patient at
// slot s, and it is guid.
func requireAppt(t *testing.T, f *incall, patientGUID string, s contracts.ApptSlot, guid string) {
	t.Helper()
	got := apptsAt(f.sim.state(), patientGUID, s.StartTime, s.ScheduleColumnGUID)
	require.Len(t, got, 1, "appointments at %s", s.StartTime)
	require.Equal(t, guid, got[0].GUID)
}

// TestInCallFigures: what a caller hears while still on the line, with the
// Cloud9 simulator at its default limit (5 writes/min per procedure, real
// minutes: scale 1) and flowgate at its defaults (CLOUD9_WRITE_LIMIT 5/min,
// CLOUD9_WRITE_LIMITER window, BOOKING_SYNC_BUDGET 10 s,
// BOOKING_SYNC_RETRY_DELAY 5 s, first run of a queued booking after 10 s),
// the limiter idle at the start of each case (a Redis database of its own).
// Every case runs once per way the simulator counts its code-8 limit —
// CLOUD9_SIM_WINDOW sliding and fixed (the standalone simulator's -window,
// the same cloud9sim.Config.Window) — and requires 0 code 8, counted by the
// simulator (GET /_sim/state rate_limited) and by flowgate
// (flowgate_cloud9_rate_limited_total).
//
// TestInCallSpacingBaseline runs the same calls with
// CLOUD9_WRITE_LIMITER=spacing (the default before 2026-11-26,
// CHANGELOG.md) for the comparison, asserting what that limiter does.
//
// Wall time: the ten-siblings case waits a real minute for the window; the
// other cases run beside it (t.Parallel), about 75 s in all.
func TestInCallFigures(t *testing.T) {
	t.Parallel()
	for _, w := range simWindows {
		t.Run("consultation parent+2/"+w, func(t *testing.T) { t.Parallel(); inCallConsultation(t, w) })
		t.Run("three createAppt/"+w, func(t *testing.T) { t.Parallel(); inCallThreeInARow(t, w) })
		t.Run("batch of two/"+w, func(t *testing.T) { t.Parallel(); inCallBatchOfTwo(t, w) })
		t.Run("ten siblings/"+w, func(t *testing.T) { t.Parallel(); inCallTenSiblings(t, w) })
	}
}

// inCallConsultation: bookConsultation, parent + 2 children → 200,
// success:true, every patient and appointment GUID, within 2 s (3
// SetPatient, 3 SetPatientComment, 2 SetAppointment: each procedure
// within its 5 per minute), then editInsurance at once → sent.
func inCallConsultation(t *testing.T, window string) {
	f := newIncall(t, window, "")
	slots := distinctSlots(t, f.c.slots("call-incall-consult", 2), 2)
	start := time.Now()
	r := f.c.consult(consultation("call-incall-consult", slots), http.StatusOK)
	took := time.Since(start)
	t.Logf("sim window %s: bookConsultation parent + 2 children → 200 success:%v in %s (elapsedMs %d)",
		window, r.Success, took.Round(time.Millisecond), r.ElapsedMS)
	require.True(t, r.Success)
	require.False(t, r.AnyQueued)
	require.True(t, r.Parent.Created)
	require.NotNil(t, r.Parent.PatientGUID)
	require.NotEmpty(t, *r.Parent.PatientGUID)
	require.Len(t, r.Children, 2)
	for i, ch := range r.Children {
		require.True(t, ch.Success, "child %d: %+v", i, ch)
		require.NotNil(t, ch.PatientGUID, "child %d", i)
		require.NotNil(t, ch.Appointment.AppointmentGUID, "child %d", i)
		require.True(t, ch.Appointment.Booked, "child %d", i)
		requireAppt(t, f, *ch.PatientGUID, slots[i], *ch.Appointment.AppointmentGUID)
	}
	require.LessOrEqual(t, took, 2*time.Second, "the caller waited too long")
	st := f.sim.state()
	require.Equal(t, 3, st.Patients)
	// The original's comments: the parent's insurance comment and one per
	// child (parent, family, insurance), before its appointment: three.
	require.Equal(t, 3, st.Comments, "comments made in-call")
	require.Equal(t, 3, st.Calls["SetPatientComment"])
	require.Zero(t, f.c.queueStatus().Total, "something was queued")

	// editInsurance at once: its comment is the answer, and the family's
	// comments left it a place (CLOUD9_COMMENT_RESERVE) → sent.
	code, raw := f.c.post("editInsurance", contracts.EditInsuranceRequest{PatientGUID: *r.Parent.PatientGUID,
		InsuranceProvider: "Delta Dental", InsuranceMemberID: "M-1"})
	require.Equal(t, http.StatusOK, code, truncate(raw))
	require.Equal(t, 4, f.sim.state().Calls["SetPatientComment"], "editInsurance sent in the same minute")
	f.noCode8()
}

// inCallThreeInARow: three createAppt of one parent in a row, each sent
// as the previous answer arrives → each confirmed in-call, no wait.
func inCallThreeInARow(t *testing.T, window string) {
	f := newIncall(t, window, "")
	pat := f.c.createPatient("Tara", "Three", "call-incall-three")
	slots := distinctSlots(t, f.c.slots("call-incall-three", 3), 3)
	var took []string
	start := time.Now()
	for i, s := range slots {
		raw, et, d := f.timedAppt(tokenReq(pat.PatientGUID, pat.BookingAuthToken, s, fmt.Sprintf("Kid%d Three", i+1), "call-incall-three"))
		ok := bookedNow(t, raw, et, fmt.Sprintf("createAppt %d", i+1))
		requireAppt(t, f, pat.PatientGUID, s, ok.AppointmentGUID)
		took = append(took, d.Round(time.Millisecond).String())
	}
	t.Logf("sim window %s: three createAppt in a row → 3 confirmed in-call, answered in %s (all three %s)",
		window, strings.Join(took, ", "), time.Since(start).Round(time.Millisecond))
	require.Zero(t, f.c.queueStatus().Total, "something was queued")
	f.noCode8()
}

// batchReq is one createAppt with a child per slot, "Kid<n> Batch".
func batchReq(pat contracts.PatientCreatedResponse, slots []contracts.ApptSlot, uui string) contracts.CreateApptRequest {
	req := contracts.CreateApptRequest{PatientGUID: pat.PatientGUID, BookingAuthToken: pat.BookingAuthToken, UUI: uui}
	for i, s := range slots {
		req.Children = append(req.Children, contracts.BookingChild{ChildName: fmt.Sprintf("Kid%d Batch", i+1), BookingToken: s.BookingToken})
	}
	return req
}

// inCallBatchOfTwo: createAppt with children[] of two → both booked in the
// one answer.
func inCallBatchOfTwo(t *testing.T, window string) {
	f := newIncall(t, window, "")
	pat := f.c.createPatient("Bo", "Batch", "call-incall-batch")
	slots := distinctSlots(t, f.c.slots("call-incall-batch", 2), 2)
	req := batchReq(pat, slots, "call-incall-batch")
	start := time.Now()
	status, raw := f.c.post("createAppt", req)
	took := time.Since(start)
	require.Equal(t, http.StatusOK, status, truncate(raw))
	r := strictDecode[contracts.ApptBatchResponse](t, raw)
	t.Logf("sim window %s: batch of two → %d booked, %d queued in %s", window, r.SuccessfulBookings, r.QueuedBookings, took.Round(time.Millisecond))
	require.True(t, r.Success, truncate(raw))
	require.Equal(t, 2, r.SuccessfulBookings, truncate(raw))
	require.Zero(t, r.QueuedBookings)
	for i, c := range r.Results {
		require.True(t, c.Success, "child %d: %+v", i, c)
		require.Equal(t, 1, c.Attempts, "child %d", i)
		requireAppt(t, f, pat.PatientGUID, slots[i], c.AppointmentGUID)
	}
	require.Zero(t, f.c.queueStatus().Total, "something was queued")
	f.noCode8()
}

// inCallTenSiblings: ten createAppt of one parent in a row → the first
// five confirmed in-call (the window's five writes), the other five
// answered queued at once (their wait does not fit the sync budget: no
// dead air), and booked by the worker as soon as the window allows: the
// last appointment within 60 s + CLOUD9_LIMIT_MARGIN (250 ms) + 3 s of
// Asynq scheduling (retry times in whole seconds, 1 s forwarder) after
// the first createAppt was sent. Each slot booked once, ten SetAppointment
// calls in all.
func inCallTenSiblings(t *testing.T, window string) {
	f := newIncall(t, window, "")
	pat := f.c.createPatient("Sam", "Sibling", "call-incall-ten")
	slots := distinctSlots(t, f.c.slots("call-incall-ten", 10), 10)
	var guids [10]string
	var ops []string
	var maxQueuedAnswer time.Duration
	var inCall []string
	first := time.Now()
	for i, s := range slots {
		what := fmt.Sprintf("sibling %d", i+1)
		raw, et, d := f.timedAppt(tokenReq(pat.PatientGUID, pat.BookingAuthToken, s, fmt.Sprintf("Kid%d Sibling", i+1), "call-incall-ten"))
		if i < 5 {
			guids[i] = bookedNow(t, raw, et, what).AppointmentGUID
			inCall = append(inCall, d.Round(time.Millisecond).String())
			continue
		}
		require.Equal(t, contracts.BookingErrRateLimitedQueued, et, "%s: %s", what, truncate(raw))
		q := strictDecode[contracts.ApptQueuedResponse](t, raw)
		require.Equal(t, contracts.QueueReasonLimiterWait, q.Debug.QueueReason, what)
		require.Zero(t, q.Debug.SyncAttempts, "%s was sent to Cloud9 on the sync path", what)
		ops = append(ops, q.OperationID)
		maxQueuedAnswer = max(maxQueuedAnswer, d)
	}
	require.Less(t, maxQueuedAnswer, 2*time.Second, "a queued sibling waited for nothing")

	var last time.Time
	for i, id := range ops {
		op, _ := f.c.waitOp(id, contracts.OpCompleted, 90*time.Second)
		require.NotNil(t, op.Result, id)
		guids[5+i] = op.Result.AppointmentGUID
		done, err := time.Parse(time.RFC3339Nano, op.CompletedAt)
		require.NoError(t, err, op.CompletedAt)
		if done.After(last) {
			last = done
		}
	}
	span := last.Sub(first)
	bound := 60*time.Second + 250*time.Millisecond + 3*time.Second
	t.Logf("sim window %s: ten siblings → 5 confirmed in-call (answered in %s), 5 queued at once (slowest answer %s), last queued one booked %.2f s after the first was sent (bound %.2f s)",
		window, strings.Join(inCall, ", "), maxQueuedAnswer.Round(time.Millisecond), span.Seconds(), bound.Seconds())
	require.LessOrEqual(t, span, bound, "the queued siblings waited longer than the window")
	require.GreaterOrEqual(t, span, 60*time.Second, "six writes within one minute")

	st := f.sim.state()
	require.Len(t, st.Appointments, 10)
	require.Equal(t, 10, st.Calls["SetAppointment"], "a sibling was sent twice")
	for i, s := range slots {
		requireAppt(t, f, pat.PatientGUID, s, guids[i])
	}
	f.noCode8()
}

// TestInCallSpacingBaseline: the same calls with CLOUD9_WRITE_LIMITER=
// spacing (one write per procedure every 12.25 s): only the first write of
// each procedure fits the 10 s sync budget, every later one is answered
// queued at once. Asserted as it is (the in-call answers only; the queued
// ones complete 12.25 s apart in the background), for the
// comparison; simulator window sliding.
func TestInCallSpacingBaseline(t *testing.T) {
	t.Parallel()
	t.Run("consultation parent+2", func(t *testing.T) {
		t.Parallel()
		f := newIncall(t, "sliding", "spacing")
		slots := distinctSlots(t, f.c.slots("call-spacing-consult", 2), 2)
		start := time.Now()
		r := f.c.consult(consultation("call-spacing-consult", slots), http.StatusAccepted)
		took := time.Since(start)
		booked := 0
		for _, ch := range r.Children {
			if ch.Success {
				booked++
			}
		}
		t.Logf("spacing: bookConsultation parent + 2 children → 202 in %s, parent created %v, children booked %d, queued %d",
			took.Round(time.Millisecond), r.Parent.Created, booked, len(apptOps(t, r)))
		require.True(t, r.Parent.Created)
		require.Zero(t, booked, "a child's SetPatient fitted the budget behind the parent's")
		require.Len(t, apptOps(t, r), 2)
		f.noCode8()
	})
	t.Run("three createAppt", func(t *testing.T) {
		t.Parallel()
		f := newIncall(t, "sliding", "spacing")
		pat := f.c.createPatient("Tara", "Three", "call-spacing-three")
		slots := distinctSlots(t, f.c.slots("call-spacing-three", 3), 3)
		var outcomes []string
		for i, s := range slots {
			raw, et, d := f.timedAppt(tokenReq(pat.PatientGUID, pat.BookingAuthToken, s, fmt.Sprintf("Kid%d Three", i+1), "call-spacing-three"))
			if i == 0 {
				bookedNow(t, raw, et, "createAppt 1")
			} else {
				require.Equal(t, contracts.BookingErrRateLimitedQueued, et, truncate(raw))
			}
			outcomes = append(outcomes, fmt.Sprintf("%s in %s", map[bool]string{true: "booked", false: "queued"}[et == ""], d.Round(time.Millisecond)))
		}
		t.Logf("spacing: three createAppt in a row → %s", strings.Join(outcomes, ", "))
		f.noCode8()
	})
	t.Run("batch of two", func(t *testing.T) {
		t.Parallel()
		f := newIncall(t, "sliding", "spacing")
		pat := f.c.createPatient("Bo", "Batch", "call-spacing-batch")
		slots := distinctSlots(t, f.c.slots("call-spacing-batch", 2), 2)
		req := batchReq(pat, slots, "call-spacing-batch")
		start := time.Now()
		status, raw := f.c.post("createAppt", req)
		took := time.Since(start)
		require.Equal(t, http.StatusOK, status, truncate(raw))
		r := strictDecode[contracts.ApptBatchResponse](t, raw)
		t.Logf("spacing: batch of two → %d booked, %d queued in %s", r.SuccessfulBookings, r.QueuedBookings, took.Round(time.Millisecond))
		require.Equal(t, 1, r.SuccessfulBookings, truncate(raw))
		require.Equal(t, 1, r.QueuedBookings, truncate(raw))
		f.noCode8()
	})
	t.Run("ten siblings", func(t *testing.T) {
		t.Parallel()
		f := newIncall(t, "sliding", "spacing")
		pat := f.c.createPatient("Sam", "Sibling", "call-spacing-ten")
		slots := distinctSlots(t, f.c.slots("call-spacing-ten", 10), 10)
		booked, queued := 0, 0
		start := time.Now()
		for i, s := range slots {
			raw, et, _ := f.timedAppt(tokenReq(pat.PatientGUID, pat.BookingAuthToken, s, fmt.Sprintf("Kid%d Sibling", i+1), "call-spacing-ten"))
			switch et {
			case "":
				booked++
			case contracts.BookingErrRateLimitedQueued:
				queued++
			default:
				t.Fatalf("sibling %d: %s", i+1, truncate(raw))
			}
		}
		t.Logf("spacing: ten siblings → %d confirmed in-call, %d queued, all answered in %s", booked, queued, time.Since(start).Round(time.Millisecond))
		require.Equal(t, 1, booked)
		require.Equal(t, 9, queued)
		f.noCode8()
	})
}
