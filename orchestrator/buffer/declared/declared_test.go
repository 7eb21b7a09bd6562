package declared_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/declared"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/test/redistest"
)

// hit is one request the target saw.
type hit struct {
	at     time.Time
	header http.Header
	body   []byte
	uri    string
	method string
}

// target is an httptest server answering with answer(n) for the n-th hit
// (0-based).
type target struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newTarget(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *target {
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		n := len(tg.hits)
		tg.hits = append(tg.hits, hit{at: time.Now(), header: r.Header.Clone(), body: body, uri: r.URL.RequestURI(), method: r.Method})
		tg.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) seen() []hit {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]hit(nil), tg.hits...)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// run starts a buffer whose declared handlers come from yaml (env looked
// up in env) and returns it with its Set.
func run(t *testing.T, yaml string, env map[string]string) (*buffer.Buffer, *declared.Set) {
	t.Helper()
	f, err := declared.Parse("handlers.yaml", []byte(yaml), declared.Options{Reserved: []string{"webhook.forward"},
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	require.NoError(t, err)
	db := redistest.New(t)
	bo := buffer.Backoff{Base: 50 * time.Millisecond, Multiplier: 2, Max: 200 * time.Millisecond}
	b, err := buffer.New(buffer.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 5,
		ShutdownTimeout: 2 * time.Second, DelayedCheck: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		DepthRefresh: time.Millisecond, Backoff: bo, Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	set := declared.NewSet(f, bo, nil, nil)
	for _, typ := range f.Types() {
		require.NoError(t, b.Register(set.Handler(typ)))
	}
	require.NoError(t, b.Start())
	return b, set
}

func enqueue(t *testing.T, b *buffer.Buffer, typ, payload string) string {
	t.Helper()
	e, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: typ, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return e.MessageID
}

// settle waits until the message is in state.
func settle(t *testing.T, b *buffer.Buffer, id string, state contracts.BufferState) *buffer.Message {
	t.Helper()
	var m *buffer.Message
	require.Eventually(t, func() bool {
		var err error
		m, err = b.Get(context.Background(), id)
		return err == nil && m.State == state
	}, 10*time.Second, 20*time.Millisecond, "message %s never reached %s (last %+v)", id, state, m)
	return m
}

func status(code int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func TestCompletesWithTheAnswerAsResult(t *testing.T) {
	js := newTarget(t, status(200, `{"sent":true,"id":"m-1"}`))
	txt := newTarget(t, status(201, "queued"))
	b, _ := run(t, fmt.Sprintf("handlers:\n  - type: email.send\n    url: %s/email\n  - type: plain\n    url: %s\n", js.URL, txt.URL), nil)
	id := enqueue(t, b, "email.send", `{"to":"a@example.com"}`)
	m := settle(t, b, id, contracts.BufferCompleted)
	require.JSONEq(t, `{"sent":true,"id":"m-1"}`, string(m.Result))
	h := js.seen()[0]
	require.Equal(t, "POST", h.method)
	require.Equal(t, "/email", h.uri)
	require.JSONEq(t, `{"to":"a@example.com"}`, string(h.body))
	require.Equal(t, id, h.header.Get("X-Buffer-Message-Id"))
	require.Equal(t, "1", h.header.Get("X-Buffer-Attempt"))
	require.Equal(t, "email.send", h.header.Get("X-Buffer-Type"))

	m = settle(t, b, enqueue(t, b, "plain", `{}`), contracts.BufferCompleted)
	require.JSONEq(t, `"queued"`, string(m.Result))
}

func TestClientErrorGoesToDLQWithoutRetry(t *testing.T) {
	tg := newTarget(t, status(422, `{"error":"bad address"}`))
	b, _ := run(t, "handlers:\n  - type: email.send\n    url: "+tg.URL+"\n    maxRetries: 3\n", nil)
	id := enqueue(t, b, "email.send", `{}`)
	m := settle(t, b, id, contracts.BufferDLQ)
	require.Never(t, func() bool { return len(tg.seen()) > 1 }, 300*time.Millisecond, 10*time.Millisecond,
		"a retry (one would have come by now)")
	require.Len(t, tg.seen(), 1)
	require.Len(t, m.Errors, 1)
	require.Contains(t, m.Errors[0].Message, "422")
}

func TestServerErrorRetriedThenSucceeds(t *testing.T) {
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			w.WriteHeader(503)
			_, _ = io.WriteString(w, "Invalid upstream state") // "Invalid" in a 5xx body does not stop retries
			return
		}
		_, _ = io.WriteString(w, `{"ok":1}`)
	})
	b, _ := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n    maxRetries: 3\n    backoff: {base: 20ms, multiplier: 2, max: 100ms}\n", nil)
	id := enqueue(t, b, "t", `{}`)
	m := settle(t, b, id, contracts.BufferCompleted)
	require.Len(t, tg.seen(), 3)
	require.Equal(t, 3, m.AttemptCount)
	require.Len(t, m.Errors, 2)
	require.Equal(t, []int{1, 2}, []int{m.Errors[0].AttemptNumber, m.Errors[1].AttemptNumber})
	require.Equal(t, "3", tg.seen()[2].header.Get("X-Buffer-Attempt"))
}

func TestTimeoutAndConnectionErrorsRetried(t *testing.T) {
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
		_, _ = io.WriteString(w, `{"late":false}`)
	})
	b, _ := run(t, "handlers:\n  - type: slow\n    url: "+tg.URL+"\n    timeout: 200ms\n    maxRetries: 2\n"+
		"  - type: gone\n    url: http://127.0.0.1:1/nothing\n    maxRetries: 1\n    backoff: {base: 10ms}\n", nil)
	m := settle(t, b, enqueue(t, b, "slow", `{}`), contracts.BufferCompleted)
	require.Len(t, tg.seen(), 2)
	require.Equal(t, "MESSAGE_TIMEOUT", m.Errors[0].Code)

	m = settle(t, b, enqueue(t, b, "gone", `{}`), contracts.BufferDLQ)
	require.Len(t, m.Errors, 2, "a refused connection is retried (1 retry), then dead")
	require.Equal(t, "ECONNREFUSED", m.Errors[0].Code)
}

// A target that answers its status and then stalls mid-body is given up
// at the type's timeout (the handler honours its context, so the buffer
// calls it on the worker's goroutine: a read that ignored the deadline
// would hold the worker).
func TestTimeoutWhileReadingTheAnswer(t *testing.T) {
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.WriteHeader(200)
			_, _ = io.WriteString(w, `{"part`)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		_, _ = io.WriteString(w, `{"late":false}`)
	})
	b, set := run(t, "handlers:\n  - type: stall\n    url: "+tg.URL+"\n    timeout: 200ms\n    maxRetries: 1\n    backoff: {base: 10ms}\n", nil)
	h := set.Handler("stall")
	require.True(t, h.HonoursContext())
	t0 := time.Now()
	m := settle(t, b, enqueue(t, b, "stall", `{}`), contracts.BufferCompleted)
	require.Less(t, time.Since(t0), 5*time.Second, "the stalled attempt ended at its timeout, not the target's 10 s")
	require.Equal(t, "MESSAGE_TIMEOUT", m.Errors[0].Code)
	require.Equal(t, 2, m.AttemptCount)
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	})
	// The backoff alone would retry after 20ms.
	b, _ := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n    backoff: {base: 20ms, max: 20ms}\n", nil)
	settle(t, b, enqueue(t, b, "t", `{}`), contracts.BufferCompleted)
	hs := tg.seen()
	require.Len(t, hs, 2)
	gap := hs[1].at.Sub(hs[0].at)
	require.GreaterOrEqual(t, gap, 2*time.Second, "Retry-After: 2 was not honoured (gap %s)", gap)
	require.Less(t, gap, 6*time.Second)
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	h := declared.NewSet(&declared.File{Specs: []*declared.Spec{{Type: "t"}}}, buffer.Backoff{}, nil, func() time.Time { return now }).Handler("t")
	err := &declared.RetryAfterError{StatusError: &buffer.StatusError{StatusCode: 429}, After: 7 * time.Second}
	require.Equal(t, 8*time.Second, h.RetryDelay(0, fmt.Errorf("wrapped: %w", err), nil), "Retry-After plus the second Asynq drops")
	require.Equal(t, time.Duration(90)*time.Second, declared.RetryAfterFor(now.Add(90*time.Second).Format(http.TimeFormat), now))
	require.Equal(t, 3*time.Second, declared.RetryAfterFor("3", now))
	require.Equal(t, time.Duration(-1), declared.RetryAfterFor("soon", now))
}

func TestSignedRequestsVerify(t *testing.T) {
	tg := newTarget(t, status(200, `{}`))
	env := map[string]string{"EMAIL_SECRET": "s3cret-for-email", "API_KEY": "k-123"}
	b, _ := run(t, "handlers:\n"+
		"  - type: v1\n    url: "+tg.URL+"/one?x=1\n    secret: ${EMAIL_SECRET}\n    headers:\n      X-Api-Key: key-${API_KEY}\n"+
		"  - type: v2\n    url: "+tg.URL+"/two?y=2\n    method: PUT\n    sign: true\n    secret: ${EMAIL_SECRET}\n    signatureVersion: 2\n    body: message\n", env)
	settle(t, b, enqueue(t, b, "v1", `{"n":1}`), contracts.BufferCompleted)
	id2 := enqueue(t, b, "v2", `{"n":2}`)
	settle(t, b, id2, contracts.BufferCompleted)
	hs := tg.seen()
	require.Len(t, hs, 2)
	secret := []byte(env["EMAIL_SECRET"])

	one := hs[0]
	require.Equal(t, "key-k-123", one.header.Get("X-Api-Key"), "${ENV} expanded in headers")
	require.Equal(t, hex.EncodeToString(hmacsig.MAC(secret, one.header.Get("X-Timestamp"), one.body)), one.header.Get("X-Signature"))

	two := hs[1]
	require.Equal(t, "PUT", two.method)
	require.Equal(t, "2", two.header.Get("X-Signature-Version"))
	require.Equal(t, hex.EncodeToString(hmacsig.MACV2(secret, two.header.Get("X-Timestamp"), "PUT", "/two?y=2", two.body)), two.header.Get("X-Signature"))
	var whole map[string]any
	require.NoError(t, json.Unmarshal(two.body, &whole))
	require.Equal(t, id2, whole["messageId"])
	require.Equal(t, "v2", whole["type"])

	// Each also signs which delivery it is, in both versions.
	for _, h := range hs {
		require.Equal(t, hex.EncodeToString(hmacsig.DeliveryMAC(secret, h.header.Get("X-Timestamp"), h.header.Get("X-Buffer-Message-Id"),
			"1", h.body)), h.header.Get("X-Buffer-Signature"))
	}
	require.Equal(t, id2, two.header.Get("X-Buffer-Message-Id"))
}

func TestValidationReportsEveryProblem(t *testing.T) {
	src := `handlers:
  - type: webhook.forward
    url: http://x/
  - type: a
    url: ftp://nope
    method: FETCH
    timeout: soon
    maxRetries: -1
    colour: red
  - type: a
    url: http://x/${MISSING}
  - url: http://x/
    sign: true
    backoff: {base: 2s, max: 1s}
    circuitBreaker: {threshold: 0}
`
	_, err := declared.Parse("h.yaml", []byte(src), declared.Options{Reserved: []string{"webhook.forward"}, Getenv: func(string) (string, bool) { return "", false }})
	var le *declared.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	msg := err.Error()
	for _, want := range []string{
		`h.yaml:2: type "webhook.forward" is a built-in handler's`,
		`h.yaml:5: url must be an http(s) URL`,
		`h.yaml:6: method must be one of`,
		`h.yaml:7: timeout must be a positive duration`,
		`h.yaml:8: maxRetries must be an integer 0..100`,
		`h.yaml:9: handler: unknown key "colour"`,
		`h.yaml:10: type "a" is declared twice (first at line 4)`,
		`h.yaml:11: environment variable MISSING is not set`,
		`h.yaml:12: handler: type is required`,
		`signing needs a secret`,
		`h.yaml:14: backoff.max must not be below backoff.base`,
		`h.yaml:15: circuitBreaker.threshold must be an integer 1..1000`,
	} {
		require.Contains(t, msg, want)
	}
	require.Len(t, le.Problems, 12, msg)
	require.Len(t, strings.Split(msg, "\n"), 12, "one line each")
}

func TestSwapServesNewTargetAndAddsTypes(t *testing.T) {
	one := newTarget(t, status(200, `{"from":"one"}`))
	two := newTarget(t, status(200, `{"from":"two"}`))
	b, set := run(t, "handlers:\n  - type: t\n    url: "+one.URL+"\n", nil)
	m := settle(t, b, enqueue(t, b, "t", `{}`), contracts.BufferCompleted)
	require.JSONEq(t, `{"from":"one"}`, string(m.Result))

	f, err := declared.Parse("h.yaml", []byte("handlers:\n  - type: t\n    url: "+two.URL+"\n    circuitBreaker: {threshold: 2}\n  - type: fresh\n    url: "+two.URL+"\n"), declared.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"fresh"}, set.Swap(f))
	require.NoError(t, b.RegisterLive(set.Handler("fresh")))
	require.True(t, b.SetCircuit("t", set.Spec("t").Circuit))
	m = settle(t, b, enqueue(t, b, "t", `{}`), contracts.BufferCompleted)
	require.JSONEq(t, `{"from":"two"}`, string(m.Result))
	settle(t, b, enqueue(t, b, "fresh", `{}`), contracts.BufferCompleted)
	require.Error(t, b.RegisterLive(set.Handler("fresh")), "a type registers once")
}

// The shipped example parses (its ${ENV} set).
func TestExampleFileIsValid(t *testing.T) {
	f, err := declared.Load("../../../flows/buffer-handlers.example.yaml", declared.Options{Reserved: []string{"webhook.forward", "sse.emit", "noop"},
		DefaultSecret: "outbound-secret", Getenv: func(k string) (string, bool) { return "x", k == "METABOT_TENANT" }})
	require.NoError(t, err)
	require.Equal(t, []string{"email.send", "metabot.forward"}, f.Types())
	require.Equal(t, 2, f.Specs[0].Version)
	require.Equal(t, declared.BodyMessage, f.Specs[1].Body)
}

// redirectTo answers every request with status and a Location on other.
func redirectTo(other string, status int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other+"/stolen", status) }
}

// A 3xx is never followed: the message is dead-lettered at its first
// attempt (whatever maxRetries says) with its status and where it pointed,
// never completed; the host the redirect names sees nothing, the signature
// least of all.
func TestRedirectDeadLettersAtOnce(t *testing.T) {
	elsewhere := newTarget(t, status(200, `{"delivered":"elsewhere"}`))
	types := map[string]int{"r301": 301, "r302": 302, "r303": 303, "r307": 307, "r308": 308}
	yaml := "handlers:\n"
	targets := map[string]*target{}
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		targets[typ] = newTarget(t, redirectTo(elsewhere.URL, types[typ]))
		yaml += fmt.Sprintf("  - type: %s\n    url: %s/hook\n    maxRetries: 3\n    secret: ${HOOK_SECRET}\n    headers: {X-Api-Key: k-1}\n", typ, targets[typ].URL)
	}
	b, _ := run(t, yaml, map[string]string{"HOOK_SECRET": "hook-secret-0123456789"})
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		m := settle(t, b, enqueue(t, b, typ, `{"n":1}`), contracts.BufferDLQ)
		require.Len(t, m.Errors, 1, "%s: one attempt, no retry", typ)
		require.Equal(t, fmt.Sprintf("HTTP_%d", types[typ]), m.Errors[0].Code)
		require.Contains(t, m.Errors[0].Message, "/stolen")
		require.Contains(t, m.Errors[0].Message, "not followed")
		require.Nil(t, m.Result)
	}
	require.Never(t, func() bool { // a retry or a followed redirect would have come by now
		for _, tg := range targets {
			if len(tg.seen()) > 1 {
				return true
			}
		}
		return len(elsewhere.seen()) > 0
	}, 300*time.Millisecond, 10*time.Millisecond, "a retry, or a request that followed a redirect")
	for typ, tg := range targets {
		require.Len(t, tg.seen(), 1, typ)
	}
	require.Empty(t, elsewhere.seen(), "a request followed a redirect")
}

// A client passed to NewSet that would follow redirects does not.
func TestRedirectNotFollowedWithClientPassedIn(t *testing.T) {
	elsewhere := newTarget(t, status(200, `{}`))
	tg := newTarget(t, redirectTo(elsewhere.URL, http.StatusPermanentRedirect))
	follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	f, err := declared.Parse("h.yaml", []byte("handlers:\n  - type: t\n    url: "+tg.URL+"\n    secret: s3cret-s3cret-s3cret\n"), declared.Options{})
	require.NoError(t, err)
	h := declared.NewSet(f, buffer.Backoff{}, follows, nil).Handler("t")
	_, err = h.Process(context.Background(), &buffer.Message{MessageID: "m-1", Type: "t", Payload: json.RawMessage(`{}`)})
	var se *buffer.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusPermanentRedirect, se.StatusCode)
	require.False(t, h.OnError(err, nil), "a redirect is not retried")
	require.False(t, buffer.Retryable(err), "nor counted against the breaker")
	require.Empty(t, elsewhere.seen())
	require.NoError(t, follows.CheckRedirect(nil, nil), "the caller's client is left as it was")
}

// A handler never signs with a secret flowgate verifies, and an empty
// ${NAME} never falls back to the default.
func TestSigningSecretRules(t *testing.T) {
	env := map[string]string{"EMPTY": "", "HMAC_COPY": "flowgate-hmac-secret-0123", "OWN": "own-secret-0123456789"}
	opt := declared.Options{DefaultSecret: "outbound-secret-012345", Inbound: map[string]string{"HMAC_SECRET": "flowgate-hmac-secret-0123", "BOOKING_AUTH_SECRET": "", "OTHER": "other-inbound-0123456"},
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	parse := func(entry string) (*declared.File, error) {
		return declared.Parse("h.yaml", []byte("handlers:\n  - type: t\n    url: http://x/\n"+entry), opt)
	}
	for entry, want := range map[string]string{
		"    secret: ${EMPTY}\n":                          `h.yaml:4: handler "t": secret is empty`,
		"    sign: true\n    secret: \"\"\n":              `h.yaml:5: handler "t": secret is empty`,
		"    secret: ${HMAC_COPY}\n":                      `handler "t": its secret is HMAC_SECRET's value`,
		"    secret: other-inbound-0123456\n":             `handler "t": its secret is OTHER's value`,
		"    secret: ${UNSET}\n":                          `h.yaml:4: environment variable UNSET is not set`,
		"    signatureVersion: 2\n    secret: ${EMPTY}\n": `h.yaml:5: handler "t": secret is empty`,
	} {
		_, err := parse(entry)
		require.ErrorContains(t, err, want, entry)
		var le *declared.LoadError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Problems, 1, "one problem, not a second about the same secret: %v", err)
	}
	f, err := parse("    sign: true\n")
	require.NoError(t, err)
	require.Equal(t, []byte("outbound-secret-012345"), f.Specs[0].Secret, "sign: true without secret: the outbound secret")
	f, err = parse("    secret: ${OWN}\n")
	require.NoError(t, err)
	require.Equal(t, []byte("own-secret-0123456789"), f.Specs[0].Secret)
	f, err = parse("    sign: false\n    secret: ${EMPTY}\n")
	require.NoError(t, err)
	require.Nil(t, f.Specs[0].Secret, "sign: false signs nothing")

	opt.DefaultSecret = ""
	_, err = parse("    sign: true\n")
	require.ErrorContains(t, err, `handler "t": signing needs a secret (secret: ${NAME}, or set OUTBOUND_HMAC_SECRET)`)
	opt.DefaultSecret = "flowgate-hmac-secret-0123"
	_, err = parse("    sign: true\n")
	require.ErrorContains(t, err, `handler "t": OUTBOUND_HMAC_SECRET is HMAC_SECRET's value`)
}

// A GET sends no body, so its signature covers none: the target can
// verify it (it signed the payload it did not send).
func TestSignedGetVerifies(t *testing.T) {
	tg := newTarget(t, status(200, `{}`))
	secret := "get-secret-0123456789"
	f, err := declared.Parse("h.yaml", []byte("handlers:\n  - type: t\n    url: "+tg.URL+"/g?x=1\n    method: GET\n    secret: "+secret+"\n"+
		"  - type: t2\n    url: "+tg.URL+"/g2\n    method: GET\n    secret: "+secret+"\n    signatureVersion: 2\n"), declared.Options{})
	require.NoError(t, err)
	set := declared.NewSet(f, buffer.Backoff{}, nil, nil)
	for _, typ := range []string{"t", "t2"} {
		_, err = set.Handler(typ).Process(context.Background(), &buffer.Message{MessageID: "m-1", Type: typ, Payload: json.RawMessage(`{"n":1}`)})
		require.NoError(t, err)
	}
	hs := tg.seen()
	require.Len(t, hs, 2)
	require.Empty(t, hs[0].body)
	require.Equal(t, hex.EncodeToString(hmacsig.MAC([]byte(secret), hs[0].header.Get("X-Timestamp"), nil)), hs[0].header.Get("X-Signature"))
	require.Equal(t, hex.EncodeToString(hmacsig.MACV2([]byte(secret), hs[1].header.Get("X-Timestamp"), "GET", "/g2", nil)), hs[1].header.Get("X-Signature"))
}
