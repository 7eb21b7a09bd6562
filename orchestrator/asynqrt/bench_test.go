package asynqrt_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// BenchmarkDequeuers measures no-op task throughput by the number of
// asynq.Server dequeuers in one process (ASYNQ_SERVERS). Each iteration
// enqueues 10,000 tasks, then times how long the runtime takes to process
// them all. Reproduce: go test -run '^$' -bench Dequeuers -benchtime 3x ./orchestrator/asynqrt/
func BenchmarkDequeuers(b *testing.B) {
	const tasks = 10000
	for _, servers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) {
			bb := setupB(b, servers)
			var done atomic.Int64
			bb.rt.Handle("bench:noop", asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
				done.Add(1)
				return nil
			}), nil)
			if err := bb.rt.Start(); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				done.Store(0)
				enqueueMany(b, bb.rt.Client, tasks)
				b.StartTimer()
				start := time.Now()
				for done.Load() < tasks {
					time.Sleep(time.Millisecond) // measured: the benchmark times the real drain
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(tasks*b.N)/total.Seconds(), "tasks/s")
		})
	}
}

func enqueueMany(b *testing.B, c *asynq.Client, n int) {
	b.Helper()
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			if _, err := c.Enqueue(asynq.NewTask("bench:noop", nil)); err != nil {
				errs <- err
			}
		}()
	}
	for i := 0; i < cap(sem); i++ {
		sem <- struct{}{}
	}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func setupB(b *testing.B, servers int) bundle {
	db := redistestNew(b)
	rt, err := asynqrt.New(asynqrt.Config{
		ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: servers, Concurrency: 20, ShutdownTimeout: time.Second,
		Logger: discard(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Shutdown() })
	return bundle{rt: rt, db: db}
}
