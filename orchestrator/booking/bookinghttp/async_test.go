package bookinghttp_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

// The seed's flow over HTTP with a real Asynq runtime: createPatient, then
// createAppt rate limited twice → queued; the worker books it; queue-status
// shows the caller its operation completed (by operationId, sessionId or
// uui, without names) and the operator the queue with names.
func TestQueuedBookingOverHTTP(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	e := bt.NewEnv()
	reg := prometheus.NewRegistry()
	rt, err := asynqrt.New(asynqrt.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 4,
		ShutdownTimeout: time.Second, DelayedCheck: 20 * time.Millisecond, Logger: bt.Discard(), Registerer: reg})
	require.NoError(t, err)
	t.Cleanup(func() { rt.Shutdown(); _ = rt.Close() })
	deps := e.Deps(nil)
	deps.Marks = &booking.RedisMarks{Client: db.Client}
	deps.Events = booking.MultiEvents{e.Events, booking.RedisEvents{Client: db.Client}}
	w, err := booking.NewWorker(rt, deps, booking.Config{Logger: bt.Discard(), Registerer: reg,
		QueueDelay: time.Millisecond, Backoff: booking.BackoffPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	require.NoError(t, err)
	w.Register()
	deps.Queue = w
	svc, err := booking.New(deps, e.Config())
	require.NoError(t, err)
	srv := newServer(t, svc, "")

	// The parent, then Johnny's booking without token or GUID: both come
	// from the session cache by uui.
	r := srv.do(t, http.MethodPost, base+"/createPatient", mustJSON(t, parent()))
	require.Equal(t, 200, r.status, "%s", r.body)
	var pat contracts.PatientCreatedResponse
	require.NoError(t, json.Unmarshal(r.body, &pat))

	e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	req := appt(e)
	req.PatientGUID, req.BookingAuthToken = "", ""
	r = srv.do(t, http.MethodPost, base+"/createAppt", mustJSON(t, req))
	require.Equal(t, 200, r.status)
	var q contracts.ApptQueuedResponse
	require.NoError(t, json.Unmarshal(r.body, &q))
	require.True(t, q.Queued, "%s", r.body)
	require.Equal(t, pat.PatientGUID, q.Debug.RequestParams.PatientGUID)

	require.NoError(t, rt.Start())
	// The caller follows its own operation by operationId: no names, only
	// that operation.
	var st contracts.QueueStatusResponse
	require.Eventually(t, func() bool {
		r = srv.do(t, http.MethodGet, base+"/queue-status?operationId="+q.OperationID, nil)
		st = contracts.QueueStatusResponse{}
		return r.status == 200 && json.Unmarshal(r.body, &st) == nil && st.Completed == 1
	}, 60*time.Second, 20*time.Millisecond, "the queued booking completes")
	require.Equal(t, q.OperationID, st.Operations[0].ID)
	bt.Golden(t, "queue_status_completed", r.body)
	// By its call's sessionId or uui: the same operation; nothing without a key.
	for _, key := range []string{"sessionId=" + req.SessionID, "uui=" + req.UUI} {
		r = srv.do(t, http.MethodGet, base+"/queue-status?"+key, nil)
		require.Equal(t, 200, r.status)
		bt.Golden(t, "queue_status_completed", r.body)
	}
	r = srv.do(t, http.MethodGet, base+"/queue-status", nil)
	bt.Golden(t, "queue_status_anonymous_empty", r.body)
	// The operator (the monitoring credentials) sees the queue with names.
	ops := newServerWith(t, svc, "", bookinghttp.Config{Logger: bt.Discard(), Operator: func(*fiber.Ctx) bool { return true }})
	r = ops.do(t, http.MethodGet, base+"/queue-status", nil)
	require.Equal(t, 200, r.status)
	bt.Golden(t, "queue_status_completed_operator", r.body)
	require.Len(t, e.Cloud9.Appointments(pat.PatientGUID), 1)
	require.Len(t, e.Events.All(), 1)
}
