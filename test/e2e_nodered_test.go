package test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/noderedtest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// The Node-RED switch-over kit (flows/node-red) in a real Node-RED 4: the
// seed's booking scenario through Node-RED's URLs with flowgate behind the
// proxy flow, the per-endpoint rollback switch, flowgate down, and the
// queue dashboard's status texts.

// exchange is one request Node-RED sent to flowgate and flowgate's answer.
type exchange struct {
	Method, Target, ContentType, Via string
	Body                             []byte
	Status                           int
	RespContentType                  string
	RespBody                         []byte
}

// recorder sits at FLOWGATE_URL in front of flowgate: it forwards every
// request as it came and records the exchange, so each Node-RED answer can
// be compared with flowgate's own answer to the very same request. hang
// makes it hold requests without answering (a flowgate that stopped
// answering); Close makes FLOWGATE_URL refuse connections (flowgate down).
type recorder struct {
	t        *testing.T
	upstream string
	srv      *httptest.Server

	mu   sync.Mutex
	log  []exchange
	hang chan struct{} // non-nil: hold requests until closed
}

func newRecorder(t *testing.T, upstream string) *recorder {
	r := &recorder{t: t, upstream: upstream}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.close)
	return r
}

func (r *recorder) close() {
	r.mu.Lock()
	if r.hang != nil {
		close(r.hang)
		r.hang = nil
	}
	r.mu.Unlock()
	r.srv.Close()
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	hang := r.hang
	r.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
		return
	}
	body, _ := io.ReadAll(req.Body)
	up, err := http.NewRequestWithContext(req.Context(), req.Method, r.upstream+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	up.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(up)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	r.mu.Lock()
	r.log = append(r.log, exchange{Method: req.Method, Target: req.URL.RequestURI(), ContentType: req.Header.Get("Content-Type"),
		Via: req.Header.Get("X-Flowgate-Via"), Body: body, Status: resp.StatusCode,
		RespContentType: resp.Header.Get("Content-Type"), RespBody: out})
	r.mu.Unlock()
	for _, h := range []string{"Content-Type", "X-Request-Id", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// dashboardPoll: the queue dashboard's own polls (flows/node-red/
// flowgate-queue-dashboard.json, every 10 s), which reach flowgate beside
// the switch-over kit's forwarded requests. They carry no X-Flowgate-Via;
// a kit request always does, and one that lost it still fails call: it is
// counted and fails the Via check or, on those two GETs, it is not counted.
func (e exchange) dashboardPoll() bool {
	path, _, _ := strings.Cut(e.Target, "?")
	return e.Via == "" && e.Method == http.MethodGet && (path == bookingBase+"/queue-status" || path == "/queue/stats")
}

// kit is the log without the dashboard's polls (r.mu held).
func (r *recorder) kit() []exchange {
	var out []exchange
	for _, e := range r.log {
		if !e.dashboardPoll() {
			out = append(out, e)
		}
	}
	return out
}

// count is how many requests other than the dashboard's polls reached
// flowgate.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.kit())
}

// last is the latest request other than a dashboard poll.
func (r *recorder) last() exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	kit := r.kit()
	require.NotEmpty(r.t, kit, "flowgate got no request")
	return kit[len(kit)-1]
}

func (r *recorder) setHang(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.hang == nil:
		r.hang = make(chan struct{})
	case !on && r.hang != nil:
		close(r.hang)
		r.hang = nil
	}
}

// nrClient drives Node-RED's URLs and checks each answer against what
// flowgate answered to the request Node-RED forwarded.
type nrClient struct {
	t   *testing.T
	nr  *noderedtest.Proc
	rec *recorder
}

// call sends method path (body JSON-encoded when not nil) to Node-RED and
// requires that it reached flowgate once, unchanged (method, path and
// query, content type, body), and that Node-RED answered exactly
// flowgate's status, content type and body.
func (c *nrClient) call(method, path string, body any) []byte {
	c.t.Helper()
	var raw []byte
	headers := map[string]string{}
	if b, ok := body.([]byte); ok {
		raw = b
	} else if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(c.t, err)
	}
	if body != nil {
		headers["Content-Type"] = "application/json"
	}
	before := c.rec.count()
	status, ct, out := c.nr.Do(c.t, method, path, headers, raw)
	require.Equal(c.t, before+1, c.rec.count(), "%s %s: want exactly one request to flowgate", method, path)
	ex := c.rec.last()
	require.Equal(c.t, method, ex.Method)
	require.Equal(c.t, path, ex.Target, "path and query reach flowgate unchanged")
	require.Equal(c.t, "node-red", ex.Via)
	if body != nil {
		require.Equal(c.t, "application/json", ex.ContentType)
		require.Equal(c.t, string(raw), string(ex.Body), "the body reaches flowgate byte for byte")
	} else {
		require.Empty(c.t, ex.Body)
	}
	require.Equal(c.t, ex.Status, status, "Node-RED answers flowgate's status: %s", truncate(out))
	require.Equal(c.t, ex.RespContentType, ct, "Node-RED answers flowgate's content type")
	require.Equal(c.t, string(ex.RespBody), string(out), "Node-RED answers flowgate's body byte for byte")
	return out
}

// admin is the kit's switch route.
func (c *nrClient) admin(method string, body any) (int, map[string]any) {
	c.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	status, _, out := c.nr.Do(c.t, method, "/flowgate-admin/routes",
		map[string]string{"Authorization": "Bearer " + nrAdminToken, "Content-Type": "application/json"}, raw)
	var v map[string]any
	require.NoError(c.t, json.Unmarshal(out, &v), string(out))
	return status, v
}

const nrAdminToken = "nodered-e2e-admin-token-0123456789"

// nrTimeout is FLOWGATE_TIMEOUT_MS of the proxy in this test.
const nrTimeout = 6 * time.Second

// kitNodeID finds the id of the node named name in a kit file.
func kitNodeID(t *testing.T, file, typ, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(noderedtest.RepoRoot(), file))
	require.NoError(t, err)
	var nodes []map[string]any
	require.NoError(t, json.Unmarshal(raw, &nodes))
	for _, n := range nodes {
		if n["type"] == typ && n["name"] == name {
			return n["id"].(string)
		}
	}
	t.Fatalf("%s: no %s node named %q", file, typ, name)
	return ""
}

// fallbackAnswer is the kit's fallback shape (flows/node-red/src/fallback.js).
type fallbackAnswer struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Debug   struct {
		ErrorType    string `json:"error_type"`
		ErrorMessage string `json:"error_message"`
		Endpoint     string `json:"endpoint"`
		Route        string `json:"route"`
		ElapsedMS    int64  `json:"elapsed_ms"`
		Timestamp    string `json:"timestamp"`
	} `json:"_debug"`
	LLMGuidance contracts.FailedGuidance `json:"llm_guidance"`
}

// requireFallback decodes a fallback answer and checks its guidance is
// flowgate's own for errType (TIMEOUT or EXCEPTION), timestamp aside.
func requireFallback(t *testing.T, status int, ct string, out []byte, errType, endpoint, route string) fallbackAnswer {
	t.Helper()
	require.Equal(t, http.StatusOK, status, string(out))
	require.True(t, strings.HasPrefix(ct, "application/json"), ct)
	var extra map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out, &extra), string(out))
	var f fallbackAnswer
	require.NoError(t, json.Unmarshal(out, &f))
	require.False(t, f.Success)
	require.Equal(t, errType, f.Debug.ErrorType, string(out))
	require.Equal(t, endpoint, f.Debug.Endpoint)
	require.Equal(t, route, f.Debug.Route)
	want := contracts.NewFailedGuidance(errType, time.Now())
	want.Timestamp = f.LLMGuidance.Timestamp
	require.Equal(t, want, f.LLMGuidance, "the fallback guides the assistant as flowgate's own %s answer does", errType)
	_, err := time.Parse(time.RFC3339, f.LLMGuidance.Timestamp)
	require.NoError(t, err)
	return f
}

// signedTaskFailed creates a task in flowgate, claims it and FAILs it, so that
// GET /queue/stats shows one ERROR task waiting for its retry.
func signedTaskFailed(t *testing.T, base string) {
	t.Helper()
	send := func(path string, body any, v2 bool) []byte {
		raw, _ := json.Marshal(body)
		req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if v2 {
			signature.SignRequestV2(req, []byte(testSecrets["HMAC_SECRET"]), time.Now(), raw)
		} else {
			signature.SignRequest(req, []byte(testSecrets["HMAC_SECRET"]), time.Now(), raw)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		require.Less(t, resp.StatusCode, 300, "%s: %s", path, out)
		return out
	}
	var created contracts.CreateResponse
	require.NoError(t, json.Unmarshal(send("/queue", contracts.CreateTaskRequest{EncounterID: "nr-e2e-1",
		Payload: json.RawMessage(`{"patient":"nr"}`)}, false), &created))
	send("/queue/claim", map[string]any{"worker_id": "vm-nr", "limit": 1}, true)
	send("/fail", map[string]any{"queue_id": created.Task.QueueID, "encounter_id": "nr-e2e-1", "error_message": "nr e2e"}, false)
}

// switchOverKit is TestNodeRedSwitchOverKit's fixture: flowgate and the
// simulator on one Redis database, Node-RED with the proxy flow (two
// rollback targets filled in) and the queue dashboard in front of it
// through a recorder; the steps run on it in order.
type switchOverKit struct {
	fg     *proc
	sim    *simProc
	rec    *recorder
	nr     *noderedtest.Proc
	c      *nrClient
	pat    contracts.PatientCreatedResponse // the caller, set by bookTwoChildren
	plan   []contracts.BookingPlanStep      // the two children's slots
	queued contracts.ApptQueuedResponse     // the second booking
}

func TestNodeRedSwitchOverKit(t *testing.T) {
	t.Parallel()
	rig := startSwitchOverKit(t)
	rig.bookTwoChildren(t)
	rig.queueStatus(t)
	t.Run("dashboard", rig.dashboard)
	t.Run("rollback of createAppt without a redeploy", rig.rollback)
	t.Run("admin route refuses strangers and unknown endpoints", rig.adminRefuses)
	t.Run("malformed JSON reaches flowgate as it came", rig.malformedPassesOn)
	t.Run("an endpoint flowgate does not serve yet passes its 404 on", rig.unservedPassesOn)
	t.Run("flowgate not answering: the fallback within the timeout", rig.flowgateHangs)
	t.Run("flowgate down: the fallback at once", rig.flowgateDown)
}

func startSwitchOverKit(t *testing.T) *switchOverKit {
	t.Helper()
	noderedtest.Dir(t) // skips here, before anything starts, when npm is unreachable
	db := redistest.New(t).URL()
	// The simulator's minute is 3 s (scale 20, 1/min): a second booking
	// right after the first is refused with code 8 on both sync tries and
	// queued; the worker books it once the window has passed.
	sim := startSim(t, 20, "1/min")
	fg := startFlowgate(t, bookingEnv(db, sim, "600/min", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_RETRY_DELAY": "300ms", "BOOKING_SYNC_BUDGET": "2s",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
		"REQUEUE_BACKOFF_BASE": "5m", "REQUEUE_BACKOFF_MAX": "5m",
	}))
	rec := newRecorder(t, fg.Base)
	nr := noderedtest.Start(t, map[string]string{
		"FLOWGATE_URL": rec.srv.URL, "HMAC_SECRET": testSecrets["HMAC_SECRET"],
		"FLOWGATE_ADMIN_TOKEN": nrAdminToken, "FLOWGATE_TIMEOUT_MS": "6000",
		"FLOWGATE_MONITORING_USER": e2eMonitorUser, "FLOWGATE_MONITORING_PASSWORD": e2eMonitorPass,
	}, withOriginals(t), "flows/node-red/flowgate-queue-dashboard.json")
	return &switchOverKit{fg: fg, sim: sim, rec: rec, nr: nr, c: &nrClient{t: t, nr: nr, rec: rec}}
}

// bookTwoChildren: the seed's scenario, every answer flowgate's own: a
// patient, a booking plan for two children; the first booked, the second
// refused with code 8 on both sync tries and queued.
func (rig *switchOverKit) bookTwoChildren(t *testing.T) {
	c := rig.c
	var pat contracts.PatientCreatedResponse
	require.NoError(t, json.Unmarshal(c.call(http.MethodPost, bookingBase+"/createPatient", contracts.CreatePatientRequest{
		PatientFirstName: "Ann", PatientLastName: "Lee", PhoneNumber: "4125550100", BirthDate: "01/02/1985", UUI: "call-nr",
	}), &pat))
	require.True(t, pat.Success)
	var grouped contracts.GroupedSlotsResponse
	require.NoError(t, json.Unmarshal(c.call(http.MethodPost, bookingBase+"/getGroupedApptSlots", contracts.GetGroupedApptSlotsRequest{
		NumberOfPatients: 2, TimeWindowMinutes: 40, SessionID: "call-nr"}), &grouped))
	plan := grouped.LLMGuidance.BookingPlan
	require.Len(t, plan, 2, "a booking plan for two children")
	book := func(step contracts.BookingPlanStep, child string) []byte {
		return c.call(http.MethodPost, bookingBase+"/createAppt", contracts.CreateApptRequest{PatientGUID: pat.PatientGUID,
			BookingAuthToken: pat.BookingAuthToken, BookingToken: step.BookingToken, ChildName: child,
			Note: "Child: " + child, UUI: "call-nr", SessionID: "call-nr"})
	}
	first := book(plan[0], "Tom Lee")
	require.Empty(t, errorType(t, first), truncate(first))
	second := book(plan[1], "Tia Lee")
	require.Equal(t, contracts.BookingErrRateLimitedQueued, errorType(t, second), truncate(second))
	queued := strictDecode[contracts.ApptQueuedResponse](t, second)
	require.True(t, queued.Queued)
	rig.pat, rig.plan, rig.queued = pat, plan, queued
}

// queueStatus: queue-status through Node-RED (its query string passed on),
// asked by the call's sessionId without credentials, shows the caller its
// operation (without names), then its completion.
func (rig *switchOverKit) queueStatus(t *testing.T) {
	c, nr, sim, pat, plan, queued := rig.c, rig.nr, rig.sim, rig.pat, rig.plan, rig.queued
	seen := false
	deadline := time.Now().Add(30 * time.Second)
	for {
		qs := strictDecode[contracts.QueueStatusResponse](t, c.call(http.MethodGet, bookingBase+"/queue-status?page=1&pageSize=20&sessionId=call-nr", nil))
		var op *contracts.QueueOperation
		for i := range qs.Operations {
			if qs.Operations[i].ID == queued.OperationID {
				op = &qs.Operations[i]
			}
		}
		seen = seen || op != nil
		if op != nil && op.Status == contracts.OpCompleted {
			require.Empty(t, op.ChildName, "no names without the monitoring credentials")
			require.NotNil(t, op.Result)
			require.Equal(t, contracts.QueueScopeLookup, qs.Scope)
			break
		}
		require.True(t, time.Now().Before(deadline), "operation %s not completed via Node-RED's queue-status: %+v", queued.OperationID, qs)
		time.Sleep(300 * time.Millisecond)
	}
	require.True(t, seen)
	// Without a key, nothing; with the monitoring credentials (Node-RED
	// passes the caller's Authorization on, never adds its own token), the
	// whole queue with the child's name.
	qs := strictDecode[contracts.QueueStatusResponse](t, c.call(http.MethodGet, bookingBase+"/queue-status", nil))
	require.Empty(t, qs.Operations, "an anonymous caller naming nothing sees nothing")
	status, _, out := nr.Do(t, http.MethodGet, bookingBase+"/queue-status?pageSize=20", map[string]string{"Authorization": e2eMonitorAuth()}, nil)
	require.Equal(t, http.StatusOK, status, string(out))
	qs = strictDecode[contracts.QueueStatusResponse](t, out)
	require.Equal(t, contracts.QueueScopeAll, qs.Scope)
	require.Contains(t, string(out), `"childName":"Tia Lee"`)
	st := sim.state()
	require.Len(t, apptsAt(st, pat.PatientGUID, plan[1].StartTime, plan[1].ScheduleColumnGUID), 1, "the queued booking exists once")
	require.Len(t, st.Appointments, 2)
}

// dashboard: the queue dashboard shows the completed booking and a task
// waiting for its retry.
func (rig *switchOverKit) dashboard(t *testing.T) {
	fg, nr := rig.fg, rig.nr
	signedTaskFailed(t, fg.Base)
	booking := kitNodeID(t, "flows/node-red/flowgate-queue-dashboard.json", "function", "booking queue")
	tasks := kitNodeID(t, "flows/node-red/flowgate-queue-dashboard.json", "function", "task queue")
	s := nr.WaitStatus(t, booking, 25*time.Second, func(s Status) bool { return s.Text == "Idle - P:0 C:1 F:0" })
	require.Equal(t, Status{Fill: "grey", Shape: "ring", Text: "Idle - P:0 C:1 F:0"}, s)
	s = nr.WaitStatus(t, tasks, 25*time.Second, func(s Status) bool { return s.Fill == "yellow" })
	require.Equal(t, Status{Fill: "yellow", Shape: "ring", Text: "Retry waiting - 1 tasks"}, s)
}

// rollback: createAppt switched to the original and back without a
// redeploy; behind "local" malformed JSON, an original that throws and one
// not wired in each answer the fallback at once.
func (rig *switchOverKit) rollback(t *testing.T) {
	rec, nr, c, pat := rig.rec, rig.nr, rig.c, rig.pat
	status, v := c.admin(http.MethodPut, map[string]any{"endpoint": "createAppt", "target": "local"})
	require.Equal(t, http.StatusOK, status, v)
	require.Equal(t, "local", v["endpoints"].(map[string]any)["createAppt"])
	require.Equal(t, "booking", v["group"], "createAppt switches with its group")
	require.Equal(t, "local", v["endpoints"].(map[string]any)["queue-status"])
	before := rec.count()
	sent := `{"patientGUID":"` + pat.PatientGUID + `","childName":"Rolled Back"}`
	status, _, out := nr.Do(t, http.MethodPost, bookingBase+"/createAppt", map[string]string{"Content-Type": "application/json"}, []byte(sent))
	require.Equal(t, http.StatusOK, status, string(out))
	var local struct {
		Message  string          `json:"message"`
		Received json.RawMessage `json:"received"`
	}
	require.NoError(t, json.Unmarshal(out, &local), string(out))
	require.Equal(t, "answered by the original createAppt", local.Message, "the original node answered")
	require.JSONEq(t, sent, string(local.Received), "the original node gets the body parsed, as its own http in gave it")
	require.Equal(t, before, rec.count(), "a rolled-back createAppt reached flowgate")
	c.call(http.MethodPost, bookingBase+"/getLocation", map[string]any{"locationGUID": "x"}) // the other endpoints still go to flowgate

	// Behind "local": malformed JSON, an original that throws, one not
	// wired in — each answers the fallback at once, nothing reaches flowgate.
	before = rec.count()
	status, ct, out := nr.Do(t, http.MethodPost, bookingBase+"/createAppt", map[string]string{"Content-Type": "application/json"}, []byte(`{"a":`))
	f := requireFallback(t, status, ct, out, contracts.BookingErrException, "createAppt", "local")
	require.Contains(t, f.Debug.ErrorMessage, "malformed JSON body")
	for _, ep := range []string{"getPatient", "getApptSlots"} {
		_, _ = c.admin(http.MethodPut, map[string]any{"endpoint": ep, "target": "local"})
		start := time.Now()
		status, ct, out = nr.Do(t, http.MethodPost, bookingBase+"/"+ep, map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
		f = requireFallback(t, status, ct, out, contracts.BookingErrException, ep, "local")
		require.Less(t, time.Since(start), 3*time.Second)
		_, _ = c.admin(http.MethodPut, map[string]any{"endpoint": ep, "target": nil})
	}
	require.Contains(t, f.Debug.ErrorMessage, "not wired in")
	require.Contains(t, string(out), `"slots":[]`, "getApptSlots' fallback keeps its empty result keys")
	require.Equal(t, before, rec.count())

	status, v = c.admin(http.MethodPut, map[string]any{"endpoint": "createAppt", "target": nil})
	require.Equal(t, http.StatusOK, status, v)
	require.Equal(t, "flowgate", v["endpoints"].(map[string]any)["createAppt"])
	out = c.call(http.MethodPost, bookingBase+"/createAppt", map[string]any{"patientGUID": pat.PatientGUID, "childName": "Back Again"})
	require.NotEqual(t, "", errorType(t, out), "flowgate answered the incomplete booking: %s", out)
}

// adminRefuses: the admin route refuses strangers and unknown endpoints.
func (rig *switchOverKit) adminRefuses(t *testing.T) {
	nr, c := rig.nr, rig.c
	status, _, out := nr.Do(t, http.MethodPut, "/flowgate-admin/routes", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"endpoint":"createAppt","target":"local"}`))
	require.Equal(t, http.StatusUnauthorized, status, string(out))
	status, v := c.admin(http.MethodPut, map[string]any{"endpoint": "nope", "target": "local"})
	require.Equal(t, http.StatusBadRequest, status, v)
	status, v = c.admin(http.MethodPut, map[string]any{"endpoint": "createAppt", "target": "elsewhere"})
	require.Equal(t, http.StatusBadRequest, status, v)
	_, v = c.admin(http.MethodGet, nil)
	require.Equal(t, "flowgate", v["endpoints"].(map[string]any)["createAppt"])
}

// malformedPassesOn: malformed JSON reaches flowgate as it came.
func (rig *switchOverKit) malformedPassesOn(t *testing.T) {
	c := rig.c
	out := c.call(http.MethodPost, bookingBase+"/createAppt", []byte(`{"patientGUID": "x",`))
	require.Equal(t, contracts.BookingErrValidation, errorType(t, out), "flowgate's own answer to malformed JSON: %s", out)
}

// unservedPassesOn: an endpoint flowgate does not serve yet passes its 404 on.
func (rig *switchOverKit) unservedPassesOn(t *testing.T) {
	c := rig.c
	out := c.call(http.MethodPost, bookingBase+"/getLocation", map[string]any{"locationGUID": "x"})
	require.NotEmpty(t, out)
}

// flowgateHangs: flowgate not answering gets the fallback within the timeout.
func (rig *switchOverKit) flowgateHangs(t *testing.T) {
	rec, nr := rig.rec, rig.nr
	rec.setHang(true)
	start := time.Now()
	status, ct, out := nr.Do(t, http.MethodGet, bookingBase+"/queue-status", nil, nil)
	took := time.Since(start)
	rec.setHang(false)
	requireFallback(t, status, ct, out, contracts.BookingErrTimeout, "queue-status", "flowgate")
	require.GreaterOrEqual(t, took, nrTimeout-500*time.Millisecond)
	require.Less(t, took, nrTimeout+3*time.Second, "fallback after %s", took)
	var extra struct {
		Total      *int  `json:"total"`
		Operations []any `json:"operations"`
	}
	require.NoError(t, json.Unmarshal(out, &extra))
	require.NotNil(t, extra.Total, "queue-status's fallback keeps its count keys: %s", out)
}

// flowgateDown: flowgate down gets the fallback at once; the dashboard
// turns red.
func (rig *switchOverKit) flowgateDown(t *testing.T) {
	rec, nr, pat := rig.rec, rig.nr, rig.pat
	rec.close()
	_, err := net.DialTimeout("tcp", strings.TrimPrefix(rec.srv.URL, "http://"), time.Second)
	require.Error(t, err, "FLOWGATE_URL still accepts connections")
	start := time.Now()
	status, ct, out := nr.Do(t, http.MethodPost, bookingBase+"/createAppt", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"patientGUID":"`+pat.PatientGUID+`"}`))
	f := requireFallback(t, status, ct, out, contracts.BookingErrException, "createAppt", "flowgate")
	require.Less(t, time.Since(start), 3*time.Second)
	require.Contains(t, f.Debug.ErrorMessage, "ECONNREFUSED")
	require.NotContains(t, string(out), "    at ", "no stack trace")

	booking := kitNodeID(t, "flows/node-red/flowgate-queue-dashboard.json", "function", "booking queue")
	s := nr.WaitStatus(t, booking, 25*time.Second, func(s Status) bool { return s.Fill == "red" })
	require.Equal(t, "ring", s.Shape)
	require.True(t, strings.HasPrefix(s.Text, "Error: "), s.Text)
}

// withOriginals writes the proxy flow with two rollback targets filled in
// as an operator would (a stand-in original createAppt that answers, and an
// original getPatient that throws) and returns its path.
func withOriginals(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(noderedtest.RepoRoot(), "flows/node-red/flowgate-proxy.json"))
	require.NoError(t, err)
	var nodes []map[string]any
	require.NoError(t, json.Unmarshal(raw, &nodes))
	filled := 0
	for _, n := range nodes {
		switch n["name"] {
		case "original createAppt":
			n["func"] = `msg.payload = { success: false, queued: true, operationId: "op-original-1", ` +
				`message: "answered by the original createAppt", received: msg.payload }; return msg;`
			filled++
		case "original getPatient":
			n["func"] = `throw new Error("boom from the original getPatient");`
			filled++
		}
	}
	require.Equal(t, 2, filled)
	out, err := json.Marshal(nodes)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "flowgate-proxy.json")
	require.NoError(t, os.WriteFile(f, out, 0o600))
	return f
}

// Status is a Node-RED node status.
type Status = noderedtest.Status
