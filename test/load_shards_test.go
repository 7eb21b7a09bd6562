package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/loadgen"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// shardLoadSpecialists is how many specialists the shard load test's
// schedule has: a hold's resource shard is its specialist's, so there must
// be many more of them than shards.
const shardLoadSpecialists = 48

// shardIdleWindow is how long each phase first measures the masters' idle
// background.
const shardIdleWindow = 2 * time.Second

// shardPhase is what one phase of TestLoadShardScaling measured.
type shardPhase struct {
	op         string
	requests   int
	elapsed    time.Duration
	scriptUsec []float64 // EVAL/EVALSHA usec per master (Addrs order), from INFO commandstats
	redisCPU   []float64 // redis-server CPU seconds per master, from INFO cpu
	fgCPU      float64   // flowgate CPU seconds
	// background is the script usec per second each master spends with no
	// requests (Asynq's polling, the cron sweeps of every shard), measured
	// just before the phase; scriptUsec and redisCPU have it taken out.
	background []float64
	failures   int
	firstErr   error
}

func (p shardPhase) perSecond() float64 { return float64(p.requests) / p.elapsed.Seconds() }

func sumOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// scriptUsPerOp is Redis script time per request, all masters together.
func (p shardPhase) scriptUsPerOp() float64 { return sumOf(p.scriptUsec) / float64(p.requests) }

// busiestShare is the largest fraction of the script time one master took.
func (p shardPhase) busiestShare() float64 {
	total, most := sumOf(p.scriptUsec), 0.0
	for _, u := range p.scriptUsec {
		most = max(most, u)
	}
	if total == 0 {
		return 0
	}
	return most / total
}

// split is each master's share of the script time, "34/33/33".
func (p shardPhase) split() string {
	total := sumOf(p.scriptUsec)
	parts := make([]string, len(p.scriptUsec))
	for i, u := range p.scriptUsec {
		parts[i] = strconv.Itoa(int(100*u/total + 0.5))
	}
	return strings.Join(parts, "/")
}

// redisBound is the requests/s at which the busiest master's one core is
// full of script time: 1e6 / (µs per op × its share).
func (p shardPhase) redisBound() float64 { return 1e6 / (p.scriptUsPerOp() * p.busiestShare()) }

// redisCPUBound is the same from the busiest master's whole CPU (scripts,
// other commands and network I/O).
func (p shardPhase) redisCPUBound() float64 {
	most := 0.0
	for _, c := range p.redisCPU {
		most = max(most, c)
	}
	return float64(p.requests) / most
}

// TestLoadShardScaling: on one 3-master Redis Cluster, flowgate with
// REDIS_SHARDS=1, 3 and 6 in turn (the cluster flushed between), each
// measuring signed ACK (tasks created and claimed first), hold create +
// release over the binary's /v1/holds, and buffer enqueue (no-op messages,
// one dequeuer with one worker so the phase is mostly enqueues), 64
// connections each. Before each phase CONFIG RESETSTAT on every master;
// after it INFO commandstats gives the Redis script time (EVAL, EVALSHA
// and their _ro forms) per request and its split across masters, and INFO
// cpu each redis-server's CPU; both less the idle background (Asynq's
// polling, the sweeps of every shard) measured for 2 s just before. Skipped unless FLOWGATE_LOAD=1. Reproduce:
// FLOWGATE_LOAD=1 go test -run TestLoadShardScaling -v ./test/
// (FLOWGATE_LOAD_N requests per phase, default 5000).
func TestLoadShardScaling(t *testing.T) {
	if os.Getenv("FLOWGATE_LOAD") != "1" {
		t.Skip("load test: FLOWGATE_LOAD=1 runs it (docs/scale-out.md, Measured)")
	}
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("FLOWGATE_LOAD_N")); err == nil && v > 0 {
		n = v
	}
	c := rediscluster.Start(t)
	schedule := shardLoadSchedule(t)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
	masters := make([]*redis.Client, 0, 3)
	for _, addr := range c.Addrs() {
		m := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2})
		t.Cleanup(func() { _ = m.Close() })
		masters = append(masters, m)
	}

	var rows [][]shardPhase
	for _, shards := range []int{1, 3, 6} {
		ctx := context.Background()
		for _, m := range masters {
			require.NoError(t, m.FlushAll(ctx).Err())
		}
		env := withSecrets(map[string]string{
			"REDIS_URL": flowgatetest.ClusterURL(c.Addrs(), shards), "LOG_LEVEL": "warn",
			"HOLDS_SCHEDULE_FILE": schedule, "HOLDS_MAX_PER_CLIENT": "1000",
			"BUFFER_BENCH_HANDLERS": "true", "BUFFER_SERVERS": "1", "BUFFER_CONCURRENCY": "1",
			"BUFFER_MAX_QUEUE_SIZE": "10000000",
		})
		p := startFlowgate(t, env)
		sc := newSignedClient(p)
		addr := sc.addr

		createTasks(t, sc, n, fmt.Sprintf("shards%d", shards))
		claimed := claimAll(t, sc, n)
		bodies := make([][]byte, n)
		for i, task := range claimed {
			bodies[i], _ = json.Marshal(contracts.AckRequest{QueueID: task.QueueID, EncounterID: task.EncounterID,
				ExperityActions: json.RawMessage(`{"actions":[{"type":"note","text":"done"}]}`)})
		}
		ack := measureShardPhase(t, masters, p, "signed ACK", func() []loadgen.Result {
			return []loadgen.Result{loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
				Build: func(i int, req *fasthttp.Request) { sign(req, addr, "POST", "/ack", bodies[i]) },
				Check: status(200)})}
		})

		holdBodies := shardLoadHolds(n, day)
		hold := measureShardPhase(t, masters, p, "hold create+release", func() []loadgen.Result {
			create, release := holdCycle(addr, holdBodies)
			return []loadgen.Result{create, release}
		})

		tok := testSecrets["BUFFER_API_TOKEN"]
		buf := measureShardPhase(t, masters, p, "buffer enqueue", func() []loadgen.Result {
			return []loadgen.Result{loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n, Check: wantStatus(202),
				Build: enqueueReq(addr, tok, func(i int) string { return `{"type":"noop","payload":{"i":` + strconv.Itoa(i) + `}}` })})}
		})
		p.Stop()
		row := []shardPhase{ack, hold, buf}
		for _, ph := range row {
			if ph.failures > 0 {
				t.Fatalf("REDIS_SHARDS=%d %s: %d failures: %v", shards, ph.op, ph.failures, ph.firstErr)
			}
		}
		rows = append(rows, row)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "3-master cluster, %d requests per phase, 64 connections, masters %s\n", n, strings.Join(c.Addrs(), ", "))
	fmt.Fprintf(&b, "| REDIS_SHARDS | operation | requests/s | Redis script µs/request | split across masters %% | busiest master's bound (1e6 / µs × share) | redis-server CPU µs/request | busiest master's CPU bound | flowgate CPU µs/request |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for i, shards := range []int{1, 3, 6} {
		for _, ph := range rows[i] {
			fmt.Fprintf(&b, "| %d | %s | %.0f | %.1f | %s | %.0f | %.1f | %.0f | %.0f |\n", shards, ph.op, ph.perSecond(),
				ph.scriptUsPerOp(), ph.split(), ph.redisBound(), 1e6*sumOf(ph.redisCPU)/float64(ph.requests), ph.redisCPUBound(),
				1e6*ph.fgCPU/float64(ph.requests))
		}
	}
	b.WriteString("prediction, Redis on its own cores: requests/s ≈ min(flowgate's ceiling (cores × 1e6 / flowgate CPU µs per request), busiest master's bound)\n")
	t.Log("\n" + b.String())
}

// measureShardPhase resets every master's stats, runs the phase and reads
// what Redis and flowgate spent on it.
func measureShardPhase(t *testing.T, masters []*redis.Client, p *proc, op string, run func() []loadgen.Result) shardPhase {
	t.Helper()
	ctx := context.Background()
	ph := shardPhase{op: op}
	// The idle background first: script usec and CPU per second.
	idleCPU := make([]float64, len(masters))
	for i, m := range masters {
		require.NoError(t, m.ConfigResetStat(ctx).Err())
		idleCPU[i] = serverCPU(t, m)
	}
	idleStart := time.Now()
	time.Sleep(shardIdleWindow)
	idle := time.Since(idleStart).Seconds()
	for i, m := range masters {
		info, err := m.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		ph.background = append(ph.background, scriptUsec(info)/idle)
		idleCPU[i] = (serverCPU(t, m) - idleCPU[i]) / idle
	}
	cpu0 := make([]float64, len(masters))
	for i, m := range masters {
		require.NoError(t, m.ConfigResetStat(ctx).Err())
		cpu0[i] = serverCPU(t, m)
	}
	fg0 := procCPU(p.PID())
	began := time.Now()
	for _, r := range run() {
		ph.requests += r.Requests
		ph.elapsed += r.Elapsed
		ph.failures += r.Failures
		if ph.firstErr == nil {
			ph.firstErr = r.FirstError
		}
	}
	ph.fgCPU = float64(procCPU(p.PID())-fg0) / 100
	wall := time.Since(began).Seconds()
	for i, m := range masters {
		ph.redisCPU = append(ph.redisCPU, max(0, serverCPU(t, m)-cpu0[i]-idleCPU[i]*wall))
		info, err := m.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		ph.scriptUsec = append(ph.scriptUsec, max(0, scriptUsec(info)-ph.background[i]*wall))
	}
	t.Logf("%s: %d requests in %s = %.0f/s; script µs per master %.0f (idle background µs/s %.0f, taken out)", op, ph.requests,
		ph.elapsed.Round(time.Millisecond), ph.perSecond(), ph.scriptUsec, ph.background)
	return ph
}

// scriptUsec sums the usec of EVAL, EVALSHA and their read-only forms in
// an INFO commandstats answer.
func scriptUsec(info string) float64 { return redistest.ScriptUsec(redistest.ParseCommandStats(info)) }

// shardLoadHolds is n hold create bodies on shardLoadSchedule's "load"
// type from day on, each on a slot of its own: specialist i % 48, then
// the next ten-minute start (140 a day from 00:00), then the next day.
func shardLoadHolds(n int, day time.Time) [][]byte {
	bodies := make([][]byte, n)
	for i := range n {
		j := i / shardLoadSpecialists
		start := day.AddDate(0, 0, j/140).Add(time.Duration(j%140) * 10 * time.Minute)
		bodies[i], _ = json.Marshal(map[string]string{"appointmentTypeId": "load", "clientId": "c" + strconv.Itoa(i),
			"slotStartDate": start.Format(time.RFC3339), "specialistId": "spec-" + strconv.Itoa(i%shardLoadSpecialists)})
	}
	return bodies
}

// shardLoadSchedule writes a schedule file with one appointment type,
// "load" (10 minutes, no buffer), and shardLoadSpecialists specialists who
// work every day 00:00-23:50 UTC: thousands of distinct slots a day.
func shardLoadSchedule(t *testing.T) string {
	t.Helper()
	ids := make([]string, shardLoadSpecialists)
	specs := make([]map[string]any, shardLoadSpecialists)
	for i := range ids {
		ids[i] = "spec-" + strconv.Itoa(i)
		hours := map[string]any{}
		for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
			hours[d] = []map[string]string{{"start": "00:00", "end": "23:50"}}
		}
		specs[i] = map[string]any{"id": ids[i], "name": "Specialist " + strconv.Itoa(i), "priority": 1, "weeklyHours": hours}
	}
	raw, err := json.Marshal(map[string]any{
		"timeZone": "UTC",
		"appointmentTypes": []map[string]any{{"id": "load", "name": "Load", "durationMinutes": 10, "bufferMinutes": 0,
			"cooldownMinutes": 0, "specialistIds": ids}},
		"specialists": specs,
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "schedule.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}
