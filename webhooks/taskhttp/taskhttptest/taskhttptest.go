// Package taskhttptest runs the queue API and the ACK/FAIL webhooks in
// tests the way production does: the sidecar's app shell (web.New, so
// errors render through the one ErrorHandler), the HMAC verifier with a
// Redis replay guard, a real listener (413 and client disconnects exist
// only there), and signed requests. Golden compares response bodies with
// contracts/testdata/http_<name>.golden after Normalize has replaced their
// volatile values.
package taskhttptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// Secret is the HMAC secret of every Server.
var Secret = []byte("taskhttptest-secret-0123456789")

// DefaultBodyLimit is the app's body limit unless Options say otherwise:
// large enough for a batch of 501 small tasks.
const DefaultBodyLimit = 128 << 10

// Options configure a Server. Zero values take the defaults.
type Options struct {
	BodyLimit int              // default DefaultBodyLimit
	Now       func() time.Time // the verifier's clock; default time.Now
	Logger    *slog.Logger     // the app's logger; default discards
}

// Server is an app shell with a verifier. Register routes on App (using
// Auth where they need it), then Start.
type Server struct {
	App  *fiber.App
	Auth fiber.Handler // signature.Verifier.Middleware() in ModeHMAC
	// HookAuth is the ACK/FAIL webhooks' Auth: the same verifier leaving
	// the replay check to the ledger's script (signature.DeferReplay).
	HookAuth fiber.Handler
	Registry *prometheus.Registry
	URL      string // "http://127.0.0.1:port" once started

	t      testing.TB
	client *http.Client
	seq    atomic.Int64
	epoch  time.Time // when New ran: requests are dated from it
}

// New builds the app shell and the verifier (replay guard on rdb, under a
// prefix of its own). Call Start once routes are registered.
func New(t testing.TB, rdb redis.UniversalClient, o Options) *Server {
	t.Helper()
	if o.BodyLimit == 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	reg := prometheus.NewRegistry()
	app, err := web.New(web.Options{BodyLimit: o.BodyLimit, Logger: o.Logger, Registerer: reg})
	if err != nil {
		t.Fatalf("taskhttptest: web.New: %v", err)
	}
	v, err := signature.New(signature.Config{Secret: Secret, Now: o.Now,
		Replay: signature.NewRedisReplayGuard(rdb, "taskhttptest:replay:")})
	if err != nil {
		t.Fatalf("taskhttptest: signature.New: %v", err)
	}
	return &Server{App: app, Auth: v.Middleware(), HookAuth: v.Middleware(signature.DeferReplay()), Registry: reg, t: t,
		epoch: time.Now()}
}

// Start serves the app on a random local port until the test ends.
func (s *Server) Start() {
	s.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatalf("taskhttptest: listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.App.Listener(ln)
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	s.client = &http.Client{Transport: tr}
	s.URL = "http://" + ln.Addr().String()
	s.t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = s.App.ShutdownWithTimeout(5 * time.Second)
		<-done
	})
}

// Reply is a response, read in full.
type Reply struct {
	Status  int
	Body    []byte
	Header  http.Header
	Elapsed time.Duration
}

// Decode unmarshals the body into v, failing the test if it is not JSON.
func (r Reply) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("taskhttptest: body is not %T: %v\n%s", v, err, r.Body)
	}
}

// Error decodes an error envelope and checks status and code.
func (r Reply) Error(t testing.TB, status int, code contracts.Code) contracts.ErrorResponse {
	t.Helper()
	if r.Status != status {
		t.Fatalf("taskhttptest: status %d, want %d\n%s", r.Status, status, r.Body)
	}
	var env contracts.ErrorResponse
	r.Decode(t, &env)
	if env.Success || env.Error.Code != code || env.Error.Message == "" || env.Error.RequestID == "" {
		t.Fatalf("taskhttptest: want a %q envelope with message and request_id, got\n%s", code, r.Body)
	}
	return env
}

// request is how Do builds one request.
type request struct {
	ctx      context.Context
	sign     bool
	secret   []byte
	at       time.Time
	header   http.Header
	signBody []byte // when set, the body signed instead of the one sent
	v2       bool   // sign version 2 (method and target too)
}

// Option changes one request.
type Option func(*request)

// Unsigned sends no signature headers.
func Unsigned() Option { return func(r *request) { r.sign = false } }

// SignedAt signs with X-Timestamp at (so two requests with the same body
// and time carry the same signature: a replay).
func SignedAt(at time.Time) Option { return func(r *request) { r.at = at } }

// SignedWith signs with another secret.
func SignedWith(secret []byte) Option { return func(r *request) { r.secret = secret } }

// SigningBody signs other bytes than those sent (a forged signature).
func SigningBody(b []byte) Option { return func(r *request) { r.signBody = b } }

// V2 signs version 2: method and target too.
func V2() Option { return func(r *request) { r.v2 = true } }

// Header sets a request header (after signing, so it can overwrite one).
func Header(k, v string) Option { return func(r *request) { r.header.Set(k, v) } }

// Context sends the request with ctx; cancelling it hangs up.
func Context(ctx context.Context) Option { return func(r *request) { r.ctx = ctx } }

// Do sends a request through an http.Client, signed with Secret (unless
// options say otherwise), and reads the whole reply. A nil body sends
// none. It fails the test on transport errors, except when the request's
// context was cancelled; then Reply.Status is 0.
//
// The signature covers X-Timestamp and the body only, not the method or
// path, so two requests with the same body signed in the same second carry
// the same signature and the second is refused as a replay. Do therefore
// dates successive requests one second apart from the server's creation
// (120 s before it, 119, … up to 119 s after it, then again: well inside
// the 300 s tolerance for a test shorter than 3 min), unless SignedAt
// fixes the time. Dating them back from the moment of sending instead made
// two requests sent a second apart under load carry the same timestamp.
func (s *Server) Do(method, path string, body []byte, opts ...Option) Reply {
	s.t.Helper()
	req, ctx := s.build(method, path, body, opts)
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Reply{Elapsed: time.Since(start)}
		}
		s.t.Fatalf("taskhttptest: %s %s: %v", method, path, err)
	}
	return s.read(resp, start)
}

// DoRaw is Do over a connection of its own that reads the reply while the
// request is still being written, and ignores write errors. A server that
// refuses an oversized body answers 413 and closes the connection after
// the headers; an http.Client still writing the body then often reports
// "connection reset" instead of the answer.
func (s *Server) DoRaw(method, path string, body []byte, opts ...Option) Reply {
	s.t.Helper()
	req, _ := s.build(method, path, body, opts)
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		s.t.Fatalf("taskhttptest: dial: %v", err)
	}
	defer conn.Close()
	start := time.Now()
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = req.Write(conn)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		s.t.Fatalf("taskhttptest: raw %s %s: %v", method, path, err)
	}
	r := s.read(resp, start)
	_ = conn.Close()
	<-written
	return r
}

// build makes the request Do and DoRaw send.
func (s *Server) build(method, path string, body []byte, opts []Option) (*http.Request, context.Context) {
	s.t.Helper()
	step := time.Duration(s.seq.Add(1)%240) * time.Second
	at := s.epoch.Add(-2*time.Minute + step)
	r := request{ctx: context.Background(), sign: true, secret: Secret, at: at, header: http.Header{}}
	for _, o := range opts {
		o(&r)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(r.ctx, method, s.URL+path, rd)
	if err != nil {
		s.t.Fatalf("taskhttptest: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.sign {
		signed := body
		if r.signBody != nil {
			signed = r.signBody
		}
		if r.v2 {
			signature.SignRequestV2(req, r.secret, r.at, signed)
		} else {
			signature.SignRequest(req, r.secret, r.at, signed)
		}
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	return req, r.ctx
}

func (s *Server) read(resp *http.Response, start time.Time) Reply {
	s.t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("taskhttptest: read reply: %v", err)
	}
	return Reply{Status: resp.StatusCode, Body: b, Header: resp.Header, Elapsed: time.Since(start)}
}

// JSON marshals v for a request body.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("taskhttptest: marshal: %v", err)
	}
	return b
}
