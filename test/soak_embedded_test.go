package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSoakEmbeddedMemory runs the binary in embedded mode (the README's
// quickstart) under steady traffic whose every key expires — web holds
// taken and released by a new client each time, signed queue reads that
// each leave a replay-guard key, slot reads for a new session each time —
// for FLOWGATE_SOAK (e.g. 10m; unset: skipped, it is a measurement, not a
// CI test) and samples the process' RSS and the embedded store's key
// count every 30 s. Before the embedded store's TTLs followed the wall
// clock, every one of those keys stayed until the process exited.
// Reproduce: FLOWGATE_SOAK=10m test/run -run TestSoakEmbeddedMemory -v -timeout 20m ./test/
func TestSoakEmbeddedMemory(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("FLOWGATE_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set FLOWGATE_SOAK (e.g. 10m) to run the embedded memory soak")
	}
	p := startFlowgate(t, withSecrets(map[string]string{"WEBHOOK_TOLERANCE": "30s", "HOLD_TTL": "5s"}))
	rdb := embeddedRedis(t, p)
	ctx := context.Background()
	typ, starts := webSlots(t, p)
	a := newAPI(t, p, newSigner())
	c := newBookingClient(t, p)

	type sample struct {
		at          time.Duration
		rssKB, keys int64
	}
	var samples []sample
	take := func(at time.Duration) {
		n, err := rdb.DBSize(ctx).Result()
		require.NoError(t, err)
		s := sample{at: at, rssKB: rssKB(t, p.PID()), keys: n}
		samples = append(samples, s)
		t.Logf("%6s  rss %7d kB  keys %6d", at.Round(time.Second), s.rssKB, s.keys)
	}
	start := time.Now()
	next := time.Duration(0)
	requests := 0
	for i := 0; time.Since(start) < d; i++ {
		if el := time.Since(start); el >= next {
			take(el)
			next += 30 * time.Second
		}
		client := fmt.Sprintf("soak-%d", i)
		body, _ := json.Marshal(map[string]string{"appointmentTypeId": typ, "clientId": client,
			"slotStartDate": starts[i%len(starts)]})
		resp, err := http.Post(p.Base+"/v1/holds", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		var h struct {
			HoldID string `json:"holdId"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusCreated && i%2 == 0 { // half released, half left to expire
			req, _ := http.NewRequest(http.MethodDelete, p.Base+"/v1/holds/"+h.HoldID+"?clientId="+client, nil)
			if r, err := http.DefaultClient.Do(req); err == nil {
				_ = r.Body.Close()
			}
		}
		if i%40 == 0 { // about once a second: the signer never signs one request twice in a second
			require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/queue/stats", nil).Status)
		}
		if i%10 == 0 {
			c.slots(fmt.Sprintf("soak-call-%d", i), 0)
		}
		requests += 2
		time.Sleep(20 * time.Millisecond)
	}
	take(time.Since(start))
	t.Logf("%d requests in %s", requests, time.Since(start).Round(time.Second))
	// Flat: after the first TTLs have lapsed (replay keys live 2 × 30 s,
	// holds 5 s), neither the keys nor the RSS keep growing.
	warm := samples[len(samples)/3]
	last := samples[len(samples)-1]
	require.LessOrEqual(t, last.keys, warm.keys*3/2+200, "keys keep growing: %d at %s, %d at the end", warm.keys, warm.at, last.keys)
	require.LessOrEqual(t, last.rssKB, warm.rssKB*5/4, "RSS keeps growing: %d kB at %s, %d kB at the end", warm.rssKB, warm.at, last.rssKB)
}

// rssKB reads VmRSS of pid from /proc.
func rssKB(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(raw), "\n") {
		if f, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.Fields(f)[0], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}
