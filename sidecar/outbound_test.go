package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/test/securitytest"
)

// Every outbound sender needs OUTBOUND_HMAC_SECRET, which may not be a
// secret flowgate verifies with; HMAC_SECRET does not stand in for it; a
// declared handler never falls back to HMAC_SECRET, and an empty ${VAR} is
// a start error.
func TestOutboundSecretRules(t *testing.T) {
	hmacS, bookingS, outS := strings.Repeat("h", 32), strings.Repeat("b", 32), strings.Repeat("o", 32)
	handlers := func(entry string) string {
		f := filepath.Join(t.TempDir(), "handlers.yaml")
		require.NoError(t, os.WriteFile(f, []byte("handlers:\n  - type: t\n    url: http://127.0.0.1:1/x\n"+entry), 0o600))
		return f
	}
	base := func(extra ...string) map[string]string {
		env := map[string]string{"HMAC_SECRET": hmacS, "BOOKING_AUTH_SECRET": bookingS}
		for i := 0; i+1 < len(extra); i += 2 {
			env[extra[i]] = extra[i+1]
		}
		return env
	}
	for _, c := range []struct {
		env       map[string]string
		wantVar   string
		wantWords string
		also      string // a second variable reported, if any
	}{
		{base("BUFFER_WEBHOOK_URL", "https://hooks.example/fwd"), "OUTBOUND_HMAC_SECRET", "required with BUFFER_WEBHOOK_URL", ""},
		{base("DLQ_ALERT_WEBHOOK", "https://hooks.example/dlq"), "OUTBOUND_HMAC_SECRET", "required with DLQ_ALERT_WEBHOOK", ""},
		{base("BOOKING_EVENTS_WEBHOOK", "https://hooks.example/b"), "OUTBOUND_HMAC_SECRET", "required with BOOKING_EVENTS_WEBHOOK", ""},
		{base("BOOKING_EVENTS_WEBHOOK", "https://hooks.example/b", "OUTBOUND_HMAC_SECRET", hmacS), "OUTBOUND_HMAC_SECRET", "must differ from HMAC_SECRET", ""},
		{base("OUTBOUND_HMAC_SECRET", bookingS), "OUTBOUND_HMAC_SECRET", "must differ from BOOKING_AUTH_SECRET", ""},
		{base("OUTBOUND_HMAC_SECRET", "short"), "OUTBOUND_HMAC_SECRET", "at least 16 bytes", ""},
		{base("BUFFER_HANDLERS_FILE", handlers("    sign: true\n")), "BUFFER_HANDLERS_FILE", "signing needs a secret (secret: ${NAME}, or set OUTBOUND_HMAC_SECRET)", ""},
		{base("BUFFER_HANDLERS_FILE", handlers("    sign: true\n"), "OUTBOUND_HMAC_SECRET", hmacS), "BUFFER_HANDLERS_FILE", "OUTBOUND_HMAC_SECRET is HMAC_SECRET's value", "OUTBOUND_HMAC_SECRET"},
		{base("BUFFER_HANDLERS_FILE", handlers("    secret: ${FLOWGATE_TEST_EMPTY_SECRET}\n"), "OUTBOUND_HMAC_SECRET", outS), "BUFFER_HANDLERS_FILE", "secret is empty", ""},
		{base("BUFFER_HANDLERS_FILE", handlers("    secret: "+hmacS+"\n"), "OUTBOUND_HMAC_SECRET", outS), "BUFFER_HANDLERS_FILE", "its secret is HMAC_SECRET's value", ""},
		{base("BUFFER_HANDLERS_FILE", handlers("    secret: "+bookingS+"\n"), "OUTBOUND_HMAC_SECRET", outS), "BUFFER_HANDLERS_FILE", "its secret is BOOKING_AUTH_SECRET's value", ""},
	} {
		t.Setenv("FLOWGATE_TEST_EMPTY_SECRET", "")
		_, err := LoadConfig(envOf(c.env))
		var es ConfigErrors
		require.ErrorAs(t, err, &es, "%v", c.env)
		want := []string{c.wantVar}
		if c.also != "" {
			want = append(want, c.also)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Var)
		}
		require.ElementsMatch(t, want, got, "%v", err)
		require.ErrorContains(t, err, c.wantVar+": ")
		require.ErrorContains(t, err, c.wantWords)
	}
	for _, env := range []map[string]string{
		base("BUFFER_WEBHOOK_URL", "https://h.example/f", "DLQ_ALERT_WEBHOOK", "https://h.example/d", "BOOKING_EVENTS_WEBHOOK", "https://h.example/b", "OUTBOUND_HMAC_SECRET", outS),
		base("BUFFER_HANDLERS_FILE", handlers("    sign: true\n"), "OUTBOUND_HMAC_SECRET", outS),
		base("BUFFER_HANDLERS_FILE", handlers("    secret: own-secret-0123456789\n")),
		{}, // embedded, nothing sent: nothing required
	} {
		c, err := LoadConfig(envOf(env))
		require.NoError(t, err, "%v", env)
		require.Equal(t, env["OUTBOUND_HMAC_SECRET"], c.OutboundSecret)
	}
}

// replayID is the task the replays aim at: created, then claimed by
// replayWorker, so an ACK would complete it.
const (
	replayID     = "00000000-0000-4000-8000-0000000000a1"
	replayWorker = "vm-replay"
)

// TestOutboundDeliveriesCannotBeReplayed is the attack of issue 34: whoever
// holds BUFFER_API_TOKEN enqueues a payload that is a valid ACK of a
// claimed task, and whoever sees what a target receives replays the
// signed delivery — body and every header — at flowgate. Every delivery
// (declared handlers signing version 1 and version 2, the latter aimed at
// each signed route's own method and path; a handler with its own secret;
// webhook.forward; the DLQ alert) replayed at every signed route is
// refused, and the task is still PROCESSING. The same body signed with
// HMAC_SECRET is accepted, so the count would see an acceptance.
func TestOutboundDeliveriesCannotBeReplayed(t *testing.T) {
	hmacS, outS := strings.Repeat("h", 32), strings.Repeat("o", 32)
	t.Setenv("FLOWGATE_TEST_HOOK_SECRET", "hook-own-secret-0123456789")
	capture := securitytest.NewCapture(t)
	capture.Answer = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dead" {
			w.WriteHeader(http.StatusUnprocessableEntity) // a dead letter, so the DLQ alert fires
			return
		}
		_, _ = w.Write([]byte("{}"))
	}
	routes := securitytest.SignedRoutes(replayID)
	var yaml strings.Builder
	yaml.WriteString("handlers:\n")
	var types []string
	add := func(typ, method, path, extra string) {
		types = append(types, typ)
		fmt.Fprintf(&yaml, "  - type: %s\n    url: %s%s\n    method: %s\n    maxRetries: 0\n%s", typ, capture.URL, path, method, extra)
	}
	add("v1.payload", "POST", "/ack", "    sign: true\n")
	add("v1.message", "POST", "/queue", "    sign: true\n    body: message\n")
	add("own.secret", "POST", "/ack", "    secret: ${FLOWGATE_TEST_HOOK_SECRET}\n")
	for i, r := range routes {
		add(fmt.Sprintf("v2.%d", i), r.Method, r.Path, "    sign: true\n    signatureVersion: 2\n")
	}
	add("dead", "POST", "/dead", "    sign: true\n")
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	require.NoError(t, os.WriteFile(file, []byte(yaml.String()), 0o600))

	env := realRedisEnv(t)
	env["HMAC_SECRET"], env["OUTBOUND_HMAC_SECRET"] = hmacS, outS
	env["BUFFER_HANDLERS_FILE"], env["BUFFER_WEBHOOK_URL"] = file, capture.URL+"/ack"
	env["DLQ_ALERT_WEBHOOK"], env["BUFFER_DLQ_ALERT_THRESHOLD"] = capture.URL+"/fail", "1"
	m, base := startMain(t, env)
	for _, r := range routeTable(m.app) {
		if p := strings.SplitN(r, " ", 2)[1]; p == "/ack" || p == "/fail" || strings.HasPrefix(p, "/queue") || strings.HasPrefix(p, "/webhook/") {
			require.Contains(t, securitytest.RoutePatterns(), r, "a signed route the attack does not cover")
		}
	}

	status, body := send(t, signedV1(t, hmacS, "POST", base+"/queue", `{"queue_id":"`+replayID+`","encounter_id":"enc-replay","payload":{"n":1}}`))
	require.Equal(t, http.StatusCreated, status, body)
	status, body = send(t, signedV2(t, hmacS, "POST", base+"/queue/claim", `{"worker_id":"`+replayWorker+`"}`))
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, replayID)

	ack := `{"queue_id":"` + replayID + `","encounter_id":"enc-replay","experityActions":{"stolen":true},"worker_id":"` + replayWorker + `"}`
	tok := m.Config.Buffer.APIToken
	for _, typ := range append(slices.Clone(types), "webhook.forward") {
		status, body := post(t, base+"/api/buffer/enqueue", `{"type":"`+typ+`","payload":`+ack+`}`, tok)
		require.Equal(t, http.StatusAccepted, status, body)
	}
	ds := capture.Wait(t, len(types)+2, 20*time.Second) // + webhook.forward + the DLQ alert
	for _, d := range ds {
		secret := outS
		if d.Header.Get("X-Buffer-Type") == "own.secret" {
			secret = os.Getenv("FLOWGATE_TEST_HOOK_SECRET")
		}
		require.True(t, verifies(secret, d), "the receiver cannot verify %s %s with its secret", d.Method, d.URI)
		require.False(t, verifies(hmacS, d), "%s %s is signed with HMAC_SECRET", d.Method, d.URI)
	}

	tl := securitytest.ReplayAll(t, base, ds, routes)
	t.Logf("replayed %d deliveries at %d signed routes: %s", len(ds), len(routes), tl)
	require.Equal(t, len(ds)*len(routes), tl.Attempts)
	require.Zero(t, tl.Accepted, "accepted replays:\n%s", strings.Join(tl.Accepts, "\n"))
	status, body = send(t, signedV2(t, hmacS, "GET", base+"/queue/"+replayID, ""))
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"status":"PROCESSING"`, "a replay moved the task")
	status, body = send(t, signedV2(t, hmacS, "GET", base+"/queue/stats", ""))
	require.Equal(t, http.StatusOK, status, body)
	var stats struct{ Total int }
	require.NoError(t, json.Unmarshal([]byte(body), &stats))
	require.Equal(t, 1, stats.Total, "a replay created a task: %s", body)

	// Control: the captured ACK body, signed with HMAC_SECRET as a worker
	// would, completes the task: the tally above would have counted it.
	i := slices.IndexFunc(ds, func(d securitytest.Delivery) bool { return d.Header.Get("X-Buffer-Type") == "v1.payload" })
	require.GreaterOrEqual(t, i, 0)
	status, body = send(t, signedV1(t, hmacS, "POST", base+"/ack", string(ds[i].Body)))
	require.Equal(t, http.StatusOK, status, body)
	require.Eventually(t, func() bool {
		_, body := send(t, signedV2(t, hmacS, "GET", base+"/queue/"+replayID, ""))
		return strings.Contains(body, `"status":"DONE"`)
	}, 5*time.Second, 50*time.Millisecond)
}

// verifies reports whether d's signature (version 1 or 2) is secret's.
func verifies(secret string, d securitytest.Delivery) bool {
	ts, sig := d.Header.Get(hmacsig.HeaderTimestamp), d.Header.Get(hmacsig.HeaderSignature)
	want := hmacsig.MAC([]byte(secret), ts, d.Body)
	if d.Header.Get(hmacsig.HeaderSignatureVersion) == "2" {
		want = hmacsig.MACV2([]byte(secret), ts, d.Method, d.URI, d.Body)
	}
	return sig != "" && sig == hex.EncodeToString(want)
}

// The DLQ alert and the booking events follow no redirect: the 3xx is the
// error, and the host it names sees nothing.
func TestOutboundPostsFollowNoRedirect(t *testing.T) {
	rd := securitytest.NewRedirector(t, http.StatusTemporaryRedirect)
	m := &Main{Config: Config{OutboundSecret: strings.Repeat("o", 32)}, Now: time.Now}
	follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	a := &dlqAlerter{url: rd.URL, send: m.outboundSender(follows), now: m.Now}
	err := a.DLQAlert(context.Background(), 101, 100)
	require.ErrorContains(t, err, "answered 307, a redirect to")
	require.ErrorContains(t, err, "not followed")
	ev := booking.WebhookEvents{URL: rd.URL, Secret: []byte(m.Config.OutboundSecret), Client: follows}
	err = ev.Publish(context.Background(), contracts.BookingCompletedEvent{})
	require.ErrorContains(t, err, "answered 307, a redirect to")
	require.Equal(t, int64(2), rd.Hits.Load())
	require.Zero(t, rd.Followed.Load())
}
