package test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestBookingFlowOverHTTP walks the seed's flow diagram (§3) over HTTP:
// createPatient → getApptSlots → createAppt (bookingToken and raw GUIDs) →
// queue-status, one branch per subtest.
//
// It and the other end-to-end tests of the Node-RED booking path
// (docs/booking.md) run against the built binary, a real Redis and the
// Cloud9 simulator running as its own process (`flowgate cloud9-sim`).
// Every test has its own Redis database and its own simulator. Crash drills
// are in booking_drill_test.go, helpers in booking_helpers_test.go.
//
// Provoking Cloud9's code 8: flowgate's own limiter (CLOUD9_WRITE_LIMIT)
// spaces writes so that Cloud9 never says "too many requests"; to see the
// seed's handling of that answer the tests give flowgate a looser limit
// than the simulator's (-write-limit 1/min), and use -scale to make the
// simulator's minute last 1–3 real seconds.
func TestBookingFlowOverHTTP(t *testing.T) {
	t.Parallel()
	t.Run("auth rejected, then success with note", bookingAuthThenNote)
	t.Run("rate limited, sync retry, success", bookingSyncRetry)
	t.Run("rate limited, queued, completed by the worker", bookingQueuedCompleted)
	t.Run("10 attempts exhausted, failed and dead-lettered", bookingAttemptsExhausted)
}

// bookingAuthThenNote: invalid token → rejected, nothing sent to Cloud9; then
// a booking by bookingToken with a note (SetPatientComment), and one by raw
// GUIDs.
func bookingAuthThenNote(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 60, "5/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "100/min", nil))
	c := newBookingClient(t, p)
	pat := c.createPatient("Pat", "Parent", "call-auth")
	other := c.createPatient("Olga", "Other", "call-other")
	list := distinctSlots(t, c.slots("call-auth", 3), 3)

	// No token, and no cached session for the patientGUID or the uui
	// (a patient of another system): nothing to auto-inject (§4.4).
	stranger := strings.ToUpper(uuid.NewString())
	raw, et := c.appt(apptReq(stranger, "", list[0], "Tommy Smith", "call-unknown"))
	require.Equal(t, contracts.BookingAuthMissing, et, truncate(raw))
	rej := strictDecode[contracts.ApptAuthRejectedResponse](t, raw)
	require.Equal(t, contracts.AuthMessage(contracts.BookingAuthMissing), rej.Message)
	require.Equal(t, "booking_auth_failed", rej.LLMGuidance.ErrorType)
	// Another patient's token: GUID_MISMATCH names the token's patient.
	raw, et = c.appt(apptReq(pat.PatientGUID, other.BookingAuthToken, list[0], "Tommy Smith", "call-auth"))
	require.Equal(t, contracts.BookingAuthGUIDMismatch, et, truncate(raw))
	rej = strictDecode[contracts.ApptAuthRejectedResponse](t, raw)
	require.Equal(t, other.PatientGUID, string(rej.Debug.CorrectPatientGUID))
	require.Equal(t, 0, sim.state().Calls["SetAppointment"], "a rejected booking reached Cloud9")

	note := "Child: Tommy Smith | DOB: 01/15/2015 | Insurance: Aetna"
	req := tokenReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Tommy Smith", "call-auth")
	req.Note = note
	ok := c.booked(req)
	require.True(t, ok.NoteAdded, "note not added: %+v", ok.Debug.NoteResult)
	require.True(t, ok.Debug.NoteResult.Success)
	require.Equal(t, 1, ok.Debug.Attempts)
	require.False(t, ok.Debug.Retried)
	require.Equal(t, contracts.AuthMethodToken, ok.Debug.AuthMethod)
	require.Equal(t, list[0].StartTime, ok.Debug.RequestParams.StartTime, "bookingToken not decoded into the slot")
	require.True(t, strings.EqualFold(list[0].ScheduleColumnGUID, ok.Debug.RequestParams.ScheduleColumnGUID))

	// Raw GUIDs and no token: the session cache auto-injects the
	// patient's bookingAuthToken (§4.4), which then passes the checks.
	ok2 := c.booked(apptReq(pat.PatientGUID, "", list[1], "Jane Smith", "call-auth"))
	require.Equal(t, contracts.AuthMethodToken, ok2.Debug.AuthMethod)
	require.NotEmpty(t, p.LogLines("auto-injected bookingAuthToken from session cache"))

	st := sim.state()
	require.Len(t, st.Appointments, 2)
	require.Len(t, apptsAt(st, pat.PatientGUID, list[0].StartTime, list[0].ScheduleColumnGUID), 1)
	require.Len(t, apptsAt(st, pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID), 1)
	require.Equal(t, ok.AppointmentGUID, apptsAt(st, pat.PatientGUID, list[0].StartTime, list[0].ScheduleColumnGUID)[0].GUID)
	require.Equal(t, 1, st.Comments, "the note is one SetPatientComment")
	require.Equal(t, 2, st.Calls["SetAppointment"])
	require.Zero(t, st.RateLimited["SetAppointment"])
	require.Zero(t, c.queueStatus().Total, "nothing was queued")
}

// bookingSyncRetry: code 8 on the first try; the sync retry after
// BOOKING_SYNC_RETRY_DELAY lands after the simulator's window and books. The
// simulator's minute is 3 s (scale 20, 1/min); booking B is sent 2.5 s after
// A, so its first try is refused and its retry 1 s later is admitted (0.5 s of
// slack either way).
func bookingSyncRetry(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 20, "1/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_RETRY_DELAY": "1s", "BOOKING_SYNC_BUDGET": "2s",
	}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Rita", "Retry", "call-retry")
	list := distinctSlots(t, c.slots("call-retry", 2), 2)

	c.booked(tokenReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Ann Retry", "call-retry"))
	admittedBy := time.Now() // A was admitted before its answer
	time.Sleep(time.Until(admittedBy.Add(2500 * time.Millisecond)))
	ok := c.booked(apptReq(pat.PatientGUID, pat.BookingAuthToken, list[1], "Ben Retry", "call-retry"))
	require.Equal(t, 2, ok.Debug.Attempts, "%+v", ok.Debug)
	require.True(t, ok.Debug.Retried)

	st := sim.state()
	require.Equal(t, 1, st.RateLimited["SetAppointment"], "exactly the first try of B answered code 8")
	require.Equal(t, 3, st.Calls["SetAppointment"])
	require.Len(t, apptsAt(st, pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID), 1)
	require.Len(t, st.Appointments, 2)
	require.Zero(t, c.queueStatus().Total, "nothing was queued")
}

// bookingQueuedCompleted: code 8 on both sync tries (BOOKING_SYNC_RETRY_DELAY
// 300 ms within a 3 s simulator minute) → queued (§5.4) → the worker retries
// with the backoff until the window passes → completed in queue-status, with
// the appointment the simulator holds.
func bookingQueuedCompleted(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 20, "1/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_RETRY_DELAY": "300ms", "BOOKING_SYNC_BUDGET": "2s",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
	}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Quinn", "Queue", "call-queue")
	list := distinctSlots(t, c.slots("call-queue", 2), 2)

	c.booked(tokenReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Ann Queue", "call-queue"))
	q := c.queued(apptReq(pat.PatientGUID, pat.BookingAuthToken, list[1], "Ben Queue", "call-queue"),
		contracts.BookingErrRateLimitedQueued)
	require.Equal(t, contracts.QueueReasonRateLimited, q.Debug.QueueReason)
	require.Equal(t, 2, q.Debug.SyncAttempts)
	require.Contains(t, q.Debug.LastError, "Too many requests")
	require.Equal(t, 2, sim.state().RateLimited["SetAppointment"])

	op, all := c.waitOp(q.OperationID, contracts.OpCompleted, 20*time.Second)
	require.Equal(t, 1, all.Total)
	require.Equal(t, 1, all.Completed)
	require.Equal(t, contracts.OpSetAppointment, op.OperationType)
	require.Equal(t, "Ben Queue", op.ChildName)
	require.Equal(t, list[1].StartTime, op.StartTime)
	require.Equal(t, 10, op.MaxAttempts)
	require.GreaterOrEqual(t, op.Attempts, 1)
	require.NotNil(t, op.Result)
	require.NotEmpty(t, op.CompletedAt)

	st := sim.state()
	got := apptsAt(st, pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID)
	require.Len(t, got, 1, "the queued booking exists exactly once")
	require.Equal(t, got[0].GUID, op.Result.AppointmentGUID)
	require.True(t, strings.EqualFold(pat.PatientGUID, op.Result.PatientGUID))
	require.Len(t, st.Appointments, 2)
	requireMetrics(t, p, map[string]float64{`flowgate_booking_completed_total{operation="SetAppointment"}`: 1})
}

// bookingAttemptsExhausted: every SetAppointment of the worker fails retryably
// (error rate 1 on SetAppointment: Cloud9's error 0, "An unknown error
// occurred."): BOOKING_MAX_ATTEMPTS=10 attempts, then failed in queue-status,
// archived in Asynq (Asynqmon's archived_tasks), counted in flowgate_dlq_size;
// the slot is held while queued (another session gets SLOT_RESERVED) and
// released after the final failure (the other session books it).
//
// Here the booking is queued by flowgate's own spacing (the diagram's "Check
// Spacing" branch: the limiter's wait does not fit the sync budget,
// queue_reason limiter_wait) and the simulator has no rate limit, so every
// attempt meets the injected error and never code 8 (asynq keeps retry times
// in whole seconds, so sub-second backoffs cannot keep attempts out of a
// simulator window reliably).
func bookingAttemptsExhausted(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 1, "off")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "1/1s", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_BUDGET": "300ms",
		// The injected error is Cloud9's code 0, an uncertain outcome: keep
		// the wait for a late commit short so ten attempts fit the test.
		"BOOKING_UNCERTAIN_GRACE": "100ms",
		"BOOKING_BACKOFF_BASE":    "200ms", "BOOKING_BACKOFF_MAX": "400ms", "BOOKING_MAX_ATTEMPTS": "10",
		"DLQ_RECONCILE_SCHEDULE": "@every 1s",
	}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Fay", "Fail", "call-fail")
	time.Sleep(1100 * time.Millisecond) // flowgate's SetPatient spacing
	rival := c.createPatient("Rex", "Rival", "call-rival")
	list := distinctSlots(t, c.slots("call-fail", 2), 2)

	c.booked(tokenReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Ann Fail", "call-fail"))
	q := c.queued(apptReq(pat.PatientGUID, pat.BookingAuthToken, list[1], "Ben Fail", "call-fail"),
		contracts.BookingErrRateLimitedQueued)
	require.Equal(t, contracts.QueueReasonLimiterWait, q.Debug.QueueReason)
	require.Zero(t, q.Debug.SyncAttempts)
	// From now on every SetAppointment answers error 0 (retryable); the
	// worker's first call comes a limiter interval (1 s) after A's.
	sim.setFaults(cloud9sim.FaultsJSON{ErrorRate: 1, Procedures: []string{"SetAppointment"}})
	callsBefore := sim.state().Calls["SetAppointment"]
	require.Equal(t, 1, callsBefore, "only A reached Cloud9 on the sync path")

	// While queued the slot is held for the caller who asked for it.
	for _, s := range c.slots("call-rival", 1) {
		require.False(t, sameStart(s.StartTime, list[1].StartTime) && strings.EqualFold(s.ScheduleColumnGUID, list[1].ScheduleColumnGUID),
			"a held slot is offered to another session")
	}
	raw, et := c.appt(apptReq(rival.PatientGUID, rival.BookingAuthToken, list[1], "Rita Rival", "call-rival"))
	require.Equal(t, contracts.BookingErrSlotReserved, et, truncate(raw))
	strictDecode[contracts.ApptSlotReservedResponse](t, raw)
	require.Equal(t, callsBefore, sim.state().Calls["SetAppointment"], "SLOT_RESERVED reached Cloud9")

	op, all := c.waitOp(q.OperationID, contracts.OpFailed, 35*time.Second)
	require.Equal(t, 1, all.Failed)
	require.Equal(t, 10, op.Attempts)
	require.Equal(t, 10, op.MaxAttempts)
	require.NotNil(t, op.LastError)
	require.Equal(t, "CLOUD9_ERROR: An unknown error occurred.", *op.LastError)
	require.Equal(t, callsBefore+10, sim.state().Calls["SetAppointment"], "10 attempts, each one SetAppointment")

	archived := asynqTasks(t, p, "critical", "archived")
	at, found := findAsynqTask(archived, q.OperationID)
	require.True(t, found, "no archived task %s in Asynqmon: %+v", q.OperationID, archived)
	require.Equal(t, "booking:set_appointment", at.Type)
	waitMetricAtLeast(t, p, `flowgate_dlq_size{queue="critical"}`, 1, 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // a reconciler run (@every 1s) must not add a second record
	requireMetrics(t, p, map[string]float64{
		`flowgate_dlq_size{queue="critical"}`:                                            1,
		`flowgate_booking_failed_total{class="CLOUD9_ERROR",operation="SetAppointment"}`: 1,
	})
	require.NotEmpty(t, p.LogLines("queued booking failed for good"))

	// Released: another session now sees and books the slot (after a
	// limiter interval, so that it is booked on the sync path).
	sim.setFaults(cloud9sim.FaultsJSON{})
	time.Sleep(1100 * time.Millisecond)
	offered := false
	for _, s := range c.slots("call-rival", 1) {
		offered = offered || sameStart(s.StartTime, list[1].StartTime) && strings.EqualFold(s.ScheduleColumnGUID, list[1].ScheduleColumnGUID)
	}
	require.True(t, offered, "the released slot is not offered again")
	ok := c.booked(apptReq(rival.PatientGUID, rival.BookingAuthToken, list[1], "Rita Rival", "call-rival"))
	st := sim.state()
	require.Len(t, apptsAt(st, rival.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID), 1)
	require.Empty(t, apptsAt(st, pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID), "the failed booking exists")
	require.Equal(t, ok.AppointmentGUID, apptsAt(st, rival.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID)[0].GUID)
}

// TestBookingTwoInstancesSiblings: two flowgates on one Redis, the
// simulator at 5 writes/min of its own clock (scale 10: a simulated minute
// is 6 real seconds; flowgate's CLOUD9_WRITE_LIMIT 5/6s is the same rate in
// real time, with a 25 ms margin instead of the 250 ms meant for real
// minutes). Ten sibling bookings of one parent, sent at once and alternating
// between the instances, all stay on the sync path (BOOKING_SYNC_BUDGET
// 30 s): no code 8, ten appointments exactly once, and — the window
// limiter admitting five at once, then five more when the first leave the
// window — first to last SetAppointment between one window (60 s) and
// 1.05 × one window + margin on the simulator's clock.
func TestBookingTwoInstancesSiblings(t *testing.T) {
	t.Parallel()
	const scale = 10.0
	db := redistest.New(t)
	sim := startSim(t, scale, "5/min")
	env := bookingEnv(db.URL(), sim, "5/6s", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "25ms", "BOOKING_SYNC_BUDGET": "30s", "HTTP_SHUTDOWN_TIMEOUT": "75s",
	})
	p1, p2 := startFlowgate(t, env), startFlowgate(t, env)
	c1, c2 := newBookingClient(t, p1), newBookingClient(t, p2)

	parent := c1.createPatient("Sam", "Sibling", "call-siblings")
	list := distinctSlots(t, c1.slots("call-siblings", 10), 10)
	// The slot cache is shared: instance 2 accepts instance 1's bookingTokens.
	w := watchAppointments(sim)
	type result struct {
		i   int
		raw []byte
		at  time.Time
	}
	results := make([]result, len(list))
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range list {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		req := tokenReq(parent.PatientGUID, parent.BookingAuthToken, s, fmt.Sprintf("Child %d Sibling", i+1), "call-siblings")
		if i%3 == 0 {
			req = apptReq(parent.PatientGUID, parent.BookingAuthToken, s, fmt.Sprintf("Child %d Sibling", i+1), "call-siblings")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, raw := c.post("createAppt", req)
			if status != http.StatusOK {
				raw = []byte(fmt.Sprintf(`{"status":%d,"body":%q}`, status, raw))
			}
			results[i] = result{i: i, raw: raw, at: time.Now()}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	guids := make([]string, 0, len(list))
	for _, r := range results {
		require.Empty(t, errorType(t, r.raw), "booking %d not made on the sync path: %s", r.i, truncate(r.raw))
		ok := strictDecode[contracts.ApptBookedResponse](t, r.raw)
		require.True(t, ok.Success)
		require.Equal(t, 1, ok.Debug.Attempts, "booking %d needed a retry: %+v", r.i, ok.Debug)
		guids = append(guids, ok.AppointmentGUID)
	}
	realSpan, simClockSpan := w.span(t, guids)

	st := sim.state()
	require.Zero(t, st.RateLimited["SetAppointment"], "code 8 answers provoked")
	require.Equal(t, len(list), st.Calls["SetAppointment"])
	require.Len(t, st.Appointments, len(list))
	byGUID := map[string]int{}
	for _, a := range st.Appointments {
		byGUID[a.GUID]++
	}
	for i, s := range list {
		got := apptsAt(st, parent.PatientGUID, s.StartTime, s.ScheduleColumnGUID)
		require.Len(t, got, 1, "slot %d (%s) booked %d times", i, s.StartTime, len(got))
		require.Equal(t, 1, byGUID[guids[i]], "appointment %s of booking %d", guids[i], i)
		require.Equal(t, got[0].GUID, guids[i])
	}
	require.Zero(t, c1.queueStatus().Total, "a sibling was queued")
	require.Len(t, p1.LogLines(`"msg":"appointment booked"`), 5, "instance 1 made its five")
	require.Len(t, p2.LogLines(`"msg":"appointment booked"`), 5, "instance 2 made its five")

	simSpan := time.Duration(float64(realSpan) * scale)
	window := time.Minute + time.Duration(scale*float64(25*time.Millisecond)) // 5/min + the margin, simulated
	bound := time.Duration(1.05 * float64(window))
	t.Logf("10 siblings over 2 instances: first → last SetAppointment %.2f s simulated (%.3f s real × %g; simulator clock, whole seconds: %s), bound %.1f s; all answered in %.2f s real; code 8: %d",
		simSpan.Seconds(), realSpan.Seconds(), scale, simClockSpan, bound.Seconds(), elapsed.Seconds(), st.RateLimited["SetAppointment"])
	require.LessOrEqual(t, simSpan, bound, "ten writes took longer than 1.05 windows")
	require.LessOrEqual(t, simClockSpan, bound+time.Second, "on the simulator's own clock (1 s resolution)")
	require.GreaterOrEqual(t, simSpan, time.Minute-time.Second, "six writes within one minute")
}
