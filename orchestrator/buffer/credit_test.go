package buffer_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// evalCount counts single EVALSHA/EVAL round trips (the admission
// script's; Asynq's enqueues go through the auto-pipeliner's pipelines).
type evalCount struct{ n atomic.Int64 }

func (e *evalCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (e *evalCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			e.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (e *evalCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

const depthCounter = "flowgate:buffer:{buffer}:depth"

// burst enqueues n messages without a key from conc goroutines; it
// returns how many were accepted, and fails on anything but QUEUE_FULL.
func burst(t *testing.T, b *buffer.Buffer, n, conc int) int {
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				_, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)})
				if code(err) == contracts.CodeBufferQueueFull {
					return
				}
				if !assertNoError(t, err) {
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(ok.Load())
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// Concurrent enqueues without a key take places this instance reserved
// ahead (one admission round trip per many enqueues), and the credit not
// used is given back once idle: the counter ends equal to the queue.
func TestPlaceCreditSparesAdmissionsAndIsGivenBack(t *testing.T) {
	ec := &evalCount{}
	x := setup(t, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh = 1<<20, 20*time.Millisecond })
	x.db.Client.AddHook(ec)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	require.NoError(t, asynq.NewInspectorFromRedisClient(x.db.Client).PauseQueue("buffer.default"))
	before := ec.n.Load()
	const n = 2000
	require.Equal(t, n, burst(t, x.buf, n, 32))
	evals := ec.n.Load() - before
	require.Less(t, evals, int64(n/8), "admissions share round trips and reserve places ahead")
	ctx := context.Background()
	require.Eventually(t, func() bool {
		d, err := x.db.Client.Get(ctx, depthCounter).Int64()
		return err == nil && d == n
	}, 5*time.Second, 10*time.Millisecond, "the unused credit is given back: counter = queued messages")
	pending, err := x.db.Client.LLen(ctx, "asynq:{buffer.default}:pending").Result()
	require.NoError(t, err)
	require.EqualValues(t, n, pending)
	t.Logf("%d enqueues, %d EVALSHA round trips", n, evals)
}

// Places are reserved ahead only while the buffer stays at most half full
// with them: filling it to the maximum admits exactly the maximum.
func TestPlaceCreditKeepsTheMaximumExact(t *testing.T) {
	const max = 2048 // 1/32 of it: credit of up to 64 places
	x := setup(t, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh = max, 20*time.Millisecond })
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	require.NoError(t, asynq.NewInspectorFromRedisClient(x.db.Client).PauseQueue("buffer.default"))
	require.Equal(t, max, burst(t, x.buf, 3*max, 32), "exactly the maximum admitted")
	ctx := context.Background()
	pending, err := x.db.Client.LLen(ctx, "asynq:{buffer.default}:pending").Result()
	require.NoError(t, err)
	require.EqualValues(t, max, pending)
	_, err = x.buf.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)})
	require.Equal(t, contracts.CodeBufferQueueFull, code(err))
	d, err := x.db.Client.Get(ctx, depthCounter).Int64()
	require.NoError(t, err)
	require.EqualValues(t, max, d)
}

// The completion record (result, worker, times, attempt) is written the
// same through the auto-pipelined client and through Asynq's ResultWriter
// (PlainEnqueue).
func TestCompletionRecordOnBothWritePaths(t *testing.T) {
	for _, plain := range []bool{false, true} {
		x := setup(t, func(c *buffer.Config) { c.PlainEnqueue = plain })
		x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return map[string]int{"x": 1}, nil }))
		e := enq(t, x.buf, "email", `{}`)
		m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
		require.JSONEq(t, `{"x":1}`, string(m.Result), "plain %v", plain)
		require.Regexp(t, `^[^:\s]+:\d+$`, m.WorkerID)
		require.NotNil(t, m.ProcessingStartedAt)
		require.NotNil(t, m.CompletedAt)
		require.Equal(t, 1, m.AttemptCount)
	}
}

// Stop gives back the place credit left: the counter equals the queue.
func TestStopGivesBackThePlaceCredit(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh = 1<<20, time.Hour })
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	require.NoError(t, asynq.NewInspectorFromRedisClient(x.db.Client).PauseQueue("buffer.default"))
	const n = 500
	require.Equal(t, n, burst(t, x.buf, n, 16))
	held, err := x.db.Client.Get(context.Background(), depthCounter).Int64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, held, int64(n))
	t.Logf("before Stop: counter %d for %d queued (%d places of credit)", held, n, held-n)
	x.buf.Stop()
	d, err := x.db.Client.Get(context.Background(), depthCounter).Int64()
	require.NoError(t, err)
	require.EqualValues(t, n, d)
}
