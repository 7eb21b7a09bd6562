package test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/test/loadgen"
	"github.com/flowgate/flowgate/test/redistest"
)

// bufferSetting is one setting of the shipped binary that the http mode
// of TestLoadBufferVsBullMQ measures: "default" (nothing set: what an
// operator gets), "SxC" (BUFFER_SERVERS=S, BUFFER_CONCURRENCY=C), either
// followed by "/plain" (REDIS_CLIENT_MODE=plain).
type bufferSetting string

// env is the binary's environment for s on db: bufferEnv without its
// BUFFER_SERVERS and BUFFER_CONCURRENCY unless s names them.
func (s bufferSetting) env(t *testing.T, db *redistest.DB) map[string]string {
	env := bufferEnv(db, nil)
	delete(env, "BUFFER_SERVERS")
	delete(env, "BUFFER_CONCURRENCY")
	split, mode, _ := strings.Cut(string(s), "/")
	if mode == "plain" {
		env["REDIS_CLIENT_MODE"] = "plain"
	}
	if split != "default" {
		servers, conc, ok := strings.Cut(split, "x")
		_, e1 := strconv.Atoi(servers)
		_, e2 := strconv.Atoi(conc)
		require.True(t, ok && e1 == nil && e2 == nil, "setting %q: want default or SxC, then /plain or nothing", s)
		env["BUFFER_SERVERS"], env["BUFFER_CONCURRENCY"] = servers, conc
	}
	return env
}

// httpAddProcess is TestLoadBufferVsBullMQ's http mode: the shipped
// binary, each setting of FLOWGATE_BULLMQ_SETTINGS (default
// "default,2x10,4x5,4x10,default/plain"), is sent n no-op messages of
// normal priority over HTTP in batches of 1000 (4 connections) while it
// processes them, timed from the first request until every message is
// completed; BullMQ's mixed bench (bulks of 1000 added while one worker
// processes, concurrency FLOWGATE_BULLMQ_CONCURRENCY, default 10 and 50)
// runs in the same rounds on the same Redis. Each round starts at the next
// setting and the two sides take turns going first (rotated, inTurn), so
// that nothing is always measured first, on the coldest machine. It logs
// each run, the best of each setting over FLOWGATE_BULLMQ_ROUNDS (default
// 2), the default's share of the best setting (issue 42: within 10 %) and
// flowgate ÷ BullMQ.
func httpAddProcess(t *testing.T, n int) {
	rounds := 2
	if s := os.Getenv("FLOWGATE_BULLMQ_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	settings := []bufferSetting{"default", "2x10", "4x5", "4x10", "default/plain"}
	if s := os.Getenv("FLOWGATE_BULLMQ_SETTINGS"); s != "" {
		settings = nil
		for _, f := range strings.Split(s, ",") {
			settings = append(settings, bufferSetting(strings.TrimSpace(f)))
		}
	}
	concs := envInts(t, "FLOWGATE_BULLMQ_CONCURRENCY", []int{10, 50})
	best := map[string]float64{}
	for round := 1; round <= rounds; round++ {
		ours := func() {
			for _, s := range rotated(settings, round-1) {
				var rate float64
				var line string
				t.Run(fmt.Sprintf("flowgate-%d-%s", round, strings.ReplaceAll(string(s), "/", "-")), func(t *testing.T) {
					rate, line = flowgateHTTPRun(t, n, s)
				})
				t.Logf("round %d flowgate %-14s %s", round, s, line)
				best[string(s)] = max(best[string(s)], rate)
			}
		}
		theirs := func() {
			for _, conc := range concs {
				var r bullmqResult
				t.Run(fmt.Sprintf("bullmq-%d-%d", round, conc), func(t *testing.T) { r = bullmqRun(t, n, conc, "mixed") })
				t.Logf("round %d BullMQ   concurrency %2d: %d jobs added+processed in %.0f ms = %.0f jobs/s (adds took %.0f ms)",
					round, conc, n, r.TotalMs, r.Rate, r.AddMs)
				best["bullmq"] = max(best["bullmq"], r.Rate)
			}
		}
		inTurn(round, ours, theirs)
	}
	top, topRate := "", 0.0
	for _, s := range settings {
		if best[string(s)] > topRate {
			top, topRate = string(s), best[string(s)]
		}
		t.Logf("best of %d rounds: flowgate %-14s %6.0f jobs/s", rounds, s, best[string(s)])
	}
	t.Logf("best of %d rounds: BullMQ                 %6.0f jobs/s", rounds, best["bullmq"])
	if d, ok := best["default"]; ok && topRate > 0 {
		t.Logf("the default is %.0f %% of the best setting (%s); default ÷ BullMQ = %.2f, best ÷ BullMQ = %.2f",
			100*d/topRate, top, d/best["bullmq"], topRate/best["bullmq"])
	}
}

// flowgateHTTPRun starts the binary with setting s on a database of its
// own and sends it n no-op messages over HTTP (batches of 1000, 4
// connections) while it processes them. It returns the rate from the
// first request until all are completed, and a line with the CPU per
// message of the load generator, flowgate and redis-server.
func flowgateHTTPRun(t *testing.T, n int, s bufferSetting) (float64, string) {
	t.Helper()
	db := redistest.New(t)
	p := startFlowgate(t, s.env(t, db))
	defer p.Stop()
	q := buffer.QueueFor(contracts.BufferPriorityNormal)
	split := cpuSplitter(t, db.Client, p.PID())
	c0, start := split(), time.Now()
	res := loadgen.Run(loadgen.Config{Addr: p.Addr(), Conns: 4, Requests: (n + 999) / 1000, Check: wantStatus(200),
		Build: enqueueReq(p.Addr(), testSecrets["BUFFER_API_TOKEN"], func(i int) string {
			return noopBatch(i*1000, min(n, (i+1)*1000), "")
		})})
	require.Zero(t, res.Failures, "%v", res.FirstError)
	added := time.Since(start)
	waitCompleted(t, db.Client, q, n, 10*time.Minute)
	el := time.Since(start)
	used := split().minus(c0)
	rate := float64(n) / el.Seconds()
	return rate, fmt.Sprintf("%d messages added+processed in %s = %.0f/s (adds took %s); CPU per message: %s",
		n, el.Round(time.Millisecond), rate, added.Round(time.Millisecond), used.per(n))
}
