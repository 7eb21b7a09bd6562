package tasks_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// scriptCost is the Redis time of the script calls f makes: usec is
// INFO commandstats' usec_per_call of EVALSHA (wall time inside Redis, which
// a busy machine inflates), cpu the Redis main thread's CPU time (INFO cpu)
// over f divided by the calls (everything Redis did for them, reading and
// answering included, and not inflated by other processes).
type scriptCost struct {
	usec, cpu float64
	calls     int
}

func measureScripts(t testing.TB, ctx context.Context, rdb redis.UniversalClient, f func()) scriptCost {
	t.Helper()
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	cpu0 := mainThreadCPU(t, ctx, rdb)
	f()
	cpu1 := mainThreadCPU(t, ctx, rdb)
	stats, err := redistest.CommandStats(ctx, rdb)
	require.NoError(t, err)
	c := scriptCost{usec: stats["evalsha"].UsecPerCall, calls: int(stats["evalsha"].Calls)}
	require.NotZero(t, c.calls, "no evalsha in commandstats")
	c.cpu = (cpu1 - cpu0) * 1e6 / float64(c.calls)
	return c
}

// mainThreadCPU is Redis's main thread CPU time in seconds (user + sys).
func mainThreadCPU(t testing.TB, ctx context.Context, rdb redis.UniversalClient) float64 {
	t.Helper()
	cpu, err := redistest.ServerCPU(ctx, rdb, true)
	require.NoError(t, err)
	return cpu
}

// fillDone writes n DONE tasks straight into the ledger's keys, as a week
// of traffic leaves them (a task hash, its history, its index entries).
func fillDone(t testing.TB, bd *bundle, n int) {
	t.Helper()
	base := bd.l.KeyBase()
	const chunk = 5000
	for lo := 0; lo < n; lo += chunk {
		pipe := bd.rdb.Pipeline()
		for i := lo; i < min(lo+chunk, n); i++ {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			seq := strconv.Itoa(i + 1)
			ms := strconv.FormatInt(t0.UnixMilli()-int64(n-i)*1000, 10)
			pipe.HSet(bd.ctx, base+"t:"+id, "queue_id", id, "encounter_id", "old-"+seq, "status", "DONE", "priority", "NORMAL",
				"attempts", "0", "max_attempts", "3", "recoveries", "0", "payload", `{"n":1}`, "fp", "x", "dlq", "0",
				"actions", `{"codes":["99213"]}`, "actions_fp", "y", "worker_id", "vm-old", "created_at", ms, "updated_at", ms,
				"claimed_at", ms, "heartbeat_at", ms, "seq", seq, "pseq", seq)
			pipe.RPush(bd.ctx, base+"h:"+id, `{"at":"`+ms+`","from":"","to":"PENDING","by":"create","reason":"created"}`)
			pipe.ZAdd(bd.ctx, base+"all", redis.Z{Score: float64(i + 1), Member: id})
			pipe.ZAdd(bd.ctx, base+"status:DONE", redis.Z{Score: float64(i + 1), Member: id})
			pipe.ZAdd(bd.ctx, base+"done", redis.Z{Score: float64(t0.UnixMilli() - int64(n-i)*1000), Member: id})
			pipe.ZAdd(bd.ctx, base+"enc:old-"+seq, redis.Z{Score: float64(i + 1), Member: id})
		}
		_, err := pipe.Exec(bd.ctx)
		require.NoError(t, err)
	}
	require.NoError(t, bd.rdb.Set(bd.ctx, base+"seq", n, 0).Err())
}

// TestScriptCostFlatInLedgerSize prints the Redis time of the claim and
// ACK scripts (and create) with 1k and 100k tasks in the ledger, and 1M
// with FLOWGATE_SCRIPT_COST_1M=1: the goal is ≤ 25 µs each, the same at
// every size. FLOWGATE_SCRIPT_COST_SETTLE=10s waits after filling the
// ledger, so that Redis has finished growing its key table (each command
// helps rehash it meanwhile, which a steady ledger does not pay).
func TestScriptCostFlatInLedgerSize(t *testing.T) {
	if testing.Short() {
		t.Skip("measures Redis time over large ledgers")
	}
	sizes := []int{1_000, 100_000}
	if os.Getenv("FLOWGATE_SCRIPT_COST_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	const m = 2000
	for _, n := range sizes {
		// A Redis of its own: INFO commandstats counts every database's
		// calls, and the other packages' tests share test/run's Redis. No
		// index check at the end: at 1M tasks it would take minutes.
		srv := rediscluster.StartServer(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		clk := clocktest.New(t0)
		l, err := tasks.New(rdb, tasks.Config{Prefix: "test", Now: clk.Now})
		require.NoError(t, err)
		bd := &bundle{ctx: context.Background(), l: l, rdb: rdb, clock: clk}
		fillDone(t, bd, n)
		if d := os.Getenv("FLOWGATE_SCRIPT_COST_SETTLE"); d != "" {
			pause, _ := time.ParseDuration(d)
			time.Sleep(pause)
		}
		// Each phase's calls are pipelined, so that Redis runs them back to
		// back as under load (one call at a time leaves it idle between
		// calls, and a cold Redis spends more per call).
		encs := make([]string, m)
		for i := range encs {
			encs[i] = fmt.Sprintf("enc-%d", i)
		}
		var ids []string
		create := measureScripts(t, bd.ctx, bd.rdb, func() {
			_, err := bd.l.ScriptsPipelined(bd.ctx, "create", encs)
			require.NoError(t, err)
		})
		claim := measureScripts(t, bd.ctx, bd.rdb, func() {
			ids, err = bd.l.ScriptsPipelined(bd.ctx, "claim", encs)
			require.NoError(t, err)
		})
		half := m / 2
		ack := measureScripts(t, bd.ctx, bd.rdb, func() {
			_, err := bd.l.ScriptsPipelined(bd.ctx, "ack", ids[:half])
			require.NoError(t, err)
		})
		full := measureScripts(t, bd.ctx, bd.rdb, func() {
			_, err := bd.l.ScriptsPipelined(bd.ctx, "ack-full", ids[half:])
			require.NoError(t, err)
		})
		require.Equal(t, contracts.StatusDone, bd.get(t, ids[m-1]).Status)
		require.Equal(t, half, ack.calls)
		// The goal is 25 µs; the bound only catches a script gone wrong
		// (a scan, a loop over a growing index) on this noisy machine.
		for name, c := range map[string]scriptCost{"create": create, "claim": claim, "ACK": ack, "full ACK": full} {
			require.Less(t, c.usec, 150.0, "%s costs Redis %.1f µs per call at %d tasks", name, c.usec, n)
		}
		t.Logf("ledger of %7d tasks, Redis time per script (commandstats / main-thread CPU): "+
			"create %5.1f / %5.1f µs, claim %5.1f / %5.1f µs, ACK %5.1f / %5.1f µs (answering the whole task: %5.1f / %5.1f µs)",
			n, create.usec, create.cpu, claim.usec, claim.cpu, ack.usec, ack.cpu, full.usec, full.cpu)
	}
}
