//go:build chaos

package chaos

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// The secrets every drill's flowgate runs with.
const (
	hmacSecret = "chaos-hmac-secret-0123456789abcdef"
	// outboundSecret signs what flowgate sends (webhook.forward, declared
	// handlers, the DLQ alert); never hmacSecret.
	outboundSecret = "chaos-outbound-secret-0123456789ab"
	bearerToken    = "chaos-bearer-token-0123456789abcdef"
	bookingSecret  = "chaos-booking-secret-0123456789ab"
)

// defaultPause is how long the outage drills keep Redis stopped unless
// FLOWGATE_DRILL_PAUSE says otherwise (the operator drill: 30 s).
const defaultPause = 30 * time.Second

// drillPause is FLOWGATE_DRILL_PAUSE (a Go duration, 1s..5m) or defaultPause.
func drillPause(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("FLOWGATE_DRILL_PAUSE")
	if s == "" {
		return defaultPause
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > 5*time.Minute {
		t.Fatalf("FLOWGATE_DRILL_PAUSE=%q: want a duration between 1s and 5m", s)
	}
	return d
}

// flowgateEnv is the environment of a drill's flowgate on redisURL; extra
// overrides.
func flowgateEnv(redisURL string, extra map[string]string) map[string]string {
	env := map[string]string{
		"REDIS_URL":            redisURL,
		"HMAC_SECRET":          hmacSecret,
		"OUTBOUND_HMAC_SECRET": outboundSecret,
		"BOOKING_AUTH_SECRET":  bookingSecret,
		"LOG_LEVEL":            "warn",
		"MONITORING_USER":      "drill",
		"MONITORING_PASSWORD":  "drill-monitoring-password",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// signer dates signed requests so that no (timestamp, request) pair is
// sent twice: the server refuses a repeated signature as a replay, so an
// identical request in the same second is dated a second earlier.
type signer struct {
	mu   sync.Mutex
	used map[[sha256.Size]byte]map[int64]bool
}

func newSigner() *signer { return &signer{used: map[[sha256.Size]byte]map[int64]bool{}} }

// sign sets version-2 (route-bound) signature headers on req.
func (s *signer) sign(req *http.Request, body []byte) error {
	target := req.URL.RequestURI()
	key := sha256.Sum256([]byte(req.Method + " " + target + "\n" + string(body)))
	s.mu.Lock()
	seen := s.used[key]
	if seen == nil {
		seen = map[int64]bool{}
		s.used[key] = seen
	}
	now := time.Now().Unix()
	ts := now
	for seen[ts] {
		ts--
	}
	seen[ts] = true
	s.mu.Unlock()
	if now-ts > 200 {
		return fmt.Errorf("signer: %s %s sent more than 200 times in 200 s", req.Method, target)
	}
	signature.SignRequestV2(req, []byte(hmacSecret), time.Unix(ts, 0), body)
	return nil
}

// answer is one request's outcome.
type answer struct {
	Method, Path string
	Status       int // 0: transport error (Err)
	Body         []byte
	Err          error
	Start        time.Time
	Took         time.Duration
}

func (a answer) String() string {
	if a.Err != nil {
		return fmt.Sprintf("%s %s: %v after %s", a.Method, a.Path, a.Err, a.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %s: %d %s after %s", a.Method, a.Path, a.Status, clip(a.Body, 300), a.Took.Round(time.Millisecond))
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// client sends requests to one flowgate and records every answer in its
// tally. Signed requests carry version-2 signatures.
type client struct {
	base atomic.Pointer[string] // http://host:port; setBase switches to a restarted process
	hc   *http.Client
	sig  *signer
	// bearer, when set, authenticates "signed" requests with
	// Authorization: Bearer instead (WEBHOOK_AUTH=token).
	bearer string
	tl     *tally
}

func newClient(base string, timeout time.Duration, tl *tally) *client {
	c := &client{hc: &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, DisableCompression: true,
	}}, sig: newSigner(), tl: tl}
	c.setBase(base)
	return c
}

// setBase points the client at another process.
func (c *client) setBase(base string) { c.base.Store(&base) }

// signed sends a signed request; body nil sends none.
func (c *client) signed(method, path string, body []byte) answer {
	return c.send(method, path, body, nil, true)
}

// send sends a request with the given extra headers, signed or not.
func (c *client) send(method, path string, body []byte, header http.Header, sign bool) answer {
	a := answer{Method: method, Path: path, Start: time.Now()}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, *c.base.Load()+path, rd)
	if err != nil {
		a.Err = err
		return a
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if sign && c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	} else if sign {
		if err := c.sig.sign(req, body); err != nil {
			a.Err = err
			return a
		}
	}
	resp, err := c.hc.Do(req)
	if err == nil {
		a.Status = resp.StatusCode
		a.Body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	a.Err, a.Took = err, time.Since(a.Start)
	if c.tl != nil {
		c.tl.add(a)
	}
	return a
}

// window is a span of time in which a fault was injected.
type window struct {
	what       string
	start, end time.Time
}

// tally counts answers by status, keeps latencies and the 5xx answers, and
// knows the outage windows in which a 503 is the right answer.
type tally struct {
	grace time.Duration // a 503 is allowed this long after an outage ends

	mu       sync.Mutex
	byStatus map[int]int
	lat      []time.Duration
	fivexx   []answer
	outages  []window
}

func newTally(grace time.Duration) *tally { return &tally{grace: grace, byStatus: map[int]int{}} }

func (tl *tally) add(a answer) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.byStatus[a.Status]++
	tl.lat = append(tl.lat, a.Took)
	if a.Status >= 500 {
		tl.fivexx = append(tl.fivexx, a)
	}
}

// outage records a fault window; end is set by the returned function.
func (tl *tally) outage(what string) (end func()) {
	tl.mu.Lock()
	i := len(tl.outages)
	tl.outages = append(tl.outages, window{what: what, start: time.Now()})
	tl.mu.Unlock()
	return func() {
		tl.mu.Lock()
		tl.outages[i].end = time.Now()
		tl.mu.Unlock()
	}
}

// during reports whether a overlaps an outage (plus grace).
func (tl *tally) during(a answer) bool {
	for _, w := range tl.outages {
		end := w.end
		if end.IsZero() {
			end = time.Now()
		}
		if a.Start.Before(end.Add(tl.grace)) && a.Start.Add(a.Took).After(w.start) {
			return true
		}
	}
	return false
}

// fiveXX splits the 5xx answers into 503s inside an outage (allowed) and
// the rest (each a failure).
func (tl *tally) fiveXX() (inOutage int, wrong []answer) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, a := range tl.fivexx {
		if a.Status == http.StatusServiceUnavailable && tl.during(a) {
			inOutage++
			continue
		}
		wrong = append(wrong, a)
	}
	return inOutage, wrong
}

// statuses is "200×n 204×m …" in status order.
func (tl *tally) statuses() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return statusLine(tl.byStatus)
}

func statusLine(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := strconv.Itoa(k)
		if k == 0 {
			name = "transport-error"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, m[k]))
	}
	return strings.Join(parts, " ")
}

// latencies returns p50, p99 and max of every answer so far.
func (tl *tally) latencies() (p50, p99, worst time.Duration) {
	tl.mu.Lock()
	d := append([]time.Duration(nil), tl.lat...)
	tl.mu.Unlock()
	return percentiles(d)
}

func percentiles(d []time.Duration) (p50, p99, worst time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// summary logs the drill's one-line summary (grep "DRILL ").
func summary(t *testing.T, drill string, format string, args ...any) {
	t.Helper()
	t.Logf("DRILL %s: %s", drill, fmt.Sprintf(format, args...))
}

// startFlowgate starts the binary with env.
func startFlowgate(t *testing.T, env map[string]string) *flowgatetest.Proc {
	t.Helper()
	return flowgatetest.Start(t, env)
}

// waitReady polls /readyz until it answers want, at most timeout.
func waitReady(t *testing.T, p *flowgatetest.Proc, want int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, body := p.Get("/readyz")
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("/readyz still %d %s after %s, want %d", got, body, timeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
