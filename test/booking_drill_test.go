package test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/redistest"
)

// Crash drills of the booking path against the built binary, a real Redis
// and the simulator as its own process: an appointment whose SetAppointment
// committed in Cloud9 but whose answer never came back must exist exactly
// once, whoever finishes the booking.

// drillRealTimeEnv set to 1 makes TestBookingCrashDrill wait for asynq's own
// lease expiry instead of fast-forwarding it (about 60–70 s: asynq's lease is
// 30 s, its recoverer takes tasks whose lease expired at least 30 s ago and
// runs at start and then once a minute).
const drillRealTimeEnv = "FLOWGATE_BOOKING_DRILL_REALTIME"

// TestBookingCrashDrill: SIGKILL flowgate while a queued booking's
// SetAppointment is in flight (the simulator has committed it and holds the
// answer, then drops the connection), start a new flowgate on the same
// Redis database: Asynq recovers the task, whose next attempt finds the
// in-flight mark, asks GetAppointmentListByPatient and completes without a
// second SetAppointment — exactly one appointment, queue-status completed.
//
// Asynq only recovers a task whose lease (30 s, extended while the worker
// lives) expired at least 30 s ago, and looks at start and then every
// minute: about 60 s of waiting no setting of flowgate or asynq shortens.
// The drill fast-forwards that clock instead — after the kill it moves the
// task's lease expiry in asynq:{critical}:lease 2 minutes into the past —
// so the new process' recoverer takes it at start; everything else (the
// recovery, the retry, the worker's check) is the real code path. Set
// FLOWGATE_BOOKING_DRILL_REALTIME=1 to wait for the real expiry instead.
func TestBookingCrashDrill(t *testing.T) {
	t.Parallel()
	realTime := os.Getenv(drillRealTimeEnv) == "1"
	db := redistest.New(t)
	sim := startSim(t, 1, "off")
	// The booking is queued by flowgate's spacing (1 write per 2 s; the
	// 1 s sync budget cannot wait for it), so the worker's SetAppointment
	// is its first call of that booking, 2 s after A's.
	env := bookingEnv(db.URL(), sim, "1/2s", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_BUDGET": "1s",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
	})
	p1 := startFlowgate(t, env)
	c1 := newBookingClient(t, p1)
	pat := c1.createPatient("Cora", "Crash", "call-crash")
	list := distinctSlots(t, c1.slots("call-crash", 2), 2)

	c1.booked(tokenReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Ann Crash", "call-crash"))
	reqB := apptReq(pat.PatientGUID, pat.BookingAuthToken, list[1], "Ben Crash", "call-crash")
	reqB.Note = "Child: Ben Crash | DOB: 02/02/2016"
	q := c1.queued(reqB, contracts.BookingErrRateLimitedQueued)
	require.Equal(t, contracts.QueueReasonLimiterWait, q.Debug.QueueReason)

	// The worker's SetAppointment commits, then its answer is held for
	// 60 s and the connection would be dropped: it is in flight until the
	// kill.
	sim.setFaults(cloud9sim.FaultsJSON{Latency: "60s", Procedures: []string{"SetAppointment"},
		DropAfterCommit: map[string]int{"SetAppointment": 1}})
	var committed cloud9sim.ApptJSON
	require.Eventually(t, func() bool {
		got := apptsAt(sim.state(), pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID)
		if len(got) == 1 {
			committed = got[0]
		}
		return len(got) == 1
	}, 15*time.Second, 20*time.Millisecond, "the worker's SetAppointment never reached the simulator")

	// In flight: asynq holds the task active under a lease; flowgate has
	// not logged an outcome.
	insp := asynq.NewInspector(db.AsynqOpt())
	defer insp.Close()
	info, err := insp.GetTaskInfo("critical", q.OperationID)
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateActive, info.State, "the task is not running")
	require.Empty(t, p1.LogLines("queued booking completed"))
	p1.Kill()
	killed := time.Now()
	callsAtKill := sim.state().Calls["SetAppointment"]
	require.Equal(t, 2, callsAtKill, "A, and the worker's call now in flight")
	sim.setFaults(cloud9sim.FaultsJSON{})

	if !realTime {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lease := "asynq:{critical}:lease"
		_, err := db.Client.ZScore(ctx, lease, q.OperationID).Result()
		require.NoError(t, err, "the killed worker holds no lease on %s", q.OperationID)
		n, err := db.Client.ZAddXX(ctx, lease, redis.Z{Score: float64(time.Now().Add(-2 * time.Minute).Unix()), Member: q.OperationID}).Result()
		require.NoError(t, err)
		require.Zero(t, n) // XX: updated, not added
		// The killed attempt also held the booking's own lease (it expires
		// a write timeout + margin after the claim): let that time pass too.
		// (The call's slot records share the lease form, keyed {call:…}:
		// they stay.)
		all, err := db.Client.Keys(ctx, "flowgate:booking:*:lease").Result()
		require.NoError(t, err)
		var keys []string
		for _, k := range all {
			if !strings.HasPrefix(k, "flowgate:booking:{call:") {
				keys = append(keys, k)
			}
		}
		require.Len(t, keys, 1, "the killed attempt's booking lease among %v", all)
		require.NoError(t, db.Client.Del(ctx, keys...).Err())
	}

	p2 := startFlowgate(t, env)
	c2 := newBookingClient(t, p2)
	wait := 20 * time.Second
	if realTime {
		wait = 100 * time.Second
	}
	op, all := c2.waitOp(q.OperationID, contracts.OpCompleted, wait)
	t.Logf("recovered and completed %.1f s after the SIGKILL (lease fast-forwarded: %v); queue-status: attempts %d, lastError %v",
		time.Since(killed).Seconds(), !realTime, op.Attempts, deref(op.LastError))

	st := sim.state()
	got := apptsAt(st, pat.PatientGUID, list[1].StartTime, list[1].ScheduleColumnGUID)
	require.Len(t, got, 1, "the booking exists %d times", len(got))
	require.Equal(t, committed.GUID, got[0].GUID)
	require.Equal(t, callsAtKill, st.Calls["SetAppointment"], "SetAppointment sent again after the restart")
	require.GreaterOrEqual(t, st.Calls["GetAppointmentListByPatient"], 1, "the recovered attempt did not check Cloud9")
	require.Len(t, st.Appointments, 2)
	require.Equal(t, 1, st.Comments, "the note is added once, by the new process")
	require.NotNil(t, op.Result)
	require.Equal(t, committed.GUID, op.Result.AppointmentGUID)
	require.Equal(t, 1, all.Completed)
	require.Zero(t, all.Failed)
	require.NotEmpty(t, p2.LogLines("appointment found after an uncertain attempt; not sending it again"))
	requireMetrics(t, p2, map[string]float64{`flowgate_booking_completed_total{operation="SetAppointment"}`: 1})

	// The same booking asked again (a repeated book_child): answered from
	// the Done mark, nothing sent.
	again := c2.booked(reqB)
	require.Equal(t, committed.GUID, again.AppointmentGUID)
	require.True(t, again.Debug.Recovered)
	require.Equal(t, callsAtKill, sim.state().Calls["SetAppointment"])
}

// TestBookingDropAfterCommitSyncPath: the simulator commits the sync
// path's SetAppointment and drops the connection → createAppt answers
// queued (TIMEOUT_QUEUED, uncertain_outcome) → the worker checks
// GetAppointmentListByPatient first and completes without sending it again.
func TestBookingDropAfterCommitSyncPath(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 1, "off")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
	}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Dora", "Drop", "call-drop")
	slot := c.slots("call-drop", 1)[0]

	sim.setFaults(cloud9sim.FaultsJSON{DropAfterCommit: map[string]int{"SetAppointment": 1}})
	req := tokenReq(pat.PatientGUID, pat.BookingAuthToken, slot, "Dan Drop", "call-drop")
	q := c.queued(req, contracts.BookingErrTimeoutQueued)
	require.Equal(t, contracts.QueueReasonUncertain, q.Debug.QueueReason)
	require.Equal(t, 1, q.Debug.SyncAttempts)
	st := sim.state()
	committed := apptsAt(st, pat.PatientGUID, slot.StartTime, slot.ScheduleColumnGUID)
	require.Len(t, committed, 1, "the dropped call did not commit")
	require.Equal(t, 1, st.Calls["SetAppointment"])

	op, _ := c.waitOp(q.OperationID, contracts.OpCompleted, 15*time.Second)
	require.NotNil(t, op.Result)
	require.Equal(t, committed[0].GUID, op.Result.AppointmentGUID)
	st = sim.state()
	require.Len(t, apptsAt(st, pat.PatientGUID, slot.StartTime, slot.ScheduleColumnGUID), 1, "duplicated")
	require.Len(t, st.Appointments, 1)
	require.Equal(t, 1, st.Calls["SetAppointment"], "SetAppointment sent again")
	require.GreaterOrEqual(t, st.Calls["GetAppointmentListByPatient"], 1)
	require.NotEmpty(t, p.LogLines("appointment found after an uncertain attempt; not sending it again"))

	// Asked again: the Done mark answers it, nothing is sent.
	again := c.booked(req)
	require.Equal(t, committed[0].GUID, again.AppointmentGUID)
	require.True(t, again.Debug.Recovered)
	require.Equal(t, 1, sim.state().Calls["SetAppointment"])
	require.Zero(t, sim.state().RateLimited["SetAppointment"])
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
