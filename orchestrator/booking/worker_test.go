package booking_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

// async is the sync path (fake clock) in front of a real Asynq runtime and
// worker on a private Redis database (real time, tiny backoff).
type async struct {
	e   *bt.Env
	db  *redistest.DB
	rt  *asynqrt.Runtime
	w   *booking.Worker
	s   *booking.Service
	reg *prometheus.Registry
}

func setupAsync(t *testing.T, mod ...func(*booking.Config)) *async {
	t.Helper()
	db := redistest.New(t)
	e := bt.NewEnv()
	reg := prometheus.NewRegistry()
	rt, err := asynqrt.New(asynqrt.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 4,
		ShutdownTimeout: time.Second, DelayedCheck: 20 * time.Millisecond, Logger: bt.Discard(), Registerer: reg})
	require.NoError(t, err)
	t.Cleanup(func() { rt.Shutdown(); _ = rt.Close() })

	wcfg := booking.Config{Logger: bt.Discard(), Registerer: reg, QueueDelay: time.Millisecond,
		Backoff: booking.BackoffPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond}}
	for _, m := range mod {
		m(&wcfg)
	}
	marks := &booking.RedisMarks{Client: db.Client}
	deps := e.Deps(nil)
	deps.Marks = marks
	w, err := booking.NewWorker(rt, deps, wcfg)
	require.NoError(t, err)
	w.Register()

	deps.Queue = w
	cfg := e.Config()
	for _, m := range mod {
		m(&cfg)
	}
	s, err := booking.New(deps, cfg)
	require.NoError(t, err)
	return &async{e: e, db: db, rt: rt, w: w, s: s, reg: reg}
}

func (a *async) start(t *testing.T) { require.NoError(t, a.rt.Start()) }

// waitOp waits until queue-status shows operation id in status.
func (a *async) waitOp(t *testing.T, id, status string) contracts.QueueOperation {
	t.Helper()
	var found contracts.QueueOperation
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st, err := a.s.QueueStatus(ctx, contracts.QueueStatusQuery{PageSize: contracts.MaxQueuePageSize, Operator: true})
		if !assert.NoError(c, err) {
			return
		}
		for _, op := range st.Operations {
			if op.ID == id && op.Status == status {
				found = op
				return
			}
		}
		c.Errorf("operation %s never became %s: %+v", id, status, st)
	}, 90*time.Second, 20*time.Millisecond)
	return found
}

// The seed's main flow: rate limited twice → queued at once → the worker
// books it → queue-status shows it completed, the note is added, the
// reservation held 300 s, and the completion event published.
func TestQueuedBookingCompletes(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))

	st, err := a.s.QueueStatus(ctx, contracts.QueueStatusQuery{Operator: true})
	require.NoError(t, err)
	require.Equal(t, 1, st.Pending)
	require.Equal(t, q.OperationID, st.Operations[0].ID)
	require.Equal(t, 0, st.Operations[0].Attempts)
	require.Equal(t, 10, st.Operations[0].MaxAttempts)
	require.Equal(t, "Johnny Smith", st.Operations[0].ChildName)
	require.Equal(t, start, st.Operations[0].StartTime)
	require.NotNil(t, st.Operations[0].NextRetryAt)

	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts)
	require.Equal(t, contracts.OpSetAppointment, op.OperationType)
	require.NotNil(t, op.Result)
	appts := a.e.Cloud9.Appointments(bt.Patient)
	require.Len(t, appts, 1)
	require.Equal(t, appts[0].AppointmentGUID, op.Result.AppointmentGUID)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3, "2 sync + 1 async")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatientComment), 1)

	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.Equal(t, contracts.BookingCompletedEvent{Event: "booking_completed", OperationID: q.OperationID,
		OperationType: "SetAppointment", AppointmentGUID: appts[0].AppointmentGUID, PatientGUID: bt.Patient,
		ChildName: "Johnny Smith", StartTime: start, Attempts: 1, CompletedAt: evs[0].CompletedAt}, evs[0])
	state, _ := a.e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state)
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_completed_total", "operation", "SetAppointment"))

	// The IVA repeats the booking: already done, nothing sent.
	again := body[contracts.ApptBookedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	require.Equal(t, appts[0].AppointmentGUID, again.AppointmentGUID)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3)
}

// Rate limited on all 10 attempts → failed (archived, dead-letter record),
// reservation released.
func TestQueuedBookingExhausted(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	for i := 0; i < 12; i++ {
		a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited())
	}
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)
	require.Equal(t, 10, op.Attempts)
	require.Equal(t, 10, op.MaxAttempts)
	require.NotNil(t, op.LastError)
	require.Equal(t, "Rate limited", *op.LastError)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 12, "2 sync + 10 async")
	state, _ := a.e.Reservations.State(hold(start, bt.Column))
	require.Empty(t, state, "released after the last attempt")
	// Not silent: booking_failed, queue-status' next step, the metric.
	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.Equal(t, contracts.EventBookingFailed, evs[0].Event)
	require.Equal(t, contracts.BookingErrRateLimit, evs[0].ErrorType)
	require.Equal(t, "Rate limited", evs[0].Reason)
	require.Equal(t, 10, evs[0].Attempts)
	require.Equal(t, contracts.FailedNextStep(contracts.OpSetAppointment, contracts.BookingErrRateLimit, false), evs[0].NextStep)
	require.Contains(t, evs[0].NextStep, "Call the family back to rebook")
	require.Equal(t, contracts.BookingErrRateLimit, op.ErrorType)
	require.Equal(t, evs[0].NextStep, op.NextStep)
	require.Equal(t, evs[0].FailedAt, op.FailedAt)
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", "RATE_LIMIT"))
	require.Eventually(t, func() bool {
		recs, err := a.rt.DLQ.List(ctx, asynqrt.QueueCritical, 0, 10)
		return err == nil && len(recs) == 1 && recs[0].TaskID == q.OperationID
	}, 5*time.Second, 20*time.Millisecond, "the durable dead-letter record")
}

// No duplicate appointment: the async attempt times out after Cloud9 made
// the appointment; the next attempt asks GetAppointmentListByPatient, finds
// it and completes without sending SetAppointment again.
func TestUncertainAttemptIsCheckedNotResent(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.Committed{Err: bt.Timeout()})
	a.e.Cloud9.ListHide = true // Cloud9 may not say which column: match on the start time
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 2, op.Attempts)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3, "2 sync + 1 async, never a 4th")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcGetAppointmentListByPatient), 1)
	require.Len(t, a.e.Cloud9.Appointments(bt.Patient), 1, "one appointment")
	require.Equal(t, a.e.Cloud9.Appointments(bt.Patient)[0].AppointmentGUID, op.Result.AppointmentGUID)
}

// The sync call timed out (after commit): the task is queued with
// CheckFirst and its first attempt finds the appointment.
func TestSyncUncertainOutcomeRecoveredByTheWorker(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Committed{Err: bt.Timeout()})
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Len(t, a.e.Cloud9.Appointments(bt.Patient), 1)
}

// A limiter deferral re-runs the task later without spending an attempt.
func TestLimiterDeferralDoesNotBurnAttempts(t *testing.T) {
	t.Parallel()
	a := setupAsync(t, func(c *booking.Config) { c.AsyncMaxAttempts = 1 })
	a.e.Limiter.Script(cloud9.ProcSetAppointment, 16*time.Second) // sync: beyond the 15 s in-call wait → queued
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	require.Equal(t, contracts.QueueReasonLimiterWait, q.Debug.QueueReason)
	// async: refused three times, 20 ms each; a single attempt still suffices
	// (and on the only — last — attempt the worker waits in the handler).
	a.e.Limiter.Script(cloud9.ProcSetAppointment, 20*time.Millisecond, 20*time.Millisecond, 20*time.Millisecond)
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
}

func TestLimiterDeferralBeforeTheLastAttempt(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.e.Limiter.Script(cloud9.ProcSetAppointment, 30*time.Millisecond, 30*time.Millisecond)
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts, "deferrals are not attempts")
	require.Equal(t, 2.0, metric(t, a.reg, "flowgate_booking_deferred_total", "procedure", "SetAppointment"))
}

// SLOT_NOT_AVAILABLE is final: archived at once, reservation released.
func TestQueuedBookingSlotTaken(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.SlotTaken())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)
	require.Equal(t, 1, op.Attempts)
	require.Contains(t, *op.LastError, "SLOT_NOT_AVAILABLE")
	state, _ := a.e.Reservations.State(hold(start, bt.Column))
	require.Empty(t, state)
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", "SLOT_NOT_AVAILABLE"))
}

// A queued patient is created by the worker; its session is cached so the
// same call's createAppt finds the token by uui.
func TestQueuedPatientCreated(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited())
	q := body[contracts.PatientQueuedResponse](t, a.s.CreatePatient(ctx, parent()))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, contracts.OpSetPatient, op.OperationType)
	require.Equal(t, "Mary Smith", op.PatientName)
	guid := op.Result.PatientGUID
	require.NotEmpty(t, guid)
	sess, found, err := a.e.Sessions.Lookup(ctx, "", "call-session-123")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, guid, sess.PatientGUID)

	req := request(a.e)
	req.PatientGUID, req.BookingAuthToken = "", ""
	r := body[contracts.ApptBookedResponse](t, a.s.CreateAppt(ctx, req))
	require.Equal(t, guid, r.Debug.RequestParams.PatientGUID)
	require.Equal(t, contracts.EventPatientCreated, a.e.Events.All()[0].Event)
}

func TestQueueStatusPages(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	var ids []string
	for i := 0; i < 5; i++ {
		id := booking.NewOperationID("op", time.Now().Add(time.Duration(i)*time.Millisecond))
		ids = append(ids, id)
		require.NoError(t, a.w.EnqueueAppointment(ctx, booking.AppointmentTask{OperationID: id,
			CreatedAt:   bt.T0.Add(time.Duration(i) * time.Minute),
			Appointment: booking.Appointment{PatientGUID: bt.Patient, StartTime: start, ChildName: "c"}}))
	}
	// An unrelated task in the same queue is not an operation.
	_, err := a.rt.Client.Enqueue(asynq.NewTask("other:type", nil), asynq.Queue(asynqrt.QueueCritical))
	require.NoError(t, err)
	// Enqueueing the same operation again is a no-op.
	require.NoError(t, a.w.EnqueueAppointment(ctx, booking.AppointmentTask{OperationID: ids[0], Appointment: booking.Appointment{PatientGUID: bt.Patient}}))

	p1, err := a.s.QueueStatus(ctx, contracts.QueueStatusQuery{PageSize: 2, Operator: true})
	require.NoError(t, err)
	require.Equal(t, 5, p1.Total)
	require.Equal(t, 5, p1.Pending)
	require.Equal(t, 3, p1.TotalPages)
	require.Equal(t, []string{ids[4], ids[3]}, []string{p1.Operations[0].ID, p1.Operations[1].ID}, "newest first")
	require.NotNil(t, p1.NextCursor)
	p3, err := a.s.QueueStatus(ctx, contracts.QueueStatusQuery{PageSize: 2, Cursor: "3", Operator: true})
	require.NoError(t, err)
	require.Len(t, p3.Operations, 1)
	require.Equal(t, ids[0], p3.Operations[0].ID)
	require.Nil(t, p3.NextCursor)
	_, err = a.s.QueueStatus(ctx, contracts.QueueStatusQuery{Cursor: "x"})
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
}

func TestRedisMarks(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	m := &booking.RedisMarks{Client: db.Client}
	key := booking.IdentityKey(bt.Patient, "01/21/2026 10:00 AM", bt.Column)
	require.Equal(t, key, booking.IdentityKey(" "+bt.Patient+" ", "1/21/2026 10:00:00 AM", bt.Column), "same booking, other spelling")
	// The lease is a lock: one holder at a time, released only by its owner.
	got, _, err := m.Claim(ctx, key, booking.Lease{Owner: "a", ChildName: "Johnny Smith"}, time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	got, holder, err := m.Claim(ctx, key, booking.Lease{Owner: "b", ChildName: "Jane Smith"}, time.Minute)
	require.NoError(t, err)
	require.False(t, got)
	require.Equal(t, booking.Lease{Owner: "a", ChildName: "Johnny Smith"}, holder)
	held, err := m.Begin(ctx, key, "b", time.Minute)
	require.NoError(t, err)
	require.False(t, held, "no mark without the lease")
	in, err := m.InFlight(ctx, key)
	require.NoError(t, err)
	require.False(t, in)
	held, err = m.Release(ctx, key, "b")
	require.NoError(t, err)
	require.False(t, held, "not b's to release")
	held, err = m.Begin(ctx, key, "a", time.Minute)
	require.NoError(t, err)
	require.True(t, held)
	in, _ = m.InFlight(ctx, key)
	require.True(t, in)
	require.NoError(t, m.Clear(ctx, key, "b"))
	in, _ = m.InFlight(ctx, key)
	require.True(t, in, "not b's to clear")
	require.NoError(t, m.Done(ctx, key, "a", booking.DoneRecord{AppointmentGUID: "appt-1", ChildName: "Johnny Smith"}))
	in, _ = m.InFlight(ctx, key)
	require.False(t, in)
	got, _, _ = m.Claim(ctx, key, booking.Lease{Owner: "c"}, time.Minute)
	require.True(t, got, "Done released a's lease")
	g, ok, err := m.Completed(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, booking.DoneRecord{AppointmentGUID: "appt-1", ChildName: "Johnny Smith"}, g)
	// A Done mark that is a bare GUID still reads (CHANGELOG.md, 2026-11-21).
	require.NoError(t, db.Client.Set(ctx, "flowgate:booking:{"+key+"}:done", "appt-0", time.Minute).Err())
	g, _, _ = m.Completed(ctx, key)
	require.Equal(t, "appt-0", g.AppointmentGUID)
	require.NoError(t, m.Forget(ctx, key, "appt-9"))
	_, ok, _ = m.Completed(ctx, key)
	require.True(t, ok, "Forget deletes only the named appointment's mark")
	require.NoError(t, m.Forget(ctx, key, "APPT-0"))
	_, ok, _ = m.Completed(ctx, key)
	require.False(t, ok)
	require.NoError(t, m.Done(ctx, key, "c", booking.DoneRecord{AppointmentGUID: "appt-1"}))
	ttl := db.Client.TTL(ctx, "flowgate:booking:{"+key+"}:done").Val()
	require.InDelta(t, booking.DefaultDoneTTL.Seconds(), ttl.Seconds(), 5)
	require.Equal(t, time.Hour, booking.DefaultDoneTTL, "the retry horizon, not a day")
}

func TestRedisEventsPublish(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sub := db.Client.Subscribe(ctx, contracts.BookingEventsChannel)
	defer sub.Close()
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	ev := contracts.BookingCompletedEvent{Event: contracts.EventBookingCompleted, OperationID: "op-1", PatientGUID: bt.Patient, Attempts: 2}
	require.NoError(t, booking.RedisEvents{Client: db.Client}.Publish(ctx, ev))
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(cctx)
	require.NoError(t, err)
	var got contracts.BookingCompletedEvent
	require.NoError(t, json.Unmarshal([]byte(msg.Payload), &got))
	require.Equal(t, ev, got)
}

// metric returns the value of one counter series of reg (0 when absent);
// labels are name, value pairs.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// The sync call times out after commit (queued with CheckFirst); the IVA
// asks again before the worker runs and the sync path recovers the booking
// (list check, note added). The queued task then finds it done: no
// SetAppointment, no second note.
func TestQueuedTaskFindsTheBookingDone(t *testing.T) {
	t.Parallel()
	a := setupAsync(t, func(c *booking.Config) { c.LeaseGrace = time.Millisecond })
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Committed{Err: bt.Timeout()})
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	time.Sleep(20 * time.Millisecond) // the lease kept after the uncertain outcome lapses
	again := body[contracts.ApptBookedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	require.True(t, again.Debug.Recovered)
	require.True(t, again.NoteAdded)

	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, again.AppointmentGUID, op.Result.AppointmentGUID)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 1)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatientComment), 1)
	require.Len(t, a.e.Cloud9.Appointments(bt.Patient), 1)
}

// A queued task whose booking another attempt holds (the lease: say the
// sync path of a re-sent createAppt is at Cloud9) waits without spending
// attempts and without sending, then books once the lease is free.
func TestQueuedTaskWaitsForTheLease(t *testing.T) {
	t.Parallel()
	a := setupAsync(t, func(c *booking.Config) { c.LeaseGrace = 20 * time.Millisecond })
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	marks := &booking.RedisMarks{Client: a.db.Client}
	key := booking.IdentityKey(bt.Patient, start, bt.Column)
	got, _, err := marks.Claim(ctx, key, booking.Lease{Owner: "other-attempt", ChildName: "Johnny Smith"}, 2*time.Second)
	require.NoError(t, err)
	require.True(t, got)
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 1, op.Attempts, "waiting for the lease spends no attempt")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3, "2 sync + 1 async")
	require.GreaterOrEqual(t, metric(t, a.reg, "flowgate_booking_deferred_total", "procedure", "lease"), 1.0)
}

// A queued booking of a sibling (same patient, same slot) whose Done mark
// names another child fails for good as DUPLICATE_SLOT_BLOCKED: it is
// never completed with the other child's appointment, and the other
// child's reservation stays.
func TestQueuedSiblingOnTheSameSlotFails(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	// No call named: in one call Johnny would be refused as the sibling of
	// Jane's queued booking before booking (callslots.go).
	jane, jr := request(a.e), request(a.e)
	jane.ChildName = "Jane Smith"
	jane.SessionID, jane.UUI, jr.SessionID, jr.UUI = "", "", "", ""
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, jane))
	johnny := body[contracts.ApptBookedResponse](t, a.s.CreateAppt(ctx, jr))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)
	require.Contains(t, *op.LastError, contracts.BookingErrDuplicateSlot)
	require.Equal(t, 1, op.Attempts)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3, "2 sync for Jane + 1 for Johnny")
	evs := a.e.Events.All()
	require.Len(t, evs, 1, "no booking_completed for Jane")
	require.Equal(t, contracts.EventBookingFailed, evs[0].Event)
	require.Equal(t, contracts.BookingErrDuplicateSlot, evs[0].ErrorType)
	require.Equal(t, "Jane Smith", evs[0].ChildName)
	require.Contains(t, evs[0].NextStep, "another child")
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetAppointment", "class", contracts.BookingErrDuplicateSlot))
	state, _ := a.e.Reservations.State(hold(start, bt.Column))
	require.Equal(t, "confirmed", state)
	require.Len(t, a.e.Cloud9.Appointments(bt.Patient), 1)
	require.Equal(t, johnny.AppointmentGUID, a.e.Cloud9.Appointments(bt.Patient)[0].AppointmentGUID)
}

// A queued patient Cloud9 refuses for good (a permanent code under
// ResponseStatus Error) is archived after one attempt, not retried ten
// times; a generic error is still retried.
func TestQueuedPatientRefusedIsNotRetried(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited(),
		bt.StatusError(cloud9.ProcSetPatient, 3, "Error: invalid parameter birthdayDateTime"))
	q := body[contracts.PatientQueuedResponse](t, a.s.CreatePatient(ctx, parent()))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpFailed)
	require.Equal(t, 1, op.Attempts)
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetPatient), 4, "3 sync + 1 async")
	require.Equal(t, 1.0, metric(t, a.reg, "flowgate_booking_failed_total", "operation", "SetPatient", "class", "CLOUD9_ERROR"))
	evs := a.e.Events.All()
	require.Len(t, evs, 1)
	require.Equal(t, contracts.BookingCompletedEvent{Event: contracts.EventBookingFailed, OperationID: q.OperationID,
		OperationType: contracts.OpSetPatient, PatientName: "Mary Smith", PhoneNumber: "412-555-0100", Attempts: 1,
		CompletedAt: evs[0].CompletedAt, FailedAt: evs[0].CompletedAt, ErrorType: "CLOUD9_ERROR",
		Reason:   "CLOUD9_ERROR: Error: invalid parameter birthdayDateTime",
		NextStep: "Call the family back: their patient record could not be created in Cloud9, so nothing was booked."}, evs[0])
	require.Equal(t, evs[0].NextStep, op.NextStep)
	require.Equal(t, "CLOUD9_ERROR: Error: invalid parameter birthdayDateTime: skip retry for the task", *op.LastError)

	b := setupAsync(t)
	b.e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited(),
		bt.StatusError(cloud9.ProcSetPatient, 99, "Error: something went wrong"))
	q = body[contracts.PatientQueuedResponse](t, b.s.CreatePatient(ctx, parent()))
	b.start(t)
	op = b.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, 2, op.Attempts)
}

// A queued booking re-holds its slot before each attempt: the hold taken at
// queueing may have lapsed (attempt 5 starts ≥ 310 s later), and the slot
// must not be offered to other sessions while the booking is still tried.
func TestQueuedBookingKeepsItsHold(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	h := hold(start, bt.Column)
	state, session := a.e.Reservations.State(h)
	require.Equal(t, "confirmed", state)
	h.SessionID = session
	require.NoError(t, a.e.Reservations.Release(ctx, h)) // the hold lapsed while queued
	var heldAtCall atomic.Value
	a.e.Cloud9.Hook = func(procedure string) {
		if procedure == cloud9.ProcSetAppointment {
			st, _ := a.e.Reservations.State(h)
			heldAtCall.Store(st)
		}
	}
	a.start(t)
	a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.Equal(t, "confirmed", heldAtCall.Load(), "the slot was held again when the queued attempt called Cloud9")
}

// The drift of issue #7: a queued booking Cloud9 refuses as
// SLOT_NOT_AVAILABLE leaves the slot cache like a sync refusal does, so
// its bookingToken is refused afterwards (docs/reference/nodered-endpoints.md §1.2 step 9).
func TestQueuedSlotRefusalLeavesTheSlotCache(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	ref := booking.SlotRef{StartTime: start, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column,
		AppointmentTypeGUID: bt.Type, Minutes: 45}
	tok, err := bt.BookingTokens{}.Encode(ref)
	require.NoError(t, err)
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: a.e.Token(bt.Patient), BookingToken: tok,
		ChildName: "Johnny Smith", SessionID: "call-session-123"}
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited(), bt.SlotTaken())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, req))
	a.start(t)
	a.waitOp(t, q.OperationID, contracts.OpFailed)

	require.Equal(t, []booking.SlotRef{ref}, a.e.Slots.Invalidated, "the refused slot left the slot cache")
	again := body[contracts.ApptValidationResponse](t, a.s.CreateAppt(ctx, req))
	require.Equal(t, []string{"bookingToken"}, again.Debug.InvalidFields, "its bookingToken is refused afterwards")
	require.Len(t, a.e.Cloud9.Calls(cloud9.ProcSetAppointment), 3, "never sent again")
}

// Cloud9 takes longer than the worker's bookkeeping budget (5 s) to
// refuse the note of a queued booking: the note is still queued — and
// added by its own task — and booking_completed is still published. Both
// used what the note's call had left of that budget: nothing.
func TestSlowNoteRefusalOfAQueuedBookingIsQueued(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	a.e.Cloud9.Script(cloud9.ProcSetPatientComment, bt.Timeout())
	var slowed atomic.Bool
	a.e.Cloud9.Hook = func(procedure string) {
		if procedure == cloud9.ProcSetPatientComment && slowed.CompareAndSwap(false, true) {
			time.Sleep(5500 * time.Millisecond)
		}
	}
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	a.start(t)
	op := a.waitOp(t, q.OperationID, contracts.OpCompleted)
	require.NotNil(t, op.Result)
	require.Eventually(t, func() bool { return len(a.e.Cloud9.Calls(cloud9.ProcSetPatientComment)) == 2 },
		30*time.Second, 20*time.Millisecond, "the refused note was not queued")
	evs := a.e.Events.All()
	require.Len(t, evs, 1, "booking_completed was not published")
	require.Equal(t, contracts.EventBookingCompleted, evs[0].Event)
}
