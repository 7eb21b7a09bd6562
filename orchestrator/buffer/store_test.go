package buffer_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// TestBufferStore is the seed's "BufferStore" list, on Asynq.
func TestBufferStore(t *testing.T) {
	t.Run("should create message", storeCase1)
	t.Run("should claim messages atomically", storeCase2)
	t.Run("should mark completed", storeCase3)
	t.Run("should mark failed with retry", storeCase4)
	t.Run("should move to DLQ", storeCase5)
	t.Run("should release stuck messages", storeCase6)
}

func storeCase1(t *testing.T) {
	// The only worker is held, so the second message stays as created.
	y := setup(t, func(c *buffer.Config) { c.Concurrency = 1 })
	block := make(chan struct{})
	defer close(block)
	y.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	enq(t, y.buf, "email", `{}`) // occupies the only worker
	e := enq(t, y.buf, "email", `{"n":2}`, func(r *contracts.BufferEnqueueRequest) {
		r.MessageID = "msg-2"
		r.IdempotencyKey = "k-2"
	})
	m, err := y.buf.Get(context.Background(), e.MessageID)
	require.NoError(t, err)
	require.Equal(t, "msg-2", m.MessageID)
	require.Equal(t, contracts.BufferPending, m.State)
	require.Equal(t, "k-2", m.IdempotencyKey)
	require.Equal(t, 0, m.AttemptCount)
	require.NotNil(t, m.VisibleAt)
	require.False(t, m.CreatedAt.IsZero())
	require.Empty(t, m.Errors)
}

func storeCase2(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Servers = 3; c.Concurrency = 10 })
	rec := newRecorder()
	x.start(t, fn("job", func(_ context.Context, m *buffer.Message) (any, error) { rec.add(m.MessageID); return nil, nil }))
	reqs := make([]contracts.BufferEnqueueRequest, 300)
	for i := range reqs {
		reqs[i] = contracts.BufferEnqueueRequest{Type: "job", Payload: []byte(`{}`)}
	}
	out, errs, err := x.buf.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
	require.Eventually(t, func() bool { m, _ := rec.snapshot(); return len(m) == 300 }, 10*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { // a second claim would come by now
		m, _ := rec.snapshot()
		for _, n := range m {
			if n > 1 {
				return true
			}
		}
		return false
	}, 100*time.Millisecond, 10*time.Millisecond, "a message claimed twice")
	calls, _ := rec.snapshot()
	for _, e := range out {
		require.Equal(t, 1, calls[e.MessageID], "message %s claimed once", e.MessageID)
	}
}

func storeCase3(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return []int{1, 2}, nil }))
	e := enq(t, x.buf, "email", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.JSONEq(t, `[1,2]`, string(m.Result))
	require.NotNil(t, m.ProcessingStartedAt)
	require.False(t, m.CompletedAt.Before(*m.ProcessingStartedAt))
	require.NotEmpty(t, m.WorkerID)
	info, err := x.buf.Runtime().Inspector.GetTaskInfo("buffer.default", e.MessageID)
	require.NoError(t, err)
	require.Equal(t, buffer.DefaultCompletedRetention, info.Retention, "completed messages are kept 24 h")
}

func storeCase4(t *testing.T) {
	x := setup(t, func(c *buffer.Config) {
		c.Backoff = buffer.Backoff{Base: 5 * time.Second, Multiplier: 2, Max: time.Minute}
	})
	x.start(t, fn("hook", func(context.Context, *buffer.Message) (any, error) {
		return nil, &buffer.StatusError{StatusCode: 502, Body: "bad gateway"}
	}))
	before := time.Now()
	e := enq(t, x.buf, "hook", `{}`)
	var m *buffer.Message
	require.Eventually(t, func() bool {
		var err error
		m, err = x.buf.Get(context.Background(), e.MessageID)
		return err == nil && len(m.Errors) == 1 && m.State == contracts.BufferPending
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, "HTTP_502", m.LastError.Code)
	require.Contains(t, m.LastError.Message, "bad gateway")
	require.Equal(t, 1, m.AttemptCount)
	require.WithinDuration(t, before.Add(5*time.Second), *m.VisibleAt, 1500*time.Millisecond, "visible again after base·2^0")
}

func storeCase5(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("hook", func(context.Context, *buffer.Message) (any, error) {
		return nil, &buffer.StatusError{StatusCode: 422}
	}))
	e := enq(t, x.buf, "hook", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, 1, m.AttemptCount, "a 4xx is not retried")
	require.Equal(t, "HTTP_422", m.LastError.Code)
	require.Eventually(t, func() bool { n, _ := x.buf.DLQCount(context.Background()); return n == 1 }, 5*time.Second, 10*time.Millisecond)
	list, err := x.buf.DLQList(context.Background(), 10, "")
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Equal(t, e.MessageID, list.Items[0].MessageID)
	require.True(t, strings.HasPrefix(list.Items[0].Error, "HTTP_422: "), list.Items[0].Error)
	_, err = x.buf.Runtime().Inspector.GetTaskInfo("buffer.default", e.MessageID)
	require.NoError(t, err, "and the task is in asynq's archive")
}

func storeCase6(t *testing.T) {
	x := setup(t, nil)
	var n atomic.Int32
	h := fn("slow", func(ctx context.Context, _ *buffer.Message) (any, error) {
		if n.Add(1) == 1 {
			time.Sleep(2 * time.Second) // ignores its context: stuck
		}
		return "ok", nil
	})
	h.TimeoutAfter = 150 * time.Millisecond
	x.start(t, h)
	e := enq(t, x.buf, "slow", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.Equal(t, 2, m.AttemptCount)
	require.Equal(t, "MESSAGE_TIMEOUT", m.Errors[0].Code)
}

// TestEndToEnd is the seed's integration list.
func TestEndToEnd(t *testing.T) {
	t.Run("enqueue → process → complete", e2eCase1)
	t.Run("enqueue → process → fail → retry → complete", e2eCase2)
	t.Run("enqueue → process → fail → max retries → DLQ", e2eCase3)
	t.Run("priority ordering (CRITICAL before NORMAL)", e2eCase4)
	t.Run("idempotency (duplicate rejected)", e2eCase5)
	t.Run("concurrent processing (multiple workers)", e2eCase6)
	t.Run("graceful shutdown (drain messages)", e2eCase7)
	t.Run("circuit breaker (open → half-open → closed)", e2eCase8)
	t.Run("stuck message recovery", e2eCase9)
}

func e2eCase1(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", func(_ context.Context, m *buffer.Message) (any, error) { return m.Payload, nil }))
	e := enq(t, x.buf, "email", `{"to":"x"}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.JSONEq(t, `{"to":"x"}`, string(m.Result))
}

func e2eCase2(t *testing.T) {
	x := setup(t, nil)
	rec := newRecorder()
	x.start(t, fn("hook", func(_ context.Context, m *buffer.Message) (any, error) {
		if rec.add(m.MessageID) < 3 {
			return nil, &buffer.StatusError{StatusCode: 429}
		}
		return "ok", nil
	}))
	e := enq(t, x.buf, "hook", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.Equal(t, 3, m.AttemptCount)
	require.Len(t, m.Errors, 2)
}

func e2eCase3(t *testing.T) {
	x := setup(t, nil)
	rec := newRecorder()
	x.start(t, fn("hook", func(_ context.Context, m *buffer.Message) (any, error) {
		rec.add(m.MessageID)
		return nil, &buffer.StatusError{StatusCode: 500}
	}))
	two := 2
	e := enq(t, x.buf, "hook", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MaxRetries = &two })
	m := waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, 3, m.AttemptCount, "first attempt + 2 retries")
	calls, _ := rec.snapshot()
	require.Equal(t, 3, calls[e.MessageID])
	require.Eventually(t, func() bool {
		l, err := x.buf.DLQList(context.Background(), 10, "")
		return err == nil && len(l.Items) == 1 && strings.HasPrefix(l.Items[0].Error, "MAX_RETRIES_EXCEEDED")
	}, 5*time.Second, 10*time.Millisecond)
}

func e2eCase4(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Concurrency = 1 })
	gate := make(chan struct{})
	rec := newRecorder()
	x.start(t, fn("job", func(_ context.Context, m *buffer.Message) (any, error) {
		if m.MessageID == "gate" {
			<-gate
		}
		rec.add(m.MessageID)
		return nil, nil
	}))
	enq(t, x.buf, "job", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = "gate" })
	waitState(t, x.buf, "gate", contracts.BufferProcessing)
	for i := 0; i < 5; i++ {
		enq(t, x.buf, "job", `{}`, pri(contracts.BufferPriorityNormal), func(r *contracts.BufferEnqueueRequest) { r.MessageID = "normal-" + string(rune('a'+i)) })
		enq(t, x.buf, "job", `{}`, pri(contracts.BufferPriorityLow), func(r *contracts.BufferEnqueueRequest) { r.MessageID = "low-" + string(rune('a'+i)) })
	}
	for i := 0; i < 5; i++ {
		enq(t, x.buf, "job", `{}`, pri(contracts.BufferPriorityCritical), func(r *contracts.BufferEnqueueRequest) { r.MessageID = "critical-" + string(rune('a'+i)) })
	}
	close(gate)
	require.Eventually(t, func() bool { m, _ := rec.snapshot(); return len(m) == 16 }, 10*time.Second, 10*time.Millisecond)
	_, order := rec.snapshot()
	require.Equal(t, "gate", order[0])
	for i, id := range order[1:] {
		want := map[bool]string{true: "critical-", false: "normal-"}[i < 5]
		if i >= 10 {
			want = "low-"
		}
		require.True(t, strings.HasPrefix(id, want), "position %d is %s, want %s*: %v", i+1, id, want, order)
	}
}

func e2eCase5(t *testing.T) {
	x := setup(t, nil)
	rec := newRecorder()
	x.start(t, fn("job", func(_ context.Context, m *buffer.Message) (any, error) { rec.add(m.IdempotencyKey); return nil, nil }))
	var wg sync.WaitGroup
	var okN, dupN atomic.Int32
	ids := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "job", Payload: []byte(`{}`), IdempotencyKey: "same"})
			switch code(err) {
			case contracts.CodeDuplicateMessage:
				dupN.Add(1)
				var e *contracts.Error
				if errorsAs(err, &e) {
					ids <- e.Details["messageId"].(string)
				}
			default:
				if err == nil {
					okN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	require.EqualValues(t, 1, okN.Load())
	require.EqualValues(t, 19, dupN.Load())
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		}
		require.Equal(t, first, id, "every duplicate names the one original")
	}
	require.Eventually(t, func() bool { m, _ := rec.snapshot(); return m["same"] == 1 }, 5*time.Second, 10*time.Millisecond)
}

func e2eCase6(t *testing.T) {
	// The seed's pool: one type may use every worker here (the bulkhead,
	// half the workers by default, is flowgate's addition: docs/buffer.md).
	x := setup(t, func(c *buffer.Config) { c.Concurrency, c.TypeConcurrency = 5, 5 })
	var cur, peak atomic.Int32
	rec := newRecorder()
	x.start(t, fn("job", func(_ context.Context, m *buffer.Message) (any, error) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(150 * time.Millisecond) // measured: the jobs' overlap is the pool's size
		cur.Add(-1)
		rec.add(m.MessageID)
		return nil, nil
	}))
	start := time.Now()
	for i := 0; i < 10; i++ {
		enq(t, x.buf, "job", `{}`)
	}
	require.Eventually(t, func() bool { m, _ := rec.snapshot(); return len(m) == 10 }, 10*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 5, peak.Load(), "five workers ran at once")
	require.Less(t, time.Since(start), 1200*time.Millisecond, "10 × 150 ms on 5 workers is ~300 ms, not 1.5 s")
}

func e2eCase7(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Concurrency = 3 })
	var started sync.WaitGroup
	started.Add(3)
	x.start(t, fn("slow", func(context.Context, *buffer.Message) (any, error) {
		started.Done()
		time.Sleep(400 * time.Millisecond) // jobs running when the test acts
		return nil, nil
	}))
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, enq(t, x.buf, "slow", `{}`).MessageID)
	}
	started.Wait()
	done := make(chan struct{})
	go func() { x.buf.Stop(); close(done) }()
	require.Eventually(t, func() bool { return x.buf.State() != buffer.StateRunning }, time.Second, time.Millisecond)
	t0 := time.Now()
	_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "slow", Payload: []byte(`{}`)})
	require.Equal(t, contracts.CodeShutdownInProgress, code(err))
	require.Less(t, time.Since(t0), 50*time.Millisecond, "refused at once, not after the drain")
	select {
	case <-done:
		t.Fatal("the drain should still be running")
	default:
	}
	<-done
	for _, id := range ids {
		m, err := x.buf.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, contracts.BufferCompleted, m.State, "in-flight %s drained", id)
	}
}

// e2eCase8 runs the breaker end to end. It asserts no wall-clock instant:
// the handler's outcome is decided by its call count (the first two calls
// fail, every later one succeeds), never by a flag flipped after a sleep,
// so the half-open trial succeeds whenever it comes; open → half-open is
// awaited, and the timeout (1 s) is five deferral waits long, so the
// deferral is seen long before it. The exact timing of the transitions is
// asserted on a virtual clock in TestCircuitTransitionsOnAVirtualClock.
func e2eCase8(t *testing.T) {
	x := setup(t, func(c *buffer.Config) {
		c.Concurrency = 1
		c.Circuit = buffer.CircuitConfig{Threshold: 2, Timeout: time.Second}
	})
	events := subscribe(t, x)
	var calls atomic.Int32
	x.start(t, fn("hook", func(_ context.Context, m *buffer.Message) (any, error) {
		if calls.Add(1) <= 2 {
			return nil, &buffer.StatusError{StatusCode: 503}
		}
		return "ok", nil
	}))
	ten := 10
	a := enq(t, x.buf, "hook", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MaxRetries = &ten })
	require.Eventually(t, func() bool { return x.buf.Circuits()[0].State == "OPEN" }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, calls.Load(), "two failures opened the breaker")
	// While open, attempts are deferred, not burnt.
	require.Eventually(t, func() bool {
		m, err := x.buf.Get(context.Background(), a.MessageID)
		return err == nil && len(m.Errors) >= 3 && m.Errors[len(m.Errors)-1].Code == "CIRCUIT_OPEN"
	}, 5*time.Second, 5*time.Millisecond)
	m := waitState(t, x.buf, a.MessageID, contracts.BufferCompleted)
	require.Equal(t, 3, m.AttemptCount, "deferrals burnt no attempt")
	require.EqualValues(t, 3, calls.Load(), "the half-open trial was the only further call")
	require.Equal(t, "CLOSED", x.buf.Circuits()[0].State)
	require.Eventually(t, func() bool {
		s := events.states()
		return strings.Contains(strings.Join(s, ","), "OPEN,HALF_OPEN,CLOSED")
	}, 5*time.Second, 10*time.Millisecond, "circuit events: %v", events.states())
}

func e2eCase9(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.ShutdownTimeout = 200 * time.Millisecond })
	started := make(chan struct{}, 1)
	x.start(t, fn("stuck", func(context.Context, *buffer.Message) (any, error) {
		started <- struct{}{}
		time.Sleep(3 * time.Second) // a worker that never answers
		return nil, nil
	}))
	e := enq(t, x.buf, "stuck", `{}`)
	<-started
	x.buf.Stop() // the worker is abandoned; asynq puts the message back
	y := x.another(t, fn("stuck", func(context.Context, *buffer.Message) (any, error) { return "recovered", nil }))
	m := waitState(t, y, e.MessageID, contracts.BufferCompleted)
	require.JSONEq(t, `"recovered"`, string(m.Result))
	info, err := y.Runtime().Inspector.GetTaskInfo("buffer.default", e.MessageID)
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateCompleted, info.State)
}
