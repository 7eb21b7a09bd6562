package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// TestLoadCachedSlots compares getApptSlots answered from a fresh tier
// with GET /healthz on the same flowgate in the same run (real Redis, the
// simulator behind it; the tiers are refreshed first and no request
// reaches Cloud9). It runs only when asked (it is a measurement):
//
//	FLOWGATE_BENCH=1 go test -run TestLoadCachedSlots -v ./sidecar/
//
// FLOWGATE_BENCH_N requests per endpoint (default 2000), 8 connections.
func TestLoadCachedSlots(t *testing.T) {
	if os.Getenv("FLOWGATE_BENCH") == "" {
		t.Skip("a measurement: FLOWGATE_BENCH=1 runs it")
	}
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("FLOWGATE_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	warmTiers(t, p)
	before := p.sim.Calls("GetOnlineReservations")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	root := p.base[:len(p.base)-len(parityBase)]
	healthz := measure(t, n, func() (*http.Response, error) { return client.Get(root + "/healthz") })
	slots := measure(t, n, func() (*http.Response, error) {
		return client.Post(p.base+"/getApptSlots", "application/json", bytes.NewReader([]byte(`{"sessionId":"bench"}`)))
	})
	require.Equal(t, before, p.sim.Calls("GetOnlineReservations"), "every getApptSlots was answered from the tiers")
	t.Logf("BENCH /healthz: %s", healthz)
	offered, size := slotsOffered(t, p)
	t.Logf("BENCH getApptSlots (tier 1, %d slots offered, %d kB answer): %s", offered, size/1024, slots)
	t.Logf("BENCH getApptSlots / healthz throughput: %.3f", slots.rate/healthz.rate)
}

type figures struct {
	rate          float64
	p50, p99, max time.Duration
}

func (f figures) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %s, p99 %s, max %s", f.rate, f.p50.Round(10*time.Microsecond),
		f.p99.Round(10*time.Microsecond), f.max.Round(10*time.Microsecond))
}

func measure(t *testing.T, n int, req func() (*http.Response, error)) figures {
	t.Helper()
	const conns = 8
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var next sync.Mutex
	i := 0
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				t0 := time.Now()
				resp, err := req()
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				lat[k] = time.Since(t0)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return figures{rate: float64(n) / el.Seconds(), p50: lat[n/2], p99: lat[n*99/100], max: lat[n-1]}
}

func slotsOffered(t *testing.T, p *parityEnv) (n, bytes int) {
	t.Helper()
	_, body := p.post(t, "/getApptSlots", map[string]any{})
	return len(obj(t, body)["slots"].([]any)), len(body)
}
