// Package loadgen drives an HTTP endpoint with a fixed number of
// keep-alive connections, one request in flight on each, and reports
// throughput and latency percentiles. The load generator shares this
// 2-core machine with the server it measures, so what it costs is taken
// from the server: on Linux it is a wire client (wire.go: requests
// rendered before the clock starts, raw sockets on epoll loops); elsewhere,
// with Config.Client set or FLOWGATE_LOADGEN=fasthttp, fasthttp's client (net/http's costs more CPU
// per request still).
package loadgen

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Config describes one run. Build fills request i (0-based, unique across
// workers); it must set method, URI, headers and body. The wire client
// calls it for every request before the first is sent, so a request must
// not depend on an answer of the same run (a signature's timestamp is
// then as old as the run).
type Config struct {
	Addr     string // host:port
	Conns    int    // concurrent connections and workers
	Requests int    // total requests
	Build    func(i int, req *fasthttp.Request)
	// Check validates a response; a non-nil error counts as a failure.
	// On the wire client only its status and body are set.
	Check func(i int, resp *fasthttp.Response) error
	// Client forces fasthttp's client (a header-rich check, a comparison).
	Client bool
	// Loops is the wire client's epoll loops (default 1: one thread is
	// enough for tens of thousands of requests per second).
	Loops int
}

// Result is what one run measured.
type Result struct {
	Requests   int
	Failures   int
	FirstError error
	Elapsed    time.Duration
	P50, P99   time.Duration
	Max        time.Duration
}

// PerSecond is the completed-request rate.
func (r Result) PerSecond() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("%d req in %s = %.0f req/s, p50 %s, p99 %s, max %s, failures %d",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.PerSecond(),
		r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond), r.Failures)
}

// Run executes cfg and blocks until every request completed. An error of
// the wire client itself (a connection refused or closed, an answer it
// cannot parse) is the result's FirstError, with every request not
// answered counted as failed.
func Run(cfg Config) Result {
	if !cfg.Client && wireSupported && os.Getenv("FLOWGATE_LOADGEN") != "fasthttp" {
		res, err := runWire(cfg)
		if err != nil {
			res.Requests = cfg.Requests
			res.Failures = cfg.Requests
			res.FirstError = err
		}
		return res
	}
	return runClient(cfg)
}

// runClient is Run on fasthttp's client.
func runClient(cfg Config) Result {
	client := &fasthttp.HostClient{Addr: cfg.Addr, MaxConns: cfg.Conns, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	tl := newTally(cfg.Requests)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Requests {
					return
				}
				req.Reset()
				resp.Reset()
				cfg.Build(i, req)
				t0 := time.Now()
				err := client.Do(req, resp)
				tl.lat[i] = time.Since(t0)
				if err == nil && cfg.Check != nil {
					err = cfg.Check(i, resp)
				}
				tl.fail(err)
			}
		}()
	}
	wg.Wait()
	return tl.result(time.Since(start))
}

// tally is what a run's workers record: each request's latency (by
// index, so no lock) and the failures with the first error.
type tally struct {
	lat      []time.Duration
	failures atomic.Int64
	firstErr atomic.Value
}

func newTally(requests int) *tally { return &tally{lat: make([]time.Duration, requests)} }

// fail counts err (nil: nothing).
func (t *tally) fail(err error) {
	if err != nil {
		t.failures.Add(1)
		t.firstErr.CompareAndSwap(nil, err)
	}
}

func (t *tally) result(elapsed time.Duration) Result {
	res := Result{Requests: len(t.lat), Failures: int(t.failures.Load()), Elapsed: elapsed}
	if e, ok := t.firstErr.Load().(error); ok {
		res.FirstError = e
	}
	res.percentiles(t.lat)
	return res
}

// percentiles sorts lat and sets P50, P99 and Max from it.
func (r *Result) percentiles(lat []time.Duration) {
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	if n := len(lat); n > 0 {
		r.P50, r.P99, r.Max = lat[n/2], lat[n*99/100], lat[n-1]
	}
}
