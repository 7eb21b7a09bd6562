package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestLoadBufferVsBullMQ adds and processes N no-op jobs (default 100,000,
// FLOWGATE_BULLMQ_N) at concurrency 10 and 50 with flowgate's buffer and
// with BullMQ on the same Redis in the same run. BullMQ is installed by
// test/bench/bullmq/run.sh (npm, into a cache dir); without node/npm, or
// under -race, the test skips. Both sides add in bulks of 1000 while one
// consumer processes.
func TestLoadBufferVsBullMQ(t *testing.T) {
	if raceEnabled {
		t.Skip("a benchmark; run without -race")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	n := 100_000
	if s := os.Getenv("FLOWGATE_BULLMQ_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dequeuers := []int{1, 2, 4}
	if s := os.Getenv("FLOWGATE_BULLMQ_DEQUEUERS"); s != "" { // e.g. "2,4,8"
		dequeuers = dequeuers[:0]
		for _, f := range strings.Split(s, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(t, err, "FLOWGATE_BULLMQ_DEQUEUERS")
			dequeuers = append(dequeuers, d)
		}
	}
	for _, conc := range []int{10, 50} {
		for _, servers := range dequeuers {
			rate, el := flowgateRun(t, n, conc, servers)
			t.Logf("flowgate  concurrency %2d, %d dequeuer(s): %d jobs added+processed in %s = %.0f jobs/s", conc, servers, n, el.Round(time.Millisecond), rate)
		}
		db := redistest.New(t)
		out, err := exec.Command("bash", "bench/bullmq/run.sh", db.URL(), strconv.Itoa(n), strconv.Itoa(conc)).Output()
		require.NoError(t, err, "bullmq benchmark: %s", out)
		var r struct {
			TotalMs, AddMs, Rate float64
		}
		require.NoError(t, json.Unmarshal(out, &r), "%s", out)
		t.Logf("BullMQ    concurrency %2d, 1 worker:        %d jobs added+processed in %.0f ms = %.0f jobs/s (adds took %.0f ms)", conc, n, r.TotalMs, r.Rate, r.AddMs)
	}
}

// flowgateRun is flowgate's side: batches of 1000 enqueued in order while
// the noop handler processes them.
func flowgateRun(t *testing.T, n, conc, servers int) (float64, time.Duration) {
	t.Helper()
	db := redistest.New(t)
	b := inProcess(t, db, conc, builtin.NewNoop(), func(c *buffer.Config) { c.Servers = servers })
	defer b.Stop()
	start := time.Now()
	enqueueAll(t, b, builtin.TypeNoop, n)
	waitCompleted(t, db.Client, "buffer.default", n, 10*time.Minute)
	el := time.Since(start)
	return float64(n) / el.Seconds(), el
}
