package test

import (
	"context"
	"fmt"
	"net/http"
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

// bookConsultation end to end against the built binary, a real
// Redis and the simulator as its own process.

// consultation is a parent with one child per slot.
func consultation(session string, slots []contracts.ApptSlot) contracts.BookConsultationRequest {
	r := contracts.BookConsultationRequest{ParentFirstName: "Pat", ParentLastName: "Parker", ParentPhone: "412-555-0142",
		InsuranceProvider: "Aetna", SessionID: session}
	for i, s := range slots {
		r.Children = append(r.Children, contracts.ConsultationChild{FirstName: fmt.Sprintf("Kid%d", i+1), LastName: "Parker",
			DOB: fmt.Sprintf("04/%02d/2016", i+1), StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID,
			ScheduleColumnGUID: s.ScheduleColumnGUID, AppointmentTypeGUID: s.AppointmentTypeGUID})
	}
	return r
}

func (c *bookingClient) consult(req contracts.BookConsultationRequest, wantStatus int) contracts.ConsultationResponse {
	c.t.Helper()
	status, raw := c.post("bookConsultation", req)
	require.Equal(c.t, wantStatus, status, truncate(raw))
	return strictDecode[contracts.ConsultationResponse](c.t, raw)
}

// apptOps are the appointment operations a 202 answer names.
func apptOps(t *testing.T, r contracts.ConsultationResponse) []string {
	t.Helper()
	var ops []string
	for _, c := range r.Children {
		if c.Appointment.Queued {
			require.NotEmpty(t, c.Appointment.OperationID)
			ops = append(ops, c.Appointment.OperationID)
		}
	}
	return ops
}

// requireOnce: the simulator holds exactly the patients and appointments
// of the consultation, each appointment once at its slot.
func requireOnce(t *testing.T, st cloud9sim.StateJSON, slots []contracts.ApptSlot, patients int) {
	t.Helper()
	require.Equal(t, patients, st.Patients, "patients in Cloud9")
	require.Len(t, st.Appointments, len(slots), "appointments in Cloud9")
	for _, s := range slots {
		n := 0
		for _, a := range st.Appointments {
			if sameStart(a.StartTime, s.StartTime) && strings.EqualFold(a.ScheduleColumnGUID, s.ScheduleColumnGUID) {
				n++
			}
		}
		require.Equal(t, 1, n, "appointments at %s", s.StartTime)
	}
}

// TestConsultationUnderCloud9Limit: the simulator at 5 writes/min per
// procedure (scale 10: a simulated minute is 6 real seconds), flowgate's
// window limiter at the same rate, a 2 s sync budget. A parent and six
// children need seven SetPatient, two more than the window's five → 202
// (the first five patients made now, the rest queued with their operation
// ids); everything completes in the background exactly once, without one
// "Too many requests". (Three children fit the window: in-call, see
// e2e_incall_test.go.)
func TestConsultationUnderCloud9Limit(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 10, "5/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "5/6s", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "25ms", "BOOKING_SYNC_BUDGET": "2s",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "2s",
	}))
	c := newBookingClient(t, p)
	slots := distinctSlots(t, c.slots("call-consult", 6), 6)
	start := time.Now()
	r := c.consult(consultation("call-consult", slots), http.StatusAccepted)
	t.Logf("202 after %s: parent created %v, children queued %d", time.Since(start).Round(time.Millisecond), r.Parent.Created, len(apptOps(t, r)))
	require.True(t, r.AnyQueued)
	require.True(t, r.Parent.Created)
	require.NotEmpty(t, r.OperationID)
	ops := apptOps(t, r)
	require.NotEmpty(t, ops, "nothing queued")
	for _, id := range ops {
		c.waitOp(id, contracts.OpCompleted, 90*time.Second)
	}
	t.Logf("all complete %s after the call", time.Since(start).Round(time.Millisecond))
	st := sim.state()
	requireOnce(t, st, slots, 7)
	require.Equal(t, 7, st.Calls["SetPatient"], "SetPatient sent again")
	require.Equal(t, 6, st.Calls["SetAppointment"], "SetAppointment sent again")
	require.Zero(t, st.RateLimited["SetPatient"]+st.RateLimited["SetAppointment"]+st.RateLimited["SetPatientComment"], "code 8 provoked")

	// The call repeated: every child answered from the marks, nothing sent.
	again := c.consult(consultation("call-consult", slots), http.StatusOK)
	for _, ch := range again.Children {
		require.True(t, ch.Cached && ch.Appointment.Booked, "%+v", ch)
	}
	st = sim.state()
	requireOnce(t, st, slots, 7)
	require.Equal(t, 6, st.Calls["SetAppointment"])
}

// TestConsultationCrashDrill: SIGKILL flowgate while the consultation
// task's SetPatient of a child is in flight (the simulator has created the
// patient and holds the answer), start a new flowgate on the same Redis:
// the task is recovered, the child's step finds the in-flight mark, looks
// the patient up (GetPortalPatientLookup) instead of sending SetPatient
// again, and the appointments are made — no patient and no appointment
// twice. The task's Asynq lease and the step's own lease are
// fast-forwarded as in TestBookingCrashDrill.
func TestConsultationCrashDrill(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 1, "off")
	env := bookingEnv(db.URL(), sim, "1/2s", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_BUDGET": "1s",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
	})
	p1 := startFlowgate(t, env)
	c1 := newBookingClient(t, p1)
	slots := distinctSlots(t, c1.slots("call-consult-crash", 3), 3)
	req := consultation("call-consult-crash", slots)
	r := c1.consult(req, http.StatusAccepted)
	require.True(t, r.Parent.Created)
	ops := apptOps(t, r)
	require.Len(t, ops, 3, "every child queued behind the 1/2s limiter")

	// The task's first SetPatient commits, then its answer is held and the
	// connection would be dropped: in flight until the kill.
	sim.setFaults(cloud9sim.FaultsJSON{Latency: "60s", Procedures: []string{"SetPatient"},
		DropAfterCommit: map[string]int{"SetPatient": 1}})
	require.Eventually(t, func() bool { return sim.state().Patients == 2 }, 15*time.Second, 20*time.Millisecond,
		"the task's SetPatient never reached the simulator")
	insp := asynq.NewInspector(db.AsynqOpt())
	defer insp.Close()
	info, err := insp.GetTaskInfo("critical", r.OperationID)
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateActive, info.State, "the consultation task is not running")
	p1.Kill()
	killed := time.Now()
	callsAtKill := sim.state().Calls["SetPatient"]
	require.Equal(t, 2, callsAtKill, "the parent, and the child's call in flight")
	sim.setFaults(cloud9sim.FaultsJSON{})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := db.Client.ZAddXX(ctx, "asynq:{critical}:lease",
		redis.Z{Score: float64(time.Now().Add(-2 * time.Minute).Unix()), Member: r.OperationID}).Result()
	require.NoError(t, err)
	require.Zero(t, n)
	leases, err := db.Client.Keys(ctx, "flowgate:booking:*consult-patient*:lease").Result()
	require.NoError(t, err)
	require.Len(t, leases, 1, "the killed step's lease")
	require.NoError(t, db.Client.Del(ctx, leases...).Err())

	p2 := startFlowgate(t, env)
	c2 := newBookingClient(t, p2)
	for _, id := range ops {
		c2.waitOp(id, contracts.OpCompleted, 30*time.Second)
	}
	t.Logf("recovered and completed %.1f s after the SIGKILL", time.Since(killed).Seconds())
	st := sim.state()
	requireOnce(t, st, slots, 4)
	require.Equal(t, callsAtKill+2, st.Calls["SetPatient"], "the in-flight child's SetPatient was sent again")
	require.GreaterOrEqual(t, st.Calls["GetPortalPatientLookup"], 1, "the recovered step did not look the patient up")
	require.Equal(t, 3, st.Calls["SetAppointment"])
	require.NotEmpty(t, p2.LogLines("patient found after an uncertain SetPatient; not sending it again"))

	// The caller retries the whole call against the new process: answered
	// from the marks.
	again := c2.consult(req, http.StatusOK)
	require.Equal(t, *r.Parent.PatientGUID, *again.Parent.PatientGUID)
	requireOnce(t, sim.state(), slots, 4)
}
