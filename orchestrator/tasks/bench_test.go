package tasks_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// fixture creates n tasks (pipelined batch create) and reports the rate.
func fixture(b *testing.B, bd *bundle, n int) {
	b.Helper()
	reqs := make([]contracts.CreateTaskRequest, n)
	for i := range reqs {
		reqs[i] = contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i), MaxAttempts: contracts.MaxMaxAttempts,
			Payload: json.RawMessage(`{"patient":{"first":"Ada","last":"Lovelace"},"visit":"2026-11-21"}`)}
	}
	start := time.Now()
	require.NoError(b, bd.l.CreateMany(bd.ctx, reqs, 20))
	el := time.Since(start)
	b.Logf("fixture: created %d tasks in %v (%.0f tasks/s)", n, el.Round(time.Millisecond), float64(n)/el.Seconds())
}

// claimAll claims n pending tasks with 8 concurrent claimers at the
// bundle's current clock.
func claimAll(b *testing.B, bd *bundle, n int) {
	b.Helper()
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			for {
				want := min(left.Add(-50)+50, 50)
				if want <= 0 {
					return
				}
				got, err := bd.l.Claim(bd.ctx, contracts.ClaimRequest{WorkerID: worker, Limit: int(want)})
				if err != nil || len(got) == 0 {
					return
				}
			}
		}(fmt.Sprintf("vm-%d", w))
	}
	wg.Wait()
}

// BenchmarkSweep: 100,000 PROCESSING tasks of which 1,000 are stale;
// one op = RecoverStale finding and recovering the 1,000.
func BenchmarkSweep(b *testing.B) {
	const total, stale = 100_000, 1_000
	bd := setup(b)
	fixture(b, bd, total)
	start := time.Now()
	claimAll(b, bd, stale) // at t0: stale by the sweep's time
	bd.clock.Advance(5 * time.Minute)
	claimAll(b, bd, total-stale)
	b.Logf("fixture: claimed %d tasks in %v", total, time.Since(start).Round(time.Millisecond))
	st, err := bd.l.Stats(bd.ctx)
	require.NoError(b, err)
	require.Equal(b, total, st.ByStatus[contracts.StatusProcessing])
	sweepAt := t0.Add(6 * time.Minute)

	var last tasks.SweepResult
	for b.Loop() {
		res, err := bd.l.RecoverStale(bd.ctx, sweepAt, 2*time.Minute, "stale")
		if err != nil {
			b.Fatal(err)
		}
		last = res
		b.StopTimer()
		if len(res.Recovered) != stale {
			b.Fatalf("recovered %d, want %d (dead-lettered %d)", len(res.Recovered), stale, len(res.DeadLettered))
		}
		// Put the 1,000 back: claimed again at t0, attempts reset.
		pipe := bd.rdb.Pipeline()
		for _, id := range res.Recovered {
			pipe.HSet(bd.ctx, bd.l.KeyBase()+"t:"+id, "attempts", 0)
		}
		_, err = pipe.Exec(bd.ctx)
		require.NoError(b, err)
		now := bd.clock.Now()
		bd.clock.Advance(t0.Sub(now))
		claimAll(b, bd, stale)
		bd.clock.Advance(now.Sub(t0))
		b.StartTimer()
	}
	b.ReportMetric(float64(stale)*float64(b.N)/b.Elapsed().Seconds(), "recovered/s")
	b.ReportMetric(float64(last.Batches), "scripts/sweep")
}

// BenchmarkClaimAck: one op = claim one task + ACK it, by one worker.
func BenchmarkClaimAck(b *testing.B) {
	benchClaimAck(b, 1)
}

// BenchmarkClaimAckParallel: the same with 32 concurrent workers.
func BenchmarkClaimAckParallel(b *testing.B) {
	benchClaimAck(b, 32)
}

func benchClaimAck(b *testing.B, workers int) {
	bd := setup(b)
	b.StopTimer()
	pool := 50_000 // b.Loop runs this function once: enough for ~10 s of cycles
	if workers > 1 {
		pool = b.N // RunParallel: called per b.N, exactly b.N cycles
	}
	fixture(b, bd, pool)
	actions := json.RawMessage(`{"codes":["99213","G0438"],"notes":"ok"}`)
	cycle := func(l *tasks.Ledger, worker string) {
		got, err := l.Claim(bd.ctx, contracts.ClaimRequest{WorkerID: worker})
		if err != nil || len(got) != 1 {
			b.Errorf("claim: %v %d (pool of %d exhausted? use -benchtime ≤ %dx)", err, len(got), pool, pool)
			return
		}
		if _, err := l.Ack(bd.ctx, contracts.AckRequest{QueueID: got[0].QueueID, WorkerID: worker, ExperityActions: actions}); err != nil {
			b.Error(err)
		}
	}
	b.StartTimer()
	if workers == 1 {
		for b.Loop() {
			cycle(bd.l, "vm-0")
		}
	} else {
		b.SetParallelism(max(1, workers/runtime.GOMAXPROCS(0)))
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			worker := fmt.Sprintf("vm-%d", n.Add(1))
			for pb.Next() {
				cycle(bd.l, worker)
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}
