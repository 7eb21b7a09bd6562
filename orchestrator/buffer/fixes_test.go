package buffer_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// loseAnswer is a go-redis hook that lets Asynq's enqueue script of one
// task run in Redis and then reports a timeout, as a client whose deadline
// passed while the answer was on its way would.
type loseAnswer struct {
	taskID string
	done   atomic.Bool
}

func (h *loseAnswer) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseAnswer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if h.hit(cmd) {
				cmd.SetErr(context.DeadlineExceeded)
			}
		}
		return err
	}
}
func (h *loseAnswer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.hit(cmd) {
			return context.DeadlineExceeded
		}
		return err
	}
}

// hit reports the first run of the task's enqueue script.
func (h *loseAnswer) hit(cmd redis.Cmder) bool {
	if n := cmd.Name(); (n != "evalsha" && n != "eval") || len(cmd.Args()) <= 3 {
		return false
	}
	k, _ := cmd.Args()[3].(string)
	return strings.HasSuffix(k, ":t:"+h.taskID) && h.done.CompareAndSwap(false, true)
}

func keyed(key, id string) contracts.BufferEnqueueRequest {
	return contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: key, MessageID: id}
}

// Defect 1: an enqueue whose answer was lost (it timed out after the task
// landed) must not give its idempotency key back, or the client's retry
// enqueues the message twice.
func TestEnqueueTimeoutKeepsTheIdempotencyClaim(t *testing.T) {
	x := setup(t, nil)
	x.db.Client.AddHook(&loseAnswer{taskID: "first"})
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	_, err := x.buf.Enqueue(context.Background(), keyed("pay-1", "first"))
	require.Equal(t, contracts.CodePersistenceFailure, code(err), "the caller saw a failure")

	_, err = x.buf.Enqueue(context.Background(), keyed("pay-1", "retry"))
	require.Equal(t, contracts.CodeDuplicateMessage, code(err), "the retry is the same message")
	require.Equal(t, "first", details(t, err)["messageId"])
	waitState(t, x.buf, "first", contracts.BufferCompleted)
	_, err = x.buf.Get(context.Background(), "retry")
	require.Equal(t, contracts.CodeNotFound, code(err), "nothing enqueued twice")
}

// Defect 2: a claim left by a crash between the claim and the enqueue
// (no task behind it) answered DUPLICATE_MESSAGE forever; then, for a
// grace of 30 s, a 409 naming a message that did not exist (a client that
// trusts the 409 lost its message). Now the next enqueue of the key
// resumes the claim at once, with its messageId and queue; a claim whose
// message is retained keeps answering DUPLICATE, naming a message a Get
// finds.
func TestUnfinishedClaimIsResumed(t *testing.T) {
	clk := &clock{t: time.Now()}
	x := setup(t, func(c *buffer.Config) { c.Now = clk.now })
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	ctx := context.Background()
	crashed := "ghost buffer.low " + strconv.FormatInt(clk.now().UnixMilli(), 10)
	require.NoError(t, x.db.Client.Set(ctx, "flowgate:buffer:{buffer}:idem:k1", crashed, 0).Err())

	e, err := x.buf.Enqueue(ctx, keyed("k1", ""))
	require.NoError(t, err, "a claim with no task behind it is resumed, not a duplicate")
	require.Equal(t, "ghost", e.MessageID, "the claim's messageId")
	require.Equal(t, "buffer.low", e.Queue, "the claim's queue, whatever the resend's priority")
	require.Equal(t, contracts.BufferPriorityLow, e.Priority)
	waitState(t, x.buf, "ghost", contracts.BufferCompleted)

	clk.add(time.Hour)
	_, err = x.buf.Enqueue(ctx, keyed("k1", "again"))
	require.Equal(t, contracts.CodeDuplicateMessage, code(err), "the completed original is retained")
	require.Equal(t, "ghost", details(t, err)["messageId"])
	_, err = x.buf.Get(ctx, "ghost")
	require.NoError(t, err, "a 409 names a message that exists")
	_, err = x.buf.Get(ctx, "again")
	require.Equal(t, contracts.CodeNotFound, code(err), "nothing enqueued twice")

	require.NoError(t, x.buf.Runtime().Inspector.DeleteTask("buffer.low", "ghost")) // its retention ran out
	e, err = x.buf.Enqueue(ctx, keyed("k1", ""))
	require.NoError(t, err, "DUPLICATE_MESSAGE holds as long as the original is retained, no longer")
	waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)

	require.NoError(t, x.db.Client.Set(ctx, "flowgate:buffer:{buffer}:idem:k2", "unreadable", 0).Err())
	e, err = x.buf.Enqueue(ctx, keyed("k2", "own"))
	require.NoError(t, err, "an unreadable claim is taken over")
	require.Equal(t, "own", e.MessageID)
}

// Many resends of one key whose claim has no task (the operator's fault
// drill: flowgate killed mid-enqueue, every client resending at once):
// exactly one is accepted, every other answer is a 409 naming that same
// message, and it exists once.
func TestConcurrentResendsOfAnUnfinishedClaim(t *testing.T) {
	x := setup(t, nil)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	ctx := context.Background()
	crashed := "orphan buffer.default " + strconv.FormatInt(time.Now().UnixMilli(), 10)
	require.NoError(t, x.db.Client.Set(ctx, "flowgate:buffer:{buffer}:idem:k-many", crashed, 0).Err())

	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := x.buf.Enqueue(ctx, keyed("k-many", ""))
			if err == nil {
				ok.Add(1)
				require.Equal(t, "orphan", e.MessageID)
				return
			}
			require.Equal(t, contracts.CodeDuplicateMessage, code(err), "%v", err)
			require.Equal(t, "orphan", details(t, err)["messageId"])
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), ok.Load(), "one resend is accepted")
	n := 0
	for _, q := range buffer.Queues() {
		if _, err := x.buf.Runtime().Inspector.GetTaskInfo(q, "orphan"); err == nil {
			n++
		}
	}
	require.Equal(t, 1, n, "one task")
}

// Defect 8 (capacity): the check and the reservation are one script, so
// instances enqueueing at once never overfill the buffer.
func TestCapacityIsExactAcrossInstances(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.MaxQueueSize = 20 })
	block := make(chan struct{})
	defer close(block)
	hold := fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil })
	x.start(t, hold)
	y := x.another(t, hold)

	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := x.buf
			if i%2 == 1 {
				b = y
			}
			_, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)})
			switch code(err) {
			case contracts.CodeBufferQueueFull:
				full.Add(1)
			default:
				if err == nil {
					ok.Add(1)
				} else {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 20, ok.Load(), "exactly the capacity was admitted")
	require.EqualValues(t, 100, full.Load())
}

// Defect 8 (alert): concurrent dead letters on two instances alert once
// for the crossing: the counter and the flag move in one script.
func TestDLQAlertOnceAcrossInstances(t *testing.T) {
	var alerts atomic.Int32
	al := buffer.AlerterFunc(func(context.Context, int64, int64) error { alerts.Add(1); return nil })
	x := setup(t, func(c *buffer.Config) { c.DLQAlertThreshold = 3; c.Alerter = al; c.Concurrency = 10 })
	bad := fn("bad", func(context.Context, *buffer.Message) (any, error) { return nil, &buffer.StatusError{StatusCode: 400} })
	x.start(t, bad)
	x.another(t, bad) // the second instance dead-letters too
	ids := make([]string, 30)
	for i := range ids {
		ids[i] = enq(t, x.buf, "bad", `{}`).MessageID
	}
	for _, id := range ids {
		waitState(t, x.buf, id, contracts.BufferDLQ)
	}
	require.EqualValues(t, 1, alerts.Load())
}

// Defect 6: of concurrent replays of one dead letter, one wins and the
// others get CONFLICT (409, not_dead_letter: replayed meanwhile), not the
// 503 of their RunTask error.
func TestConcurrentReplayLosersGetConflict(t *testing.T) {
	x := setup(t, nil)
	var fail atomic.Bool
	fail.Store(true)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("bad", func(context.Context, *buffer.Message) (any, error) {
		if fail.Load() {
			return nil, &buffer.StatusError{StatusCode: 400}
		}
		<-block // the replayed message stays in flight
		return nil, nil
	}))
	e := enq(t, x.buf, "bad", `{}`)
	waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Eventually(t, func() bool { n, _ := x.buf.DLQCount(context.Background()); return n == 1 }, 5*time.Second, 5*time.Millisecond)
	fail.Store(false)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = x.buf.Replay(context.Background(), e.MessageID) }()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.Equal(t, contracts.CodeConflict, code(err), "%v", err)
		require.Equal(t, 409, code(err).HTTPStatus())
	}
	require.Equal(t, 1, won)
	err := x.buf.Replay(context.Background(), e.MessageID)
	require.Equal(t, contracts.CodeConflict, code(err), "a later replay is told it is no dead letter now")
	require.Equal(t, "not_dead_letter", details(t, err)["reason"])
	require.Equal(t, contracts.CodeNotFound, code(x.buf.Replay(context.Background(), "never-was")))

	// A message that never was a dead letter is told so, with its state,
	// by a replay and by a DLQ delete alike (the delete answered 404 "no
	// message", while GET /messages/{id} found it).
	ok := enq(t, x.buf, "bad", `{}`)
	for _, err := range []error{x.buf.Replay(context.Background(), ok.MessageID), x.buf.DeleteDLQ(context.Background(), ok.MessageID)} {
		require.Equal(t, contracts.CodeConflict, code(err), "%v", err)
		require.Equal(t, "not_dead_letter", details(t, err)["reason"])
		require.NotEmpty(t, details(t, err)["state"])
	}
	require.Equal(t, contracts.CodeNotFound, code(x.buf.DeleteDLQ(context.Background(), "never-was")))
	_, err = x.buf.Get(context.Background(), ok.MessageID)
	require.NoError(t, err, "the DLQ delete left the live message alone")
}

// Defect 5: a panic is HANDLER_PANIC with a bounded message and the stack
// only in errors[].stack (bounded), never in lastError or the events.
func TestHandlerPanicStackIsBoundedAndKeptApart(t *testing.T) {
	x := setup(t, nil)
	events := subscribe(t, x)
	x.start(t, fn("p", func(context.Context, *buffer.Message) (any, error) { panic(strings.Repeat("é", 10000)) }))
	e := enq(t, x.buf, "p", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Len(t, m.Errors, 1)
	got := m.Errors[0]
	require.Equal(t, buffer.CodeHandlerPanic, got.Code)
	require.True(t, strings.HasPrefix(got.Message, "panic: éé"))
	require.LessOrEqual(t, len(got.Message), 300)
	require.NotContains(t, got.Message, "goroutine")
	require.Contains(t, got.Stack, "goroutine")
	require.LessOrEqual(t, len(got.Stack), 4<<10+20)
	require.NotContains(t, m.LastError.Message, "goroutine")
	require.Eventually(t, func() bool {
		events.mu.Lock()
		defer events.mu.Unlock()
		for _, ev := range events.evs {
			if ev.Event == buffer.EventDLQ {
				require.NotContains(t, ev.Error, "goroutine")
				return true
			}
		}
		return false
	}, 15*time.Second, 10*time.Millisecond, "no dlq event (the event is published after the state change; 5 s was too short under a loaded CI)")
}

// BUFFER_MAX_RETRIES was ignored: a handler built on Base answered 3 for
// "unset", so Config.DefaultMaxRetries never applied. Now the order is
// the request's maxRetries, then the handler's own, then the buffer's
// default, and NoRetries (the setting's 0) means none: a failing message
// goes to the DLQ after its one attempt.
func TestDefaultMaxRetriesApplies(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.DefaultMaxRetries = buffer.NoRetries })
	var tries sync.Map
	fail := func(_ context.Context, m *buffer.Message) (any, error) {
		n, _ := tries.LoadOrStore(m.MessageID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return nil, &buffer.StatusError{StatusCode: 503, Body: "downstream busy"}
	}
	own := buffer.Func{Base: buffer.Base{Name: "own", TimeoutAfter: 5 * time.Second, Retries: 2}, Fn: fail}
	x.start(t, fn("email", fail), own)

	unset := enq(t, x.buf, "email", `{}`)
	mine := enq(t, x.buf, "own", `{}`)
	one := 1
	asked := enq(t, x.buf, "email", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MaxRetries = &one })
	for _, c := range []struct {
		id       string
		retries  int
		attempts int32
	}{{unset.MessageID, 0, 1}, {mine.MessageID, 2, 3}, {asked.MessageID, 1, 2}} {
		m := waitState(t, x.buf, c.id, contracts.BufferDLQ)
		require.Equal(t, c.retries, m.MaxRetries, c.id)
		n, _ := tries.Load(c.id)
		require.Equal(t, c.attempts, n.(*atomic.Int32).Load(), "attempts of %s", c.id)
	}
}
