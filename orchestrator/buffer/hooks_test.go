package buffer_test

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// hooked records its lifecycle calls.
type hooked struct {
	buffer.Base
	mu    sync.Mutex
	calls []string
	fail  error
}

func (h *hooked) log(s string) { h.mu.Lock(); h.calls = append(h.calls, s); h.mu.Unlock() }

func (h *hooked) OnBeforeProcess(_ context.Context, m *buffer.Message) error {
	h.log("before:" + m.MessageID)
	return nil
}

func (h *hooked) Process(_ context.Context, m *buffer.Message) (any, error) {
	h.log("process")
	return "r", h.fail
}

func (h *hooked) OnAfterProcess(_ context.Context, _ *buffer.Message, res any) error {
	h.log("after:" + res.(string))
	return nil
}

func (h *hooked) OnError(err error, _ *buffer.Message) bool {
	h.log("onError")
	return false
}

// The hooks run around Process in the seed's order; OnError decides.
func TestHandlerHooksAndOnError(t *testing.T) {
	x := setup(t, nil)
	h := &hooked{Base: buffer.Base{Name: "h"}}
	bad := &hooked{Base: buffer.Base{Name: "bad"}, fail: errors.New("boom")}
	x.start(t, h, bad)
	enq(t, x.buf, "h", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = "m1" })
	waitState(t, x.buf, "m1", contracts.BufferCompleted)
	require.Equal(t, []string{"before:m1", "process", "after:r"}, h.calls)
	enq(t, x.buf, "bad", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = "m2" })
	m := waitState(t, x.buf, "m2", contracts.BufferDLQ)
	require.Equal(t, 1, m.AttemptCount, "OnError said no retry (the default would have retried)")
	require.Equal(t, []string{"before:m2", "process", "onError"}, bad.calls)
}

// A panicking handler is caught: HANDLER_PANIC, not retried.
func TestHandlerPanicIsAFailure(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("p", func(context.Context, *buffer.Message) (any, error) { panic("oops") }))
	e := enq(t, x.buf, "p", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, "HANDLER_PANIC", m.LastError.Code)
}

// A non-idempotent handler's timed-out attempt may have taken effect: it
// is dead-lettered with MESSAGE_TIMEOUT, not retried.
func TestNonIdempotentTimeoutIsNotRetried(t *testing.T) {
	x := setup(t, nil)
	h := fn("once", func(ctx context.Context, _ *buffer.Message) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h.TimeoutAfter, h.NotIdempotent = 100*time.Millisecond, true
	x.start(t, h)
	e := enq(t, x.buf, "once", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, 1, m.AttemptCount)
	require.Equal(t, "MESSAGE_TIMEOUT", m.LastError.Code)
}

// honouring is a handler that says it honours its context: the buffer
// calls it on the worker's goroutine. It records whether it did.
type honouring struct {
	buffer.Func
	inline atomic.Int32 // calls made on the worker's goroutine
	calls  atomic.Int32
}

func (*honouring) HonoursContext() bool { return true }

func (h *honouring) Process(ctx context.Context, m *buffer.Message) (any, error) {
	h.calls.Add(1)
	// A detached call's goroutine starts in processor.detached: the
	// worker's frame (processor.run) is not on its stack.
	if strings.Contains(string(debug.Stack()), "buffer.(*processor).run(") {
		h.inline.Add(1)
	}
	return h.Func.Process(ctx, m)
}

// A handler that honours its context is called inline, and its timeout,
// its panic and its answer are what they are on a goroutine of its own:
// MESSAGE_TIMEOUT, HANDLER_PANIC, the result kept.
func TestContextHonouringHandlerRunsInline(t *testing.T) {
	x := setup(t, nil)
	ok := &honouring{Func: fn("ok", func(context.Context, *buffer.Message) (any, error) { return "done", nil })}
	slow := &honouring{Func: fn("slow", func(ctx context.Context, _ *buffer.Message) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})}
	slow.TimeoutAfter, slow.NotIdempotent = 100*time.Millisecond, true
	boom := &honouring{Func: fn("boom", func(context.Context, *buffer.Message) (any, error) { panic("oops") })}
	x.start(t, ok, slow, boom)

	e := enq(t, x.buf, "ok", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.JSONEq(t, `"done"`, string(m.Result))
	e = enq(t, x.buf, "slow", `{}`)
	t0 := time.Now()
	m = waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, "MESSAGE_TIMEOUT", m.LastError.Code)
	require.Less(t, time.Since(t0), 5*time.Second)
	e = enq(t, x.buf, "boom", `{}`)
	m = waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.Equal(t, "HANDLER_PANIC", m.LastError.Code)

	for _, h := range []*honouring{ok, slow, boom} {
		require.Equal(t, h.calls.Load(), h.inline.Load(), "%s: every call on the worker's goroutine", h.Type())
		require.Positive(t, h.calls.Load())
	}
}

// A handler that does not say it honours its context gets a goroutine of
// its own (so that one ignoring it still times out: storeCase6).
func TestOtherHandlersRunDetached(t *testing.T) {
	x := setup(t, nil)
	var inline, calls atomic.Int32
	x.start(t, fn("plain", func(context.Context, *buffer.Message) (any, error) {
		calls.Add(1)
		if strings.Contains(string(debug.Stack()), "buffer.(*processor).run(") {
			inline.Add(1)
		}
		return nil, nil
	}))
	e := enq(t, x.buf, "plain", `{}`)
	waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.Equal(t, int32(1), calls.Load())
	require.Zero(t, inline.Load())
}
