package booking_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// hung is every Redis-backed dependency with Redis hung: each call blocks
// until its context ends (what go-redis does with ContextTimeoutEnabled).
type hung struct{}

func wait(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

func (hung) Claim(ctx context.Context, _ string, _ booking.Lease, _ time.Duration) (bool, booking.Lease, error) {
	return false, booking.Lease{}, wait(ctx)
}
func (hung) Extend(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return false, wait(ctx)
}
func (hung) Release(ctx context.Context, _, _ string) (bool, error) { return false, wait(ctx) }
func (hung) Begin(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return false, wait(ctx)
}
func (hung) InFlight(ctx context.Context, _ string) (bool, error) { return false, wait(ctx) }
func (hung) Clear(ctx context.Context, _, _ string) error         { return wait(ctx) }
func (hung) Done(ctx context.Context, _, _ string, _ booking.DoneRecord) error {
	return wait(ctx)
}
func (hung) Completed(ctx context.Context, _ string) (booking.DoneRecord, bool, error) {
	return booking.DoneRecord{}, false, wait(ctx)
}
func (hung) Forget(ctx context.Context, _, _ string) error         { return wait(ctx) }
func (hung) Reserve(ctx context.Context, _ booking.SlotHold) error { return wait(ctx) }
func (hung) Confirm(ctx context.Context, _ booking.SlotHold) error { return wait(ctx) }
func (hung) Put(ctx context.Context, _ booking.Session) error      { return wait(ctx) }
func (hung) Allow(ctx context.Context, _ string) (bool, time.Duration, error) {
	return false, 0, wait(ctx)
}
func (hung) Lookup(ctx context.Context, _, _ string) (booking.Session, bool, error) {
	return booking.Session{}, false, wait(ctx)
}
func (hung) HeldByOthers(ctx context.Context, _ string, _ []booking.SlotHold) ([]bool, error) {
	return nil, wait(ctx)
}
func (hung) EnqueueAppointment(ctx context.Context, _ booking.AppointmentTask) error {
	return wait(ctx)
}
func (hung) EnqueuePatient(ctx context.Context, _ booking.PatientTask) error { return wait(ctx) }
func (hung) EnqueueNote(ctx context.Context, _ booking.NoteTask) error       { return wait(ctx) }
func (hung) Status(ctx context.Context, _ contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	return contracts.QueueStatusResponse{}, wait(ctx)
}

// hungReservations is hung's Reservations (Release clashes with Marks').
type hungReservations struct{ hung }

func (hungReservations) Release(ctx context.Context, _ booking.SlotHold) error { return wait(ctx) }

// hangBudget is the sync budget of these tests. They do not run in
// parallel: they measure wall-clock answer times.
const hangBudget = time.Second

// hungService is the service on the fakes with every Redis-backed
// dependency hung and a 1 s sync budget.
func hungService(t *testing.T, e *bt.Env) *booking.Service {
	t.Helper()
	d := e.Deps(hung{})
	d.Marks, d.Sessions, d.Limiter, d.Reservations = hung{}, hung{}, hung{}, hungReservations{}
	s, err := booking.New(d, func() booking.Config {
		c := e.Config()
		c.SyncBudget, c.RedisTimeout = hangBudget, 200*time.Millisecond
		return c
	}())
	require.NoError(t, err)
	return s
}

func timed(f func()) time.Duration {
	began := time.Now()
	f()
	return time.Since(began)
}

// Redis hung (docs/reference/README.md, principles): createAppt answers within the sync budget
// + 0.5 s, never as booked and without sending the booking unguarded (the
// lease cannot be taken); it cannot be queued either, so the caller is
// told it failed (TIMEOUT, transfer) — nothing is lost silently.
func TestHungRedisCreateApptAnswersWithinTheBudget(t *testing.T) {
	e := bt.NewEnv()
	s := hungService(t, e)
	var a booking.Answer
	took := timed(func() { a = s.CreateAppt(ctx, request(e)) })
	require.Less(t, took, hangBudget+500*time.Millisecond)
	r := body[contracts.ApptFailedResponse](t, a)
	require.Equal(t, contracts.BookingErrTimeout, r.Debug.ErrorType)
	require.Equal(t, contracts.ActionTransferToAgent, r.LLMGuidance.ActionRequired)
	require.Empty(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), "never sent without the lease")
}

// Auth fails closed: without a token the session cache would be the
// proof, and it cannot answer.
func TestHungRedisAuthFailsClosed(t *testing.T) {
	e := bt.NewEnv()
	s := hungService(t, e)
	req := request(e)
	req.BookingAuthToken = ""
	var a booking.Answer
	took := timed(func() { a = s.CreateAppt(ctx, req) })
	require.Less(t, took, hangBudget+500*time.Millisecond)
	r := body[contracts.ApptAuthRejectedResponse](t, a)
	require.Equal(t, contracts.BookingAuthMissing, r.Debug.ErrorType)
	require.Empty(t, e.Cloud9.Calls(""))
}

// createPatient: the patient is created at Cloud9 (the limiter fails
// open), its token issued; the session cache is skipped; within the budget.
func TestHungRedisCreatePatient(t *testing.T) {
	e := bt.NewEnv()
	s := hungService(t, e)
	var a booking.Answer
	took := timed(func() { a = s.CreatePatient(ctx, parent()) })
	require.Less(t, took, hangBudget+500*time.Millisecond)
	r := body[contracts.PatientCreatedResponse](t, a)
	require.NotEmpty(t, r.BookingAuthToken)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetPatient), 1)
}

// The slot endpoints fail open past RedisTimeout (the reservation filter),
// and queue-status answers UNAVAILABLE within the budget.
func TestHungRedisSlotsAndQueueStatus(t *testing.T) {
	e := bt.NewEnv()
	e.Slots.List = daySlots()
	s := hungService(t, e)
	var a booking.Answer
	took := timed(func() { a = s.GetApptSlots(ctx, contracts.GetApptSlotsRequest{StartDate: "01/21/2026"}) })
	require.Less(t, took, 500*time.Millisecond)
	require.Len(t, body[contracts.GetApptSlotsResponse](t, a).Slots, len(daySlots()), "not filtered (fail open)")

	took = timed(func() {
		a = s.GetGroupedApptSlots(ctx, contracts.GetGroupedApptSlotsRequest{StartDate: "01/21/2026", NumberOfPatients: 2})
	})
	require.Less(t, took, 500*time.Millisecond)
	require.False(t, a.Failed)

	var err error
	took = timed(func() { _, err = s.QueueStatus(ctx, contracts.QueueStatusQuery{Operator: true}) })
	require.Less(t, took, hangBudget+500*time.Millisecond)
	require.Equal(t, contracts.CodeUnavailable, contracts.ErrorCode(err))
}

// The reservation fails open: with only the reservation store hung the
// booking is still made (Cloud9 decides whether the slot is free), within
// the budget + 0.5 s.
func TestHungReservationsFailOpen(t *testing.T) {
	e := bt.NewEnv()
	d := e.Deps(nil)
	d.Reservations = hungReservations{}
	cfg := e.Config()
	cfg.SyncBudget = hangBudget
	s, err := booking.New(d, cfg)
	require.NoError(t, err)
	var a booking.Answer
	took := timed(func() { a = s.CreateAppt(ctx, request(e)) })
	require.Less(t, took, hangBudget+500*time.Millisecond)
	r := body[contracts.ApptBookedResponse](t, a)
	require.Len(t, e.Cloud9.Appointments(bt.Patient), 1)
	rec, done, err := e.Marks.Completed(ctx, booking.IdentityKey(bt.Patient, start, bt.Column))
	require.NoError(t, err)
	require.True(t, done, "recorded")
	require.Equal(t, r.AppointmentGUID, rec.AppointmentGUID)
}
