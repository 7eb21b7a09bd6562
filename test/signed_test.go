package test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// maxSkewBack is how far behind the clock the signer may date a request
// (the server accepts 300 s, WEBHOOK_TOLERANCE's default).
const maxSkewBack = 200 * time.Second

// seedRoute reports whether the seed's version-1 signature is accepted on
// method path: POST /queue and the ACK/FAIL webhooks. Every other queue
// route requires version 2 (route-bound), which this client then signs.
func seedRoute(method, path string) bool {
	p, _, _ := strings.Cut(path, "?")
	if method != http.MethodPost {
		return false
	}
	switch p {
	case "/queue", "/ack", "/fail", "/webhook/ack", "/webhook/fail":
		return true
	}
	return false
}

// signer dates requests so that it never sends one signature twice. The
// server refuses a repeated signature as a replay — on every route, for
// every instance sharing the Redis — so two identical requests in the same
// second (a poll, a heartbeat every 500 ms, a claim loop) would collide;
// the second is dated a second earlier instead, as a careful worker would
// do. A version-1 signature covers only the body, so the seed's routes
// share one date book per body. One signer is shared by every client of a
// test.
type signer struct {
	secret []byte
	mu     sync.Mutex
	used   map[[sha256.Size]byte]map[int64]bool
}

func newSigner() *signer {
	return &signer{secret: []byte(testSecrets["HMAC_SECRET"]), used: map[[sha256.Size]byte]map[int64]bool{}}
}

// timestamp returns the newest time ≤ now at which this request was not
// signed yet, and reserves it.
func (s *signer) timestamp(method, target string, body []byte) (time.Time, error) {
	h := sha256.New()
	if seedRoute(method, target) {
		fmt.Fprint(h, "v1\n") // the same body on another seed route is the same signature
	} else {
		fmt.Fprintf(h, "%s %s\n", method, target)
	}
	h.Write(body)
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.used[key]
	if seen == nil {
		seen = map[int64]bool{}
		s.used[key] = seen
	}
	now := time.Now().Unix()
	for ts := now; ts > now-int64(maxSkewBack/time.Second); ts-- {
		if !seen[ts] {
			seen[ts] = true
			return time.Unix(ts, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("signer: %s %s sent more than %s times in %s; slow the loop down", method, target, maxSkewBack/time.Second, maxSkewBack)
}

// signedRequest is a request ready to send, to any instance: sending the
// same value twice is a replay.
type signedRequest struct {
	Method, Path string
	Body         []byte
	Header       http.Header
}

// signOpt changes how a request is signed (for the bad-input cases).
type signOpt func(*signSpec)

type signSpec struct {
	at       time.Time
	signBody []byte
	unsigned bool
}

// signedAt dates the signature at ts instead of the signer's choice.
func signedAt(ts time.Time) signOpt { return func(s *signSpec) { s.at = ts } }

// signingBody signs other bytes than those sent (a forged signature).
func signingBody(b []byte) signOpt { return func(s *signSpec) { s.signBody = b } }

// unsigned sends neither X-Timestamp nor X-Signature.
func unsigned() signOpt { return func(s *signSpec) { s.unsigned = true } }

// reply is an answer of the binary.
type reply struct {
	Status int
	Body   []byte
}

// errorEnvelope is flowgate's error body.
type errorEnvelope struct {
	Success bool `json:"success"`
	Error   struct {
		Code      contracts.Code `json:"code"`
		Message   string         `json:"message"`
		RequestID string         `json:"request_id"`
		Details   map[string]any `json:"details"`
	} `json:"error"`
}

// api is a signed client of one flowgate process, the task tests' client:
// every request to the queue API and the ACK/FAIL webhooks of the binary
// carries X-Timestamp and X-Signature: the seed's scheme (version 1, hex
// HMAC-SHA256(HMAC_SECRET, ts + "." + body)) on the seed's routes (POST
// /queue, ACK, FAIL), version 2 (method and target signed too) on the
// others, which refuse version 1.
type api struct {
	t    *testing.T
	base string
	s    *signer
	hc   *http.Client
}

func newAPI(t *testing.T, p *proc, s *signer) *api {
	return &api{t: t, base: p.Base, s: s, hc: &http.Client{Timeout: 30 * time.Second}}
}

// sign builds a signed request; path may carry a query.
func (a *api) sign(method, path string, body []byte, opts ...signOpt) (signedRequest, error) {
	var spec signSpec
	for _, o := range opts {
		o(&spec)
	}
	h := http.Header{}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if !spec.unsigned {
		at := spec.at
		if at.IsZero() {
			var err error
			if at, err = a.s.timestamp(method, path, body); err != nil {
				return signedRequest{}, err
			}
		}
		signed := body
		if spec.signBody != nil {
			signed = spec.signBody
		}
		ts, sig := signature.Sign(a.s.secret, at, signed)
		if !seedRoute(method, path) {
			ts, sig = signature.SignV2(a.s.secret, at, method, path, signed)
			h.Set(signature.HeaderSignatureVersion, "2")
		}
		h.Set(signature.HeaderTimestamp, ts)
		h.Set(signature.HeaderSignature, sig)
	}
	return signedRequest{Method: method, Path: path, Body: body, Header: h}, nil
}

// send sends r to this instance. It does not touch a.t, so goroutines may
// call it.
func (a *api) send(r signedRequest) (reply, error) {
	var rd io.Reader
	if r.Body != nil {
		rd = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequest(r.Method, a.base+r.Path, rd)
	if err != nil {
		return reply{}, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{Status: resp.StatusCode, Body: b}, err
}

// roundTrip signs and sends; for goroutines.
func (a *api) roundTrip(method, path string, body []byte, opts ...signOpt) (reply, error) {
	r, err := a.sign(method, path, body, opts...)
	if err != nil {
		return reply{}, err
	}
	return a.send(r)
}

// do signs and sends from the test's goroutine.
func (a *api) do(method, path string, body []byte, opts ...signOpt) reply {
	a.t.Helper()
	r, err := a.roundTrip(method, path, body, opts...)
	require.NoError(a.t, err)
	return r
}

// mustSend sends a prepared request from the test's goroutine.
func (a *api) mustSend(r signedRequest) reply {
	a.t.Helper()
	rep, err := a.send(r)
	require.NoError(a.t, err)
	return rep
}

// doRaw sends a signed request over a connection of its own, reading the
// answer while the body is still being written: a server refusing an
// oversized body answers 413 and closes the connection, which an
// http.Client still writing often reports as "connection reset".
func (a *api) doRaw(method, path string, body []byte) reply {
	a.t.Helper()
	r, err := a.sign(method, path, body)
	require.NoError(a.t, err)
	req, err := http.NewRequest(r.Method, a.base+r.Path, bytes.NewReader(r.Body))
	require.NoError(a.t, err)
	for k, v := range r.Header {
		req.Header[k] = v
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	require.NoError(a.t, err)
	defer conn.Close()
	require.NoError(a.t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = req.Write(conn)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(a.t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	_ = conn.Close()
	<-written
	return reply{Status: resp.StatusCode, Body: b}
}

// decodeReply checks the status and decodes the body into v.
func decodeReply[T any](t *testing.T, r reply, status int) T {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// errorOf checks that r is flowgate's error envelope with status and code.
func errorOf(t *testing.T, r reply, status int, code contracts.Code) errorEnvelope {
	t.Helper()
	env := decodeReply[errorEnvelope](t, r, status)
	require.False(t, env.Success)
	require.Equal(t, code, env.Error.Code, "body: %s", r.Body)
	require.NotEmpty(t, env.Error.RequestID)
	return env
}

// create makes one task through POST /queue.
func (a *api) create(encounter, payload string) contracts.Task {
	a.t.Helper()
	body := fmt.Sprintf(`{"encounter_id":%q,"payload":%s}`, encounter, payload)
	resp := decodeReply[contracts.CreateResponse](a.t, a.do("POST", "/queue", []byte(body)), 201)
	require.True(a.t, resp.Success)
	require.False(a.t, resp.Duplicate)
	require.Equal(a.t, contracts.StatusPending, resp.Task.Status)
	return resp.Task
}

// claimBody is a ClaimRequest body.
func claimBody(worker string, limit int) []byte {
	return []byte(fmt.Sprintf(`{"worker_id":%q,"limit":%d}`, worker, limit))
}

// claim claims one task for worker and checks it is id.
func (a *api) claim(worker, id string) contracts.Task {
	a.t.Helper()
	resp := decodeReply[contracts.ClaimResponse](a.t, a.do("POST", "/queue/claim", claimBody(worker, 1)), 200)
	require.Len(a.t, resp.Tasks, 1)
	got := resp.Tasks[0]
	require.Equal(a.t, id, got.QueueID)
	require.Equal(a.t, contracts.StatusProcessing, got.Status)
	require.Equal(a.t, worker, got.WorkerID)
	return got
}

// claimNext claims one task for worker, whichever the ledger hands out.
func (a *api) claimNext(worker string) contracts.Task {
	a.t.Helper()
	resp := decodeReply[contracts.ClaimResponse](a.t, a.do("POST", "/queue/claim", claimBody(worker, 1)), 200)
	require.Len(a.t, resp.Tasks, 1)
	got := resp.Tasks[0]
	require.Equal(a.t, contracts.StatusProcessing, got.Status)
	require.Equal(a.t, worker, got.WorkerID)
	return got
}

// claimNone checks that nothing can be claimed: 204, no body.
func (a *api) claimNone(worker string) {
	a.t.Helper()
	r := a.do("POST", "/queue/claim", claimBody(worker, 1))
	require.Equal(a.t, 204, r.Status, "body: %s", r.Body)
	require.Empty(a.t, r.Body)
}

// get is GET /queue/{id}, with history.
func (a *api) get(id string) contracts.Task {
	a.t.Helper()
	resp := decodeReply[contracts.TaskResponse](a.t, a.do("GET", "/queue/"+id, nil), 200)
	return resp.Task
}

// stats is GET /queue/stats.
func (a *api) stats() contracts.StatsResponse {
	a.t.Helper()
	return decodeReply[contracts.StatsResponse](a.t, a.do("GET", "/queue/stats", nil), 200)
}

// hook posts a webhook and decodes the 200 answer.
func (a *api) hook(path, body string) contracts.WebhookResponse {
	a.t.Helper()
	resp := decodeReply[contracts.WebhookResponse](a.t, a.do("POST", path, []byte(body)), 200)
	require.True(a.t, resp.Success)
	return resp
}

// waitTask polls GET /queue/{id} every 250 ms until ok(task) or timeout.
func (a *api) waitTask(id string, timeout time.Duration, what string, ok func(contracts.Task) bool) contracts.Task {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := a.get(id)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("task %s: not %s after %s; last: status %s priority %s attempts %d history %+v",
				id, what, timeout, got.Status, got.Priority, got.Attempts, got.History)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func isPendingHigh(t contracts.Task) bool {
	return t.Status == contracts.StatusPending && t.Priority == contracts.PriorityHigh
}

// lastEvent is the newest history entry.
func lastEvent(t *testing.T, task contracts.Task) contracts.TaskEvent {
	t.Helper()
	require.NotEmpty(t, task.History)
	return task.History[len(task.History)-1]
}

// metricValue finds series (name with its labels exactly as exposed, labels
// sorted by name, e.g. `x_total{hook="ack",outcome="done"}`) in a
// Prometheus text exposition.
func metricValue(exposition, series string) (float64, bool) {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// metricSum adds the values of every series of name whose labels contain
// each of match (e.g. `status="413"`).
func metricSum(exposition, name string, match ...string) float64 {
	var sum float64
next:
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, m := range match {
			if !strings.Contains(line, m) {
				continue next
			}
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			v, _ := strconv.ParseFloat(line[i+1:], 64)
			sum += v
		}
	}
	return sum
}

// scrape returns p's /metrics.
func scrape(t *testing.T, p *proc) string {
	t.Helper()
	status, body := p.Get("/metrics")
	require.Equal(t, 200, status)
	return body
}

// requireMetrics checks the value of each series (see metricValue), waiting
// up to 5 s for counters that are bumped just after the change a test saw.
func requireMetrics(t *testing.T, p *proc, want map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		body := scrape(t, p)
		var wrong []string
		for series, v := range want {
			got, ok := metricValue(body, series)
			if !ok || got != v {
				wrong = append(wrong, fmt.Sprintf("%s = %v (present %v), want %v", series, got, ok, v))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics:\n  %s", strings.Join(wrong, "\n  "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// taskEnv is the environment of a flowgate on db with short task timings;
// extra overrides.
func taskEnv(redisURL string, extra map[string]string) map[string]string {
	env := withSecrets(map[string]string{
		"REDIS_URL":          redisURL,
		"MAX_RETRY_ATTEMPTS": "3",
		"LOG_LEVEL":          "info",
	})
	for k, v := range extra {
		env[k] = v
	}
	return env
}
