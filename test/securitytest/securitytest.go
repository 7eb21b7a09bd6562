// Package securitytest holds the pieces of the outbound-signature and
// redirect attacks that the sidecar's tests and the chaos drill both run:
// a target that records every delivery flowgate sends it (all a spy there
// sees), the replay of those deliveries, byte for byte and header for
// header, at every route flowgate verifies signatures on, and a target
// that redirects to another host which counts what reaches it.
package securitytest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Route is one route flowgate verifies signatures on.
type Route struct{ Method, Path string }

func (r Route) String() string { return r.Method + " " + r.Path }

// SignedRoutes are flowgate's signed routes (package webhooks: the ACK
// and FAIL webhooks at their default paths and under /webhook; package
// webhooks/taskhttp: the queue API) with :queue_id set to id.
func SignedRoutes(id string) []Route {
	return []Route{
		{"POST", "/ack"}, {"POST", "/fail"}, {"POST", "/webhook/ack"}, {"POST", "/webhook/fail"},
		{"POST", "/queue"}, {"GET", "/queue"}, {"GET", "/queue/stats"}, {"POST", "/queue/claim"},
		{"GET", "/queue/" + id}, {"PATCH", "/queue/" + id + "/status"}, {"PATCH", "/queue/" + id + "/requeue"},
		{"POST", "/queue/" + id + "/replay"}, {"POST", "/queue/" + id + "/heartbeat"},
	}
}

// RoutePatterns are SignedRoutes as the route table names them
// ("METHOD /queue/:queue_id/…"), to check that no signed route was added
// without the attack covering it.
func RoutePatterns() []string {
	var out []string
	for _, r := range SignedRoutes(":queue_id") {
		out = append(out, r.String())
	}
	return out
}

// Delivery is one request a target received: method, target, every
// header and the body.
type Delivery struct {
	Method, URI string
	Header      http.Header
	Body        []byte
}

// Capture is a target that records every delivery and answers 200 {}
// (Answer, when set, answers instead).
type Capture struct {
	*httptest.Server
	Answer func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	seen []Delivery
}

// NewCapture starts a Capture, closed when t ends.
func NewCapture(t testing.TB) *Capture {
	c := &Capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.seen = append(c.seen, Delivery{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		answer := c.Answer
		c.mu.Unlock()
		if answer != nil {
			answer(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(c.Close)
	return c
}

// Deliveries are what the target received so far.
func (c *Capture) Deliveries() []Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Delivery(nil), c.seen...)
}

// Wait waits until the target received at least n deliveries and returns
// them.
func (c *Capture) Wait(t testing.TB, n int, timeout time.Duration) []Delivery {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if d := c.Deliveries(); len(d) >= n {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target received %d deliveries in %s, want %d", len(c.Deliveries()), timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Replay sends d again, its body and every header as received, as
// route r of base (http://host:port) and returns the status.
func Replay(base string, d Delivery, r Route) (int, error) {
	var body io.Reader
	if len(d.Body) > 0 {
		body = bytes.NewReader(d.Body)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, body)
	if err != nil {
		return 0, err
	}
	req.Header = d.Header.Clone()
	req.Header.Del("Content-Length") // set from the body
	req.Header.Del("Accept-Encoding")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Tally counts replays: an attempt is accepted when flowgate answered
// anything but 401, i.e. the request got past the signature check.
type Tally struct {
	Attempts, Accepted int
	Accepts            []string // "METHOD path: status" of each accepted one
}

func (t Tally) String() string { return fmt.Sprintf("attempts=%d accepted=%d", t.Attempts, t.Accepted) }

// ReplayAll replays every delivery at every route and tallies the
// answers. A transport error fails t.
func ReplayAll(t testing.TB, base string, ds []Delivery, routes []Route) Tally {
	t.Helper()
	var tl Tally
	for _, d := range ds {
		for _, r := range routes {
			status, err := Replay(base, d, r)
			if err != nil {
				t.Fatalf("replay at %s: %v", r, err)
			}
			tl.Attempts++
			if status != http.StatusUnauthorized {
				tl.Accepted++
				tl.Accepts = append(tl.Accepts, fmt.Sprintf("%s (delivery %s %s): %d", r, d.Method, d.URI, status))
			}
		}
	}
	return tl
}

// Redirector is a target that answers every request with a redirect
// (Status) to Elsewhere, a host that counts what reaches it.
type Redirector struct {
	*httptest.Server
	Elsewhere *httptest.Server
	Hits      atomic.Int64 // requests the redirecting target got
	Followed  atomic.Int64 // requests that reached Elsewhere
	Signed    atomic.Int64 // of those, carrying X-Signature or a secret header
}

// SecretHeaders are the headers Redirector counts as carrying a secret:
// flowgate's signature and the headers a declared handler is given.
var SecretHeaders = []string{"X-Signature", "Authorization", "X-Api-Key"}

// NewRedirector starts a Redirector answering status, closed when t ends.
func NewRedirector(t testing.TB, status int) *Redirector {
	rd := &Redirector{}
	rd.Elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd.Followed.Add(1)
		for _, h := range SecretHeaders {
			if r.Header.Get(h) != "" {
				rd.Signed.Add(1)
				break
			}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"delivered":"elsewhere"}`)
	}))
	t.Cleanup(rd.Elsewhere.Close)
	rd.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd.Hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, rd.Elsewhere.URL+"/stolen"+r.URL.RequestURI(), status)
	}))
	t.Cleanup(rd.Close)
	return rd
}
