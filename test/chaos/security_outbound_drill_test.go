//go:build chaos

package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/securitytest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// The outbound security drills' task and worker. The drills (issue 34) run
// against the binary: what flowgate sends (declared handlers,
// webhook.forward, the DLQ alert) can never be replayed at what it
// accepts, and no request of flowgate's follows a redirect. Each attack
// prints "DRILL security <name>: attempts=N accepted=M" with its real
// counts; the drill fails on any acceptance.
const (
	secDrillTask   = "00000000-0000-4000-8000-00000000d34d"
	secDrillWorker = "vm-drill"
	// secDrillPerType is how many messages each redirecting target gets.
	secDrillPerType = 4
)

// secDrillHookSecret is a declared handler's own secret (secret: ${…}).
const secDrillHookSecret = "chaos-hook-own-secret-0123456789"

// writeHandlers writes a BUFFER_HANDLERS_FILE of entries (YAML, each
// starting "  - type: …") and returns its path.
func writeHandlers(t *testing.T, entries []string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(file, []byte("handlers:\n"+strings.Join(entries, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// enqueueAll enqueues one message of each type with payload and returns
// their ids by type.
func enqueueAll(t *testing.T, c *client, payload string, types ...string) map[string][]string {
	t.Helper()
	hdr := http.Header{"Authorization": {"Bearer " + bearerToken}}
	ids := map[string][]string{}
	for _, typ := range types {
		a := c.send(http.MethodPost, "/api/buffer/enqueue", []byte(`{"type":"`+typ+`","payload":`+payload+`}`), hdr, false)
		var e contracts.BufferEnqueueResponse
		if a.Status != http.StatusAccepted || json.Unmarshal(a.Body, &e) != nil {
			t.Fatalf("enqueue %s: %s", typ, a)
		}
		ids[typ] = append(ids[typ], e.MessageID)
	}
	return ids
}

// messageState is a buffer message's state.
func messageState(t *testing.T, c *client, id string) contracts.BufferState {
	t.Helper()
	a := c.send(http.MethodGet, "/api/buffer/messages/"+id, nil, http.Header{"Authorization": {"Bearer " + bearerToken}}, false)
	var m contracts.BufferMessage
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &m) != nil {
		t.Fatalf("message %s: %s", id, a)
	}
	return m.State
}

// TestDrillSecurityOutboundReplay: a claimed task, then every kind of
// signed delivery flowgate makes, each carrying a payload that is a valid
// ACK of that task (the enqueuer chose it), captured at the target and
// replayed — body and every header — at each of flowgate's signed routes.
// Before issue 34 the handler's delivery, signed with HMAC_SECRET, marked
// the task DONE at /ack and created a task at POST /queue.
func TestDrillSecurityOutboundReplay(t *testing.T) {
	srv := rediscluster.StartServer(t)
	capture := securitytest.NewCapture(t)
	capture.Answer = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dead" {
			w.WriteHeader(http.StatusUnprocessableEntity) // a dead letter: the DLQ alert fires
			return
		}
		_, _ = io.WriteString(w, "{}")
	}
	routes := securitytest.SignedRoutes(secDrillTask)
	entry := func(typ, method, path, extra string) string {
		return fmt.Sprintf("  - type: %s\n    url: %s%s\n    method: %s\n    maxRetries: 0\n%s", typ, capture.URL, path, method, extra)
	}
	entries := []string{
		entry("v1.payload", "POST", "/ack", "    sign: true\n"),
		entry("v1.message", "POST", "/queue", "    sign: true\n    body: message\n"),
		entry("own.secret", "POST", "/ack", "    secret: ${FLOWGATE_DRILL_HOOK_SECRET}\n"),
		entry("dead", "POST", "/dead", "    sign: true\n"),
	}
	var v2types []string
	for i, r := range routes {
		typ := fmt.Sprintf("v2.%d", i)
		v2types = append(v2types, typ)
		entries = append(entries, entry(typ, r.Method, r.Path, "    sign: true\n    signatureVersion: 2\n"))
	}
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{
		"BUFFER_API_TOKEN": bearerToken, "BUFFER_HANDLERS_FILE": writeHandlers(t, entries),
		"FLOWGATE_DRILL_HOOK_SECRET": secDrillHookSecret, "BUFFER_WEBHOOK_URL": capture.URL + "/ack",
		"DLQ_ALERT_WEBHOOK": capture.URL + "/fail", "BUFFER_DLQ_ALERT_THRESHOLD": "1",
	}))
	c := newClient(p.Base, 10*time.Second, nil)
	if a := c.signed(http.MethodPost, "/queue", []byte(`{"queue_id":"`+secDrillTask+`","encounter_id":"enc-drill","payload":{"n":1}}`)); a.Status != http.StatusCreated {
		t.Fatalf("create: %s", a)
	}
	if a := c.signed(http.MethodPost, "/queue/claim", []byte(`{"worker_id":"`+secDrillWorker+`"}`)); a.Status != http.StatusOK || !bytes.Contains(a.Body, []byte(secDrillTask)) {
		t.Fatalf("claim: %s", a)
	}
	ack := `{"queue_id":"` + secDrillTask + `","encounter_id":"enc-drill","experityActions":{"stolen":true},"worker_id":"` + secDrillWorker + `"}`
	types := append([]string{"v1.payload", "v1.message", "own.secret", "dead", "webhook.forward"}, v2types...)
	enqueueAll(t, c, ack, types...)
	ds := capture.Wait(t, len(types)+1, 30*time.Second) // + the DLQ alert

	groups := map[string][]securitytest.Delivery{}
	for _, d := range ds {
		name := "replay-handler-v2-route-aimed"
		switch typ := d.Header.Get("X-Buffer-Type"); {
		case d.URI == "/fail":
			name = "replay-dlq-alert"
		case typ == "v1.payload" || typ == "v1.message" || typ == "dead":
			name = "replay-handler-v1"
		case typ == "own.secret":
			name = "replay-handler-own-secret"
		case typ == "": // webhook.forward sends no X-Buffer-Type
			name = "replay-webhook-forward"
		}
		groups[name] = append(groups[name], d)
	}
	var total securitytest.Tally
	for _, name := range []string{"replay-handler-v1", "replay-handler-v2-route-aimed", "replay-handler-own-secret", "replay-webhook-forward", "replay-dlq-alert"} {
		if len(groups[name]) == 0 {
			t.Fatalf("no delivery for %s (got %d deliveries)", name, len(ds))
		}
		tl := securitytest.ReplayAll(t, p.Base, groups[name], routes)
		summary(t, "security "+name, "%s (%d deliveries × %d signed routes)", tl, len(groups[name]), len(routes))
		total.Attempts += tl.Attempts
		total.Accepted += tl.Accepted
		total.Accepts = append(total.Accepts, tl.Accepts...)
	}
	summary(t, "security replay-outbound-total", "%s", total)
	if total.Accepted != 0 {
		t.Errorf("accepted replays:\n%s", strings.Join(total.Accepts, "\n"))
	}
	if a := c.signed(http.MethodGet, "/queue/"+secDrillTask, nil); !bytes.Contains(a.Body, []byte(`"status":"PROCESSING"`)) {
		t.Errorf("the task moved: %s", a)
	}
	if a := c.signed(http.MethodGet, "/queue/stats", nil); !bytes.Contains(a.Body, []byte(`"total":1`)) {
		t.Errorf("a replay created a task: %s", a)
	}

	// Control: the same captured body, signed with HMAC_SECRET as a worker
	// would, is accepted — so the tally above would have seen it.
	control := groups["replay-handler-v1"][0]
	for _, d := range groups["replay-handler-v1"] {
		if d.Header.Get("X-Buffer-Type") == "v1.payload" {
			control = d
		}
	}
	req, _ := http.NewRequest(http.MethodPost, p.Base+"/ack", bytes.NewReader(control.Body))
	req.Header.Set("Content-Type", "application/json")
	signature.SignRequest(req, []byte(hmacSecret), time.Now(), control.Body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	accepted := 0
	if resp.StatusCode == http.StatusOK {
		accepted = 1
	}
	summary(t, "security replay-control-signed-with-HMAC_SECRET", "attempts=1 accepted=%d (the harness sees an acceptance)", accepted)
	if accepted != 1 {
		t.Errorf("the control ACK signed with HMAC_SECRET answered %d", resp.StatusCode)
	}
}

// TestDrillSecurityOutboundRedirects: declared handlers whose targets
// answer 301, 302, 303, 307 and 308 (each pointing at another host, which
// counts what reaches it), webhook.forward and the DLQ alert behind a
// redirect, and import-queue from a redirecting --from. accepted counts
// requests that reached the other host plus messages completed.
func TestDrillSecurityOutboundRedirects(t *testing.T) {
	srv := rediscluster.StartServer(t)
	statuses := []int{301, 302, 303, 307, 308}
	rds := map[int]*securitytest.Redirector{}
	var entries, types []string
	for _, st := range statuses {
		rds[st] = securitytest.NewRedirector(t, st)
		typ := fmt.Sprintf("redirect.%d", st)
		types = append(types, typ)
		entries = append(entries, fmt.Sprintf("  - type: %s\n    url: %s/hook\n    maxRetries: 3\n    secret: ${FLOWGATE_DRILL_HOOK_SECRET}\n    headers: {X-Api-Key: drill-key}\n", typ, rds[st].URL))
	}
	fwd, alert := securitytest.NewRedirector(t, http.StatusTemporaryRedirect), securitytest.NewRedirector(t, http.StatusPermanentRedirect)
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{
		"BUFFER_API_TOKEN": bearerToken, "BUFFER_HANDLERS_FILE": writeHandlers(t, entries),
		"FLOWGATE_DRILL_HOOK_SECRET": secDrillHookSecret, "BUFFER_WEBHOOK_URL": fwd.URL + "/fwd",
		"DLQ_ALERT_WEBHOOK": alert.URL + "/alert", "BUFFER_DLQ_ALERT_THRESHOLD": "1",
	}))
	c := newClient(p.Base, 10*time.Second, nil)
	all := append(append([]string(nil), types...), "webhook.forward")
	ids := map[string][]string{}
	for range secDrillPerType {
		for typ, got := range enqueueAll(t, c, `{"to":"drill@example.com"}`, all...) {
			ids[typ] = append(ids[typ], got...)
		}
	}
	states := map[string]map[contracts.BufferState]int{}
	deadline := time.Now().Add(60 * time.Second)
	for _, typ := range all {
		states[typ] = map[contracts.BufferState]int{}
		for _, id := range ids[typ] {
			st := messageState(t, c, id)
			for st != contracts.BufferDLQ && st != contracts.BufferCompleted && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				st = messageState(t, c, id)
			}
			states[typ][st]++
		}
	}
	report := func(name string, rd *securitytest.Redirector, typ string) {
		done, dead := states[typ][contracts.BufferCompleted], states[typ][contracts.BufferDLQ]
		followed := int(rd.Followed.Load())
		summary(t, "security "+name, "attempts=%d accepted=%d (target hits %d, followed %d, with a secret %d; completed %d, dead-lettered %d)",
			len(ids[typ]), followed+done, rd.Hits.Load(), followed, rd.Signed.Load(), done, dead)
		if followed+done != 0 || dead != len(ids[typ]) || rd.Hits.Load() != int64(len(ids[typ])) {
			t.Errorf("%s: %d followed, %d completed, %d of %d dead-lettered, %d hits (one attempt each, no retry)", name, followed, done, dead, len(ids[typ]), rd.Hits.Load())
		}
	}
	for _, st := range statuses {
		report(fmt.Sprintf("redirect-handler-%d", st), rds[st], fmt.Sprintf("redirect.%d", st))
	}
	report("redirect-webhook-forward-307", fwd, "webhook.forward")
	waitFor(t, 10*time.Second, func() bool { return alert.Hits.Load() > 0 })
	summary(t, "security redirect-dlq-alert-308", "attempts=%d accepted=%d", alert.Hits.Load(), alert.Followed.Load())
	if alert.Followed.Load() != 0 {
		t.Errorf("the DLQ alert followed a redirect")
	}

	// import-queue: a signed GET to a --from that redirects to another host.
	for _, st := range []int{302, 307, 308} {
		rd := securitytest.NewRedirector(t, st)
		out, code := importQueueBin(t, srv.URL(), "--from", rd.URL)
		summary(t, fmt.Sprintf("security redirect-import-queue-%d", st), "attempts=%d accepted=%d (exit %d)", rd.Hits.Load(), rd.Followed.Load(), code)
		if rd.Hits.Load() != 1 || rd.Followed.Load() != 0 || code != 1 || !strings.Contains(out, "not followed") {
			t.Errorf("import-queue from a %d: exit %d, followed %d:\n%s", st, code, rd.Followed.Load(), out)
		}
	}

	// import-queue: a page announcing 1 GiB is refused from its header.
	var sent atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(huge.Close)
	start := time.Now()
	out, code := importQueueBin(t, srv.URL(), "--from", huge.URL)
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond) // the handler sees the hang-up
	readOK := 0
	if sent.Load() >= 256<<20 {
		readOK = 1
	}
	summary(t, "security import-queue-oversized-page", "attempts=1 accepted=%d (announced %d bytes, %d written before the refusal, %s)",
		readOK, 1<<30, sent.Load(), took.Round(time.Millisecond))
	if code != 1 || !strings.Contains(out, "Content-Length") || readOK != 0 || sent.Load() == 0 {
		t.Errorf("import-queue of a 1 GiB page: exit %d, %d bytes written:\n%s", code, sent.Load(), out)
	}
}

// importQueueBin runs `flowgate import-queue` against flowgate's Redis at
// redisURL and returns its output and exit code.
func importQueueBin(t *testing.T, redisURL string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(flowgatetest.Binary(t), append([]string{"import-queue"}, args...)...)
	cmd.Env = append(flowgatetest.Env(), "REDIS_URL="+redisURL, "CLOUD9_SIMULATOR=true", "HMAC_SECRET="+hmacSecret, "BOOKING_AUTH_SECRET="+bookingSecret,
		"BUFFER_API_TOKEN="+bearerToken, "MONITORING_AUTH=none", "IMPORT_HMAC_SECRET=chaos-old-api-secret-0123456789")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// waitFor polls cond every 50 ms for at most d.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
