package bookingdeps_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// connOpt hands asynq our own client (ContextTimeoutEnabled, like every
// client of the sidecar).
type connOpt struct{ c redis.UniversalClient }

func (o connOpt) MakeRedisClient() any { return o.c }

// A real redis-server paused mid-run (docs/reference/README.md, principles): createAppt answers
// within BOOKING_SYNC_BUDGET + 0.5 s — never as booked, never sent
// unguarded (the lease cannot be taken), and since it cannot be queued
// either the caller is told so (TIMEOUT, transfer); a call without a
// token is refused (auth fails closed).
func TestPausedRedisBookingAnswersWithinTheBudget(t *testing.T) {
	srv := rediscluster.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	e := bt.NewEnv()
	holds, err := reservation.New(c, reservation.Config{KeyPrefix: "hang"})
	require.NoError(t, err)
	sessions, err := session.New(c, session.Config{KeyPrefix: "hang"})
	require.NoError(t, err)
	signer, err := authtoken.New(authtoken.Config{Secret: bt.Secret})
	require.NoError(t, err)
	rt, err := asynqrt.New(asynqrt.Config{ConnOpt: connOpt{c}, Redis: c, Servers: 1, Concurrency: 1,
		ShutdownTimeout: time.Second, Logger: bt.Discard(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	d := e.Deps(nil)
	d.Marks, d.Reservations = &booking.RedisMarks{Client: c, KeyPrefix: "hang:"}, bookingdeps.Reservations{R: holds}
	d.Sessions, d.Tokens = bookingdeps.Sessions{C: sessions}, bookingdeps.Tokens{S: signer}
	cfg := e.Config()
	cfg.SyncBudget, cfg.Registerer = time.Second, prometheus.NewRegistry()
	w, err := booking.NewWorker(rt, d, cfg)
	require.NoError(t, err)
	d.Queue = w
	cfg.Registerer = prometheus.NewRegistry()
	svc, err := booking.New(d, cfg)
	require.NoError(t, err)

	tok, err := d.Tokens.Issue("call-1", bt.Patient)
	require.NoError(t, err)
	req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: tok, StartTime: "01/21/2026 10:00 AM",
		ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 45,
		ChildName: "Johnny", SessionID: "call-1"}
	ctx := context.Background()
	_, ok := svc.CreateAppt(ctx, req).Body.(contracts.ApptBookedResponse)
	require.True(t, ok, "booked while Redis answers")

	srv.Pause() // SIGSTOP: connections stay open, every call hangs; resumed at cleanup
	req.StartTime = "01/21/2026 11:00 AM"
	began := time.Now()
	a := svc.CreateAppt(ctx, req)
	took := time.Since(began)
	t.Logf("createAppt with Redis paused answered in %v", took)
	require.Less(t, took, cfg.SyncBudget+500*time.Millisecond)
	r, ok := a.Body.(contracts.ApptFailedResponse)
	require.True(t, ok, "answer %T: never booked when it cannot be recorded", a.Body)
	require.Equal(t, contracts.BookingErrTimeout, r.Debug.ErrorType)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetAppointment), 1, "the second booking was never sent")

	req.BookingAuthToken = ""
	began = time.Now()
	a = svc.CreateAppt(ctx, req)
	require.Less(t, time.Since(began), cfg.SyncBudget+500*time.Millisecond)
	rej, ok := a.Body.(contracts.ApptAuthRejectedResponse)
	require.True(t, ok, "answer %T", a.Body)
	require.Equal(t, contracts.BookingAuthMissing, rej.Debug.ErrorType, "auth fails closed")
}
