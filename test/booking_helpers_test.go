package test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/logtest"
)

// Helpers of the booking end-to-end tests (e2e_booking_test.go,
// booking_drill_test.go): the Cloud9 simulator run as its own process
// (`flowgate cloud9-sim`), the Node-RED booking endpoints over HTTP, and
// strict decoding of their documented answer shapes.

// simProviderGUID is the simulator's orthodontist, flowgate's
// CLOUD9_PROVIDER_GUID in every booking test.
const simProviderGUID = "256a8738-e093-4e71-a263-7fa95f7fae4e"

// bookingBase is NODERED_BASE_PATH's default.
const bookingBase = "/chord/ortho-prd"

// simProc is a running `flowgate cloud9-sim`.
type simProc struct {
	t     *testing.T
	URL   string // the Cloud9 endpoint, http://127.0.0.1:port/GetData.ashx
	Admin string // http://127.0.0.1:port/_sim/
	Scale float64
	Logs  *logtest.Buffer

	cmd    *exec.Cmd
	exited chan struct{}
}

// startSim runs `<binary> cloud9-sim -addr 127.0.0.1:<free> -scale scale
// -write-limit writeLimit -seed 1 [flags…]` (admin endpoints on) and waits
// until GET /_sim/state answers. The process is stopped (SIGTERM, then
// SIGKILL) when the test ends.
func startSim(t *testing.T, scale float64, writeLimit string, flags ...string) *simProc {
	t.Helper()
	bin := flowgateBinary(t)
	for try := 0; ; try++ {
		addr := freeAddr(t)
		s := &simProc{t: t, URL: "http://" + addr + "/GetData.ashx", Admin: "http://" + addr + "/_sim/", Scale: scale,
			Logs: &logtest.Buffer{}, exited: make(chan struct{})}
		args := append([]string{"cloud9-sim", "-addr", addr, "-scale", strconv.FormatFloat(scale, 'f', -1, 64),
			"-write-limit", writeLimit, "-seed", "1"}, flags...)
		s.cmd = exec.Command(bin, args...)
		s.cmd.Env = flowgatetest.Env()
		s.cmd.Stdout, s.cmd.Stderr = s.Logs, s.Logs
		require.NoError(t, s.cmd.Start())
		go func() { _ = s.cmd.Wait(); close(s.exited) }()
		if s.waitReady(10 * time.Second) {
			t.Cleanup(s.stop)
			return s
		}
		s.stop()
		// The free port may have been taken between the probe and the
		// simulator's listen: try another one.
		require.Less(t, try, 2, "cloud9-sim did not start:\n%s", s.Logs.String())
	}
}

func (s *simProc) waitReady(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return false
		default:
		}
		if resp, err := http.Get(s.Admin + "state"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// stop ends the simulator process this helper started.
func (s *simProc) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// state is GET /_sim/state.
func (s *simProc) state() cloud9sim.StateJSON {
	s.t.Helper()
	resp, err := http.Get(s.Admin + "state")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	var st cloud9sim.StateJSON
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// setFaults is PUT /_sim/faults (the zero value turns every fault off).
func (s *simProc) setFaults(f cloud9sim.FaultsJSON) {
	s.t.Helper()
	b, err := json.Marshal(f)
	require.NoError(s.t, err)
	req, err := http.NewRequest(http.MethodPut, s.Admin+"faults", bytes.NewReader(b))
	require.NoError(s.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode, string(body))
}

// apptsAt returns the simulator's appointments of patient at start (as the
// simulator writes it) in column, canceled ones included.
func apptsAt(st cloud9sim.StateJSON, patientGUID, start, column string) []cloud9sim.ApptJSON {
	var out []cloud9sim.ApptJSON
	for _, a := range st.Appointments {
		if strings.EqualFold(a.PatientGUID, patientGUID) && sameStart(a.StartTime, start) &&
			strings.EqualFold(a.ScheduleColumnGUID, column) {
			out = append(out, a)
		}
	}
	return out
}

// sameStart compares two Cloud9 start times to the minute.
func sameStart(a, b string) bool {
	ta, oka := contracts.ParseStartTime(a)
	tb, okb := contracts.ParseStartTime(b)
	if !oka || !okb {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	return ta.Truncate(time.Minute).Equal(tb.Truncate(time.Minute))
}

// The monitoring credentials of the booking tests' flowgate: queue-status
// shows the whole queue (what a test checks) to them only.
const (
	e2eMonitorUser = "e2e-monitor"
	e2eMonitorPass = "e2e-monitor-password-0123456789"
)

// e2eMonitorAuth is their Authorization header.
func e2eMonitorAuth() string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(e2eMonitorUser, e2eMonitorPass)
	return req.Header.Get("Authorization")
}

// bookingEnv is the environment of a flowgate on redisURL talking to sim,
// with the flowgate-side Cloud9 write limit writeLimit and the monitoring
// credentials e2eMonitorUser / e2eMonitorPass; extra overrides.
func bookingEnv(redisURL string, sim *simProc, writeLimit string, extra map[string]string) map[string]string {
	env := withSecrets(map[string]string{
		"MONITORING_USER":        e2eMonitorUser,
		"MONITORING_PASSWORD":    e2eMonitorPass,
		"REDIS_URL":              redisURL,
		"LOG_LEVEL":              "info",
		"CLOUD9_ENDPOINT":        sim.URL,
		"CLOUD9_CLIENT_ID":       "e2e-client",
		"CLOUD9_USERNAME":        "e2e-user",
		"CLOUD9_PASSWORD":        "e2e-password",
		"CLOUD9_VENDOR_USERNAME": "flowgate",
		"CLOUD9_PROVIDER_GUID":   simProviderGUID,
		"CLOUD9_WRITE_LIMIT":     writeLimit,
		// A slot search's retries (empty pages, code 0) without the
		// original's 5 s waits.
		"SLOT_SEARCH_RETRY_DELAY": "50ms",
	})
	for k, v := range extra {
		env[k] = v
	}
	// A case that shortens the sync budget to see a booking queued means
	// the whole call's budget: the in-call wait (15 s by default, the
	// larger of the two counts) follows it unless the case sets it.
	if b, ok := extra["BOOKING_SYNC_BUDGET"]; ok {
		if _, set := extra["BOOKING_INCALL_WAIT"]; !set {
			env["BOOKING_INCALL_WAIT"] = b
		}
	}
	return env
}

// bookingClient drives the Node-RED booking endpoints of one flowgate.
type bookingClient struct {
	t    *testing.T
	p    *proc
	http *http.Client
}

func newBookingClient(t *testing.T, p *proc) *bookingClient {
	return &bookingClient{t: t, p: p, http: &http.Client{Timeout: 60 * time.Second}}
}

// post sends body (a []byte or string as is, anything else as JSON) to
// {base}/endpoint and returns the status and the raw answer.
func (c *bookingClient) post(endpoint string, body any) (int, []byte) {
	c.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(c.t, err)
	}
	resp, err := c.http.Post(c.p.Base+bookingBase+"/"+endpoint, "application/json", bytes.NewReader(raw))
	require.NoError(c.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, out
}

// createPatient creates a parent patient for the call uui and returns the
// Created answer (a rate-limited SetPatient is retried by flowgate within
// its sync budget; a queued answer fails the test).
func (c *bookingClient) createPatient(first, last, uui string) contracts.PatientCreatedResponse {
	c.t.Helper()
	status, raw := c.post("createPatient", contracts.CreatePatientRequest{PatientFirstName: first, PatientLastName: last, UUI: uui})
	require.Equal(c.t, http.StatusOK, status, string(raw))
	r := strictDecode[contracts.PatientCreatedResponse](c.t, raw)
	require.True(c.t, r.Success, string(raw))
	require.NotEmpty(c.t, r.PatientGUID)
	require.NotEmpty(c.t, r.BookingAuthToken)
	return r
}

// slots is getApptSlots for the call uui: at least want slots.
func (c *bookingClient) slots(uui string, want int) []contracts.ApptSlot {
	c.t.Helper()
	status, raw := c.post("getApptSlots", contracts.GetApptSlotsRequest{UUI: uui})
	require.Equal(c.t, http.StatusOK, status, string(raw))
	r := strictDecode[contracts.GetApptSlotsResponse](c.t, raw)
	require.GreaterOrEqual(c.t, len(r.Slots), want, "getApptSlots: %s", truncate(raw))
	for _, s := range r.Slots {
		require.NotEmpty(c.t, s.BookingToken, "slot without bookingToken")
	}
	return r.Slots
}

// appt posts createAppt and returns the raw 200 answer and its
// _debug.error_type ("" for a booking made).
func (c *bookingClient) appt(req any) ([]byte, string) {
	c.t.Helper()
	status, raw := c.post("createAppt", req)
	require.Equal(c.t, http.StatusOK, status, "createAppt answers 200 for every outcome: %s", truncate(raw))
	return raw, errorType(c.t, raw)
}

// booked posts createAppt and requires the §5.2 success answer.
func (c *bookingClient) booked(req contracts.CreateApptRequest) contracts.ApptBookedResponse {
	c.t.Helper()
	raw, et := c.appt(req)
	require.Empty(c.t, et, "want a booking, got %s", truncate(raw))
	r := strictDecode[contracts.ApptBookedResponse](c.t, raw)
	require.True(c.t, r.Success)
	require.NotEmpty(c.t, r.AppointmentGUID)
	require.Equal(c.t, "Appointment GUID Added: "+r.AppointmentGUID, r.Message)
	require.Equal(c.t, contracts.StateConfirmation, r.LLMGuidance.CurrentState)
	return r
}

// queued posts createAppt and requires the §5.4 queued answer of errType.
func (c *bookingClient) queued(req contracts.CreateApptRequest, errType string) contracts.ApptQueuedResponse {
	c.t.Helper()
	raw, et := c.appt(req)
	require.Equal(c.t, errType, et, truncate(raw))
	r := strictDecode[contracts.ApptQueuedResponse](c.t, raw)
	require.False(c.t, r.Success)
	require.True(c.t, r.Queued)
	require.True(c.t, strings.HasPrefix(r.OperationID, "op-"), r.OperationID)
	require.Equal(c.t, contracts.QueuedMessage, r.Message)
	want := contracts.NewQueuedGuidance(r.OperationID, time.Time{})
	want.Timestamp = r.LLMGuidance.Timestamp // when flowgate answered
	require.Equal(c.t, want, r.LLMGuidance)
	return r
}

// queueStatus is GET {base}/queue-status with the monitoring credentials:
// the whole queue (bookingEnv).
func (c *bookingClient) queueStatus() contracts.QueueStatusResponse {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.p.Base+bookingBase+"/queue-status?pageSize=500", nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", e2eMonitorAuth())
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "%s", body)
	st := strictDecode[contracts.QueueStatusResponse](c.t, body)
	require.Equal(c.t, contracts.QueueScopeAll, st.Scope, "the monitoring credentials see the whole queue")
	return st
}

// waitOp waits until queue-status shows operation id in status and returns
// it (and the whole answer).
func (c *bookingClient) waitOp(id, status string, timeout time.Duration) (contracts.QueueOperation, contracts.QueueStatusResponse) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last contracts.QueueStatusResponse
	for {
		last = c.queueStatus()
		for _, op := range last.Operations {
			if op.ID == id && op.Status == status {
				return op, last
			}
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(last)
			c.t.Fatalf("operation %s not %s after %s; queue-status: %s", id, status, timeout, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errorType is an answer's _debug.error_type ("" when it has none).
func errorType(t *testing.T, raw []byte) string {
	t.Helper()
	var v struct {
		Debug struct {
			ErrorType string `json:"error_type"`
		} `json:"_debug"`
	}
	require.NoError(t, json.Unmarshal(raw, &v), truncate(raw))
	return v.Debug.ErrorType
}

// strictDecode decodes raw into the documented shape T, refusing fields T
// does not have: an answer decodes only when it is exactly that shape.
func strictDecode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), "answer is not a %T: %s", v, truncate(raw))
	return v
}

func truncate(raw []byte) string {
	if len(raw) > 2000 {
		return string(raw[:2000]) + "…"
	}
	return string(raw)
}

// apptReq is a createAppt request for slot s with raw GUIDs (startTime,
// view, column, type, minutes as getApptSlots gave them).
func apptReq(patientGUID, token string, s contracts.ApptSlot, child, uui string) contracts.CreateApptRequest {
	return contracts.CreateApptRequest{PatientGUID: patientGUID, BookingAuthToken: token, StartTime: s.StartTime,
		ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
		AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: contracts.FlexInt(s.MinutesInt()), ChildName: child, UUI: uui}
}

// tokenReq is a createAppt request for slot s by its bookingToken only.
func tokenReq(patientGUID, token string, s contracts.ApptSlot, child, uui string) contracts.CreateApptRequest {
	return contracts.CreateApptRequest{PatientGUID: patientGUID, BookingAuthToken: token, BookingToken: s.BookingToken,
		ChildName: child, UUI: uui}
}

// distinctSlots picks n slots of different (start, column) from list,
// preferring different start times.
func distinctSlots(t *testing.T, list []contracts.ApptSlot, n int) []contracts.ApptSlot {
	t.Helper()
	seen := map[string]bool{}
	var out []contracts.ApptSlot
	for _, s := range list {
		k := s.StartTime + "|" + strings.ToLower(s.ScheduleColumnGUID)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
		if len(out) == n {
			return out
		}
	}
	t.Fatalf("only %d distinct slots, want %d", len(out), n)
	return nil
}

// signToken signs payload with the test's BOOKING_AUTH_SECRET as flowgate
// does (base64url payload "." base64url HMAC-SHA256 of it): tokens a
// tester holding the secret can forge, to reach checks 3–5 directly.
func signToken(payload []byte) string {
	p := base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, []byte(testSecrets["BOOKING_AUTH_SECRET"]))
	m.Write([]byte(p))
	return p + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// rawPost writes body to path over a bare connection and reads whatever
// answer comes, even while the body is still being written (a server
// refusing a 10 MB body answers before reading it).
func rawPost(t *testing.T, p *proc, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.Base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(15*time.Second)))
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = req.Write(conn)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	_ = conn.Close()
	<-written
	return resp.StatusCode, out
}

// apptWatcher polls the simulator's state every 10 ms and notes when each
// appointment was first seen: real time, and the simulator's own clock
// (GET /_sim/state "now", whole seconds).
type apptWatcher struct {
	sim  *simProc
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	first map[string]sighting
	err   error
}

type sighting struct {
	real time.Time
	sim  time.Time
}

func watchAppointments(s *simProc) *apptWatcher {
	w := &apptWatcher{sim: s, stop: make(chan struct{}), done: make(chan struct{}), first: map[string]sighting{}}
	go w.run()
	return w
}

func (w *apptWatcher) run() {
	defer close(w.done)
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		w.poll(client)
		select {
		case <-w.stop:
			w.poll(client) // whatever was committed before the stop
			return
		case <-tick.C:
		}
	}
}

// poll reads the state once and notes the appointments not seen before.
func (w *apptWatcher) poll(client *http.Client) {
	resp, err := client.Get(w.sim.Admin + "state")
	seen := time.Now()
	var st cloud9sim.StateJSON
	if err == nil {
		err = json.NewDecoder(resp.Body).Decode(&st)
		_ = resp.Body.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	simNow, _ := time.Parse("1/2/2006 3:04:05 PM", st.Now)
	for _, a := range st.Appointments {
		if _, ok := w.first[a.GUID]; !ok {
			w.first[a.GUID] = sighting{real: seen, sim: simNow}
		}
	}
}

// span stops the watcher and returns, over the appointments guids, the
// time from the first to the last sighting in real time and on the
// simulator's clock.
func (w *apptWatcher) span(t *testing.T, guids []string) (real, sim time.Duration) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NoError(t, w.err)
	var firstR, lastR, firstS, lastS time.Time
	for i, g := range guids {
		s, ok := w.first[g]
		require.True(t, ok, "appointment %s never seen by the watcher", g)
		if i == 0 || s.real.Before(firstR) {
			firstR, firstS = s.real, s.sim
		}
		if i == 0 || s.real.After(lastR) {
			lastR, lastS = s.real, s.sim
		}
	}
	return lastR.Sub(firstR), lastS.Sub(firstS)
}

// metricOf scrapes p and returns series' value (0 when absent).
func metricOf(t *testing.T, p *proc, series string) float64 {
	t.Helper()
	v, _ := metricValue(scrape(t, p), series)
	return v
}

// waitMetricAtLeast waits until series reaches min on p.
func waitMetricAtLeast(t *testing.T, p *proc, series string, min float64, timeout time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if v := metricOf(t, p, series); v >= min {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s below %v after %s", series, min, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func base64URLEncode(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func base64URLDecode(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
