package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
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

const creditHash = "flowgate:buffer:{buffer}:credit"

// twoInstances starts two buffers on one database (two flowgate
// instances), the default queue paused, with no flush or reconcile of
// their own: the test runs them (FlushDepth, ResyncDepth).
func twoInstances(t *testing.T, max int64) (a, b *buffer.Buffer, x *bundle) {
	t.Helper()
	x = setup(t, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh, c.DepthReconcile = max, time.Hour, time.Hour })
	h := fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil })
	x.start(t, h)
	b = x.another(t, h)
	require.NoError(t, asynq.NewInspectorFromRedisClient(x.db.Client).PauseQueue("buffer.default"))
	return x.buf, b, x
}

// counter reads the depth counter.
func counter(t *testing.T, x *bundle) int64 {
	t.Helper()
	d, err := x.db.Client.Get(context.Background(), depthCounter).Int64()
	require.NoError(t, err)
	return d
}

// pending is the default queue's length.
func pending(t *testing.T, x *bundle) int64 {
	t.Helper()
	n, err := x.db.Client.LLen(context.Background(), "asynq:{buffer.default}:pending").Result()
	require.NoError(t, err)
	return n
}

// creditField reads an instance's places in the credit hash (0: no field).
func creditField(t *testing.T, x *bundle, field string) int64 {
	t.Helper()
	v, err := x.db.Client.HGet(context.Background(), creditHash, field).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	require.NoError(t, err)
	n, _, ok := strings.Cut(v, ":")
	require.True(t, ok, "field %q", v)
	places, err := strconv.ParseInt(n, 10, 64)
	require.NoError(t, err)
	return places
}

func unkeyed(t *testing.T, b *buffer.Buffer) { enq(t, b, "email", `{}`) }

// Another instance's reconcile counts this instance's place credit (it is
// in the credit hash), so the credit this instance then takes without a
// round trip is no place above the maximum. Before, the reconcile counted
// Asynq's queues plus its own credit only: A's credit dropped out of the
// counter and A admitted that many messages above the maximum.
func TestAnotherInstancesResyncKeepsThePlaceCredit(t *testing.T) {
	const max = 2048
	a, b, x := twoInstances(t, max)
	ctx := context.Background()
	unkeyed(t, a) // its admission reserves places ahead for A
	held := a.Credit()
	require.Positive(t, held)
	require.Zero(t, b.Credit())
	require.NoError(t, b.ResyncDepth(ctx))
	require.EqualValues(t, 1+held, counter(t, x), "B's reconcile: queued messages + A's credit")
	require.Equal(t, held, creditField(t, x, a.CreditField()))

	var wg sync.WaitGroup
	var fromA, fromB int
	wg.Add(2)
	go func() { defer wg.Done(); fromA = burst(t, a, 3*max, 16) }()
	go func() { defer wg.Done(); fromB = burst(t, b, 3*max, 16) }()
	wg.Wait()
	// Serial enqueues take any credit a burst's last goroutine left.
	total := 1 + fromA + fromB + burst(t, a, max, 1) + burst(t, b, max, 1)
	t.Logf("A held %d places at B's reconcile; accepted: A %d, B %d, total %d", held, fromA+1, fromB, total)
	require.Equal(t, max, total, "exactly the maximum admitted across both instances")
	require.EqualValues(t, max, pending(t, x))
	require.EqualValues(t, max, counter(t, x))
}

// After another instance's reconcile, this instance's idle credit given
// back leaves the counter once: the counter equals the queue. Before, the
// reconcile had already dropped it, and the give-back subtracted it again.
func TestGiveBackAfterAnotherInstancesResyncCountsOnce(t *testing.T) {
	a, b, x := twoInstances(t, 2048)
	ctx := context.Background()
	for range 3 {
		enq(t, b, "email", `{}`, func(r *contracts.BufferEnqueueRequest) { r.IdempotencyKey = strconv.Itoa(int(pending(t, x))) })
	}
	unkeyed(t, a)
	require.Positive(t, a.Credit())
	require.NoError(t, b.ResyncDepth(ctx))
	require.NoError(t, a.FlushDepth(ctx)) // the credit is fresh: kept
	require.NoError(t, a.FlushDepth(ctx)) // idle since the last flush: given back
	require.Zero(t, a.Credit())
	require.EqualValues(t, 4, pending(t, x))
	require.EqualValues(t, 4, counter(t, x), "the counter equals the queue")
	require.Zero(t, creditField(t, x, a.CreditField()))
}

// A crashed instance's credit field (not touched within the staleness
// bound) is dropped by the next reconcile, which counts a live one.
func TestResyncDropsAStaleCreditField(t *testing.T) {
	_, b, x := twoInstances(t, 2048)
	ctx := context.Background()
	for i := range 3 {
		enq(t, b, "email", `{}`, func(r *contracts.BufferEnqueueRequest) { r.IdempotencyKey = "k" + strconv.Itoa(i) })
	}
	require.Zero(t, b.Credit(), "keyed enqueues reserve nothing ahead")
	now, err := x.db.Client.Time(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, x.db.Client.HSet(ctx, creditHash,
		"crashed", "40:"+strconv.FormatInt(now.Add(-11*time.Hour).UnixMilli(), 10), // stale: 10 × DepthRefresh (1 h)
		"live", "7:"+strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)).Err())
	require.NoError(t, x.db.Client.Set(ctx, depthCounter, 3+40+7, 0).Err())
	require.NoError(t, b.ResyncDepth(ctx))
	require.EqualValues(t, 3+7, counter(t, x), "queued messages + the live instance's credit")
	require.Zero(t, creditField(t, x, "crashed"))
	require.EqualValues(t, 7, creditField(t, x, "live"))
	require.NoError(t, x.db.Client.HDel(ctx, creditHash, "live").Err())
	require.NoError(t, b.ResyncDepth(ctx))
	require.EqualValues(t, 3, counter(t, x), "no credit left: the counter equals the queue")
}

// The field follows the credit: places taken leave it at the next flush
// (they are messages now, already counted), idle credit leaves field and
// counter together, and Stop deletes the field.
func TestCreditFieldFollowsTakesGiveBackAndStop(t *testing.T) {
	a, _, x := twoInstances(t, 2048)
	ctx := context.Background()
	unkeyed(t, a)
	c := a.Credit()
	require.GreaterOrEqual(t, c, int64(4))
	require.Equal(t, c, creditField(t, x, a.CreditField()))
	require.EqualValues(t, 1+c, counter(t, x))
	for range 3 {
		unkeyed(t, a) // on credit: no round trip, the field is unchanged
	}
	require.Equal(t, c-3, a.Credit())
	require.Equal(t, c, creditField(t, x, a.CreditField()))

	require.NoError(t, a.FlushDepth(ctx)) // used: kept; the 3 taken leave the field only
	require.Equal(t, c-3, creditField(t, x, a.CreditField()))
	require.EqualValues(t, 4+(c-3), counter(t, x))
	require.NoError(t, a.FlushDepth(ctx)) // idle: given back, field and counter
	require.Zero(t, creditField(t, x, a.CreditField()))
	require.EqualValues(t, 4, counter(t, x))

	unkeyed(t, a)
	require.Positive(t, creditField(t, x, a.CreditField()))
	a.Stop()
	require.False(t, x.db.Client.HExists(ctx, creditHash, a.CreditField()).Val(), "Stop deletes the field")
	require.EqualValues(t, 5, counter(t, x))
	require.EqualValues(t, 5, pending(t, x))
}

// An admission whose answer was lost after it ran (a timeout) left places
// in this instance's field and the counter that the instance never got:
// its next resync sets its field to the credit it holds, so the drift does
// not stay (nor add up over many lost answers) while the instance lives.
func TestResyncHealsOwnCreditFieldAfterALostAnswer(t *testing.T) {
	a, _, x := twoInstances(t, 2048)
	ctx := context.Background()
	unkeyed(t, a)
	c := a.Credit()
	require.Positive(t, c)
	now, err := x.db.Client.Time(ctx).Result()
	require.NoError(t, err)
	const lost = 64 // what the lost admission reserved ahead
	require.NoError(t, x.db.Client.HSet(ctx, creditHash, a.CreditField(), strconv.FormatInt(c+lost, 10)+":"+strconv.FormatInt(now.UnixMilli(), 10)).Err())
	require.NoError(t, x.db.Client.IncrBy(ctx, depthCounter, lost).Err())
	require.NoError(t, a.FlushDepth(ctx)) // a live instance keeps the field fresh: staleness alone would never drop it
	require.NoError(t, a.ResyncDepth(ctx))
	require.Equal(t, a.Credit(), creditField(t, x, a.CreditField()), "the field is what the instance holds")
	require.EqualValues(t, 1+a.Credit(), counter(t, x), "the queued message + the credit held, without the lost places")
}
