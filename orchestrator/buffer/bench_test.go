package buffer_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// cpuTime is this process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEnqueue is Buffer.Enqueue from 64 goroutines on a paused queue
// (nothing dequeues), reporting this process's CPU per enqueue: the Go
// side of the enqueue path (admission, encoding, Asynq's enqueue, events).
func BenchmarkEnqueue(b *testing.B) {
	x := setup(b, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh = 1<<40, buffer.DefaultDepthRefresh })
	require.NoError(b, x.buf.Register(fn("bench", func(context.Context, *buffer.Message) (any, error) { return nil, nil })))
	require.NoError(b, x.buf.Start())
	require.NoError(b, asynq.NewInspectorFromRedisClient(x.db.Client).PauseQueue(buffer.QueueFor(contracts.BufferPriorityNormal)))
	req := contracts.BufferEnqueueRequest{Type: "bench", Payload: json.RawMessage(`{"i":1,"to":"someone@example.com"}`)}
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := x.buf.Enqueue(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// BenchmarkEnqueueRawAsynq is the floor of BenchmarkEnqueue: Asynq's
// client over the same auto-pipelined Redis client, same task options.
func BenchmarkEnqueueRawAsynq(b *testing.B) {
	x := setup(b, nil)
	ap, err := x.db.Client.AutoPipeline()
	require.NoError(b, err)
	c := asynq.NewClientFromRedisClient(ap)
	body := []byte(`{"messageId":"x","priority":2,"payload":{"i":1,"to":"someone@example.com"},"metadata":{},"maxRetries":3,"createdAt":"2026-11-24T00:13:23.123456789Z"}`)
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := c.EnqueueContext(context.Background(), asynq.NewTask("bench", body), asynq.Queue("raw"),
				asynq.MaxRetry(3), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
