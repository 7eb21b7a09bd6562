package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestLoadBufferVsBullMQ compares flowgate's buffer with BullMQ on the
// same Redis in the same run, on N no-op jobs (default 100,000,
// FLOWGATE_BULLMQ_N). BullMQ is installed by test/bench/bullmq/run.sh
// (npm, into a cache dir); without node/npm, or under -race, the test
// skips. Three modes (FLOWGATE_BULLMQ_MODE):
//
//   - mixed (the default): both sides add in bulks of 1000 while one
//     consumer processes, at concurrency 10 and 50; flowgate with 1, 2, 4
//     dequeuers (FLOWGATE_BULLMQ_DEQUEUERS) of that many workers each.
//   - prefilled: pure processing. N jobs are added first, then the
//     consumers start and only the processing is timed. Concurrency is
//     equal on both sides: FLOWGATE_BULLMQ_CONCURRENCY (default "10,50")
//     is the total, flowgate's split over each dequeuer count of
//     FLOWGATE_BULLMQ_DEQUEUERS that divides it (default 1, 2, 5).
//     FLOWGATE_BULLMQ_ROUNDS (default 3) alternates the sides; the best of
//     each and their ratio are logged per concurrency.
//   - http: the shipped binary over HTTP, add + process, in settings of
//     BUFFER_SERVERS × BUFFER_CONCURRENCY and REDIS_CLIENT_MODE, beside
//     BullMQ's mixed bench (httpAddProcess).
//
// FLOWGATE_BULLMQ_SIDES=flowgate (or bullmq) runs one side only (a
// before/after comparison of two test binaries in alternation), and
// FLOWGATE_BULLMQ_CPUPROFILE=<file> writes a CPU profile of flowgate's
// processing (of its last run).
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
	switch os.Getenv("FLOWGATE_BULLMQ_MODE") {
	case "prefilled":
		pureProcessing(t, n)
		return
	case "http":
		httpAddProcess(t, n)
		return
	}
	dequeuers := envInts(t, "FLOWGATE_BULLMQ_DEQUEUERS", []int{1, 2, 4})
	for _, conc := range []int{10, 50} {
		for _, servers := range dequeuers {
			rate, el := flowgateRun(t, n, conc, servers)
			t.Logf("flowgate  concurrency %2d, %d dequeuer(s): %d jobs added+processed in %s = %.0f jobs/s", conc, servers, n, el.Round(time.Millisecond), rate)
		}
		r := bullmqRun(t, n, conc, "mixed")
		t.Logf("BullMQ    concurrency %2d, 1 worker:        %d jobs added+processed in %.0f ms = %.0f jobs/s (adds took %.0f ms)", conc, n, r.TotalMs, r.Rate, r.AddMs)
	}
}

// envInts is a comma-separated list of ints from the environment, or def.
func envInts(t *testing.T, name string, def []int) []int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, name)
		out = append(out, d)
	}
	return out
}

// rotated is xs starting at its k-th element (wrapping), so that over the
// rounds of a comparison no setting is always measured first, on the
// coldest machine.
func rotated[T any](xs []T, k int) []T {
	if len(xs) == 0 {
		return xs
	}
	k %= len(xs)
	return append(append(make([]T, 0, len(xs)), xs[k:]...), xs[:k]...)
}

// inTurn runs the two sides of a comparison's round, ours first in odd
// rounds and theirs first in even ones.
func inTurn(round int, ours, theirs func()) {
	if round%2 == 0 {
		ours, theirs = theirs, ours
	}
	ours()
	theirs()
}

// bullmqResult is bench.mjs's JSON line.
type bullmqResult struct {
	TotalMs, AddMs, ProcessMs, Rate   float64
	NodeCPUUsPerJob, RedisCPUUsPerJob float64 // prefilled: while processing
}

// bullmqRun runs BullMQ's side on a database of its own.
func bullmqRun(t *testing.T, n, conc int, mode string) bullmqResult {
	t.Helper()
	db := redistest.New(t)
	out, err := exec.Command("bash", "bench/bullmq/run.sh", db.URL(), strconv.Itoa(n), strconv.Itoa(conc), mode).Output()
	require.NoError(t, err, "bullmq benchmark: %s", out)
	var r bullmqResult
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r
}

// pureProcessing is TestLoadBufferVsBullMQ's prefilled mode.
func pureProcessing(t *testing.T, n int) {
	rounds := 3
	if s := os.Getenv("FLOWGATE_BULLMQ_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	sides := os.Getenv("FLOWGATE_BULLMQ_SIDES")
	runs := func(side string) bool { return sides == "" || strings.Contains(sides, side) }
	dequeuers := envInts(t, "FLOWGATE_BULLMQ_DEQUEUERS", []int{1, 2, 5})
	for _, conc := range envInts(t, "FLOWGATE_BULLMQ_CONCURRENCY", []int{10, 50}) {
		best := map[string]float64{}
		bestOf := func(k string, r float64) { best[k] = max(best[k], r) }
		for round := 1; round <= rounds; round++ {
			ours := func() {
				if !runs("flowgate") {
					return
				}
				for _, servers := range rotated(dequeuers, round-1) {
					if conc%servers != 0 {
						continue
					}
					var rate, goCPU, redisCPU float64
					var el time.Duration
					// A subtest per run: its database goes back when it ends
					// (redistest leases 15).
					t.Run(fmt.Sprintf("flowgate-%d-%dx%d", round, servers, conc/servers), func(t *testing.T) {
						rate, el, goCPU, redisCPU = flowgatePrefilled(t, n, servers, conc/servers)
					})
					t.Logf("round %d flowgate concurrency %2d = %d × %d: %d pre-filled jobs processed in %s = %.0f jobs/s; CPU per job: Go %.0f µs, redis-server %.0f µs",
						round, conc, servers, conc/servers, n, el.Round(time.Millisecond), rate, 1e6*goCPU/float64(n), 1e6*redisCPU/float64(n))
					bestOf("flowgate", rate)
				}
			}
			theirs := func() {
				if !runs("bullmq") {
					return
				}
				var r bullmqResult
				t.Run(fmt.Sprintf("bullmq-%d-%d", round, conc), func(t *testing.T) { r = bullmqRun(t, n, conc, "prefilled") })
				t.Logf("round %d BullMQ   concurrency %2d, 1 worker: %d pre-filled jobs processed in %.0f ms = %.0f jobs/s; CPU per job: node %.0f µs, redis-server %.0f µs",
					round, conc, n, r.ProcessMs, r.Rate, r.NodeCPUUsPerJob, r.RedisCPUUsPerJob)
				bestOf("bullmq", r.Rate)
			}
			inTurn(round, ours, theirs)
		}
		msg := fmt.Sprintf("pure processing, concurrency %d, best of %d rounds: flowgate %.0f jobs/s, BullMQ %.0f jobs/s", conc, rounds, best["flowgate"], best["bullmq"])
		if best["flowgate"] > 0 && best["bullmq"] > 0 {
			msg += fmt.Sprintf(", flowgate ÷ BullMQ = %.2f", best["flowgate"]/best["bullmq"])
		}
		t.Log(msg)
	}
}

// flowgatePrefilled enqueues n no-op messages into the paused NORMAL
// queue of a started buffer (servers × conc workers), then resumes the
// queue and times until all are completed. It returns the rate, the
// time, and the CPU seconds of this process and of redis-server while
// processing (steadier than the rate on a busy machine).
func flowgatePrefilled(t *testing.T, n, servers, conc int) (rate float64, el time.Duration, goCPU, redisCPU float64) {
	t.Helper()
	db := redistest.New(t)
	q := buffer.QueueFor(contracts.BufferPriorityNormal)
	insp := asynq.NewInspectorFromRedisClient(db.Client)
	b := inProcess(t, db, conc, builtin.NewNoop(), func(c *buffer.Config) { c.Servers = servers })
	defer b.Stop()
	// Asynq's PauseQueue needs the queue to exist: one message first.
	enqueueAll(t, b, builtin.TypeNoop, 1)
	waitCompleted(t, db.Client, q, 1, time.Minute)
	require.NoError(t, insp.PauseQueue(q))
	enqueueAll(t, b, builtin.TypeNoop, n)
	require.NoError(t, db.Client.Del(context.Background(), "asynq:{"+q+"}:completed").Err())
	if path := os.Getenv("FLOWGATE_BULLMQ_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	goCPU, redisCPU = selfCPU(t), serverCPU(t, db.Client)
	start := time.Now()
	require.NoError(t, insp.UnpauseQueue(q))
	waitCompleted(t, db.Client, q, n, 10*time.Minute)
	el = time.Since(start)
	goCPU, redisCPU = selfCPU(t)-goCPU, serverCPU(t, db.Client)-redisCPU
	return float64(n) / el.Seconds(), el, goCPU, redisCPU
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

// TestRotatedAndInTurn: the comparisons' order helpers.
func TestRotatedAndInTurn(t *testing.T) {
	xs := []string{"a", "b", "c"}
	require.Equal(t, []string{"a", "b", "c"}, rotated(xs, 0))
	require.Equal(t, []string{"b", "c", "a"}, rotated(xs, 1))
	require.Equal(t, []string{"a", "b", "c"}, rotated(xs, 3))
	require.Equal(t, []string{"a", "b", "c"}, xs, "the input stays as it was")
	require.Empty(t, rotated([]int(nil), 2))
	var got []string
	for round := 1; round <= 2; round++ {
		inTurn(round, func() { got = append(got, "ours") }, func() { got = append(got, "theirs") })
	}
	require.Equal(t, []string{"ours", "theirs", "theirs", "ours"}, got)
}
