package web

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// deadlineWindows is how many windows one budget is cut into: requests
// that start within the same d/deadlineWindows share one deadline context.
const deadlineWindows = 64

// Deadline gives the rest of the chain a context that ends at most d after
// the request started, so every Redis call of the request (go-redis with
// ContextTimeoutEnabled) gives up in time and the request answers 503
// rather than hang. d <= 0 sets none.
//
// Requests that start within the same window of d/64 share one context,
// whose deadline is the window's start + d: a request's budget is between
// d − d/64 and d (2 s: 1.969–2 s), and it costs an atomic load and a clock
// read instead of a context, a runtime timer and its cancel (≈ 1–2 µs of
// the work buffer's ≈ 35 µs HTTP enqueue; see TestLoadBufferHTTPLadder). The
// shared context is not cancelled when a request ends: work a handler
// leaves running on it ends at its deadline. A request whose context
// already carries something (not context.Background) gets its own, as
// before.
func Deadline(d time.Duration) fiber.Handler {
	if d <= 0 {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	w := &deadlines{d: d, step: max(d/deadlineWindows, time.Nanosecond), now: time.Now}
	return func(c *fiber.Ctx) error {
		parent := c.UserContext()
		if parent != context.Background() {
			ctx, cancel := context.WithTimeout(parent, d)
			defer cancel()
			c.SetUserContext(ctx)
			return c.Next()
		}
		c.SetUserContext(w.get())
		return c.Next()
	}
}

// deadlines hands out the shared deadline context of the current window.
type deadlines struct {
	d, step time.Duration
	now     func() time.Time
	cur     atomic.Pointer[deadlineWindow]
}

// deadlineWindow is one window's context: it ends at start + d.
type deadlineWindow struct {
	start time.Time // with its monotonic reading
	ctx   context.Context
	// cancel is never called: the context ends at its deadline, which
	// releases its timer. It is kept so the context's owner is explicit.
	cancel context.CancelFunc
}

// get returns the context of the window now falls in, opening a new one
// when the current window is over (or the clock went back).
func (w *deadlines) get() context.Context {
	now := w.now()
	cur := w.cur.Load()
	if cur != nil {
		if age := now.Sub(cur.start); age >= 0 && age < w.step {
			return cur.ctx
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(w.d))
	next := &deadlineWindow{start: now, ctx: ctx, cancel: cancel}
	// A request that loses the race keeps its own context (within its
	// budget all the same); the window is the winner's.
	w.cur.CompareAndSwap(cur, next)
	return ctx
}

// LongPollDeadline is Deadline for a route whose handler waits longer
// than d on purpose (a long poll): the chain before the handler (Auth,
// decoding) runs within d of the request's start, as under Deadline, and
// the handler takes LongPollContext for its wait. Each request gets its
// own context, not a shared window's: a long poll holds its connection
// anyway.
func LongPollDeadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := longPollStart{parent: c.UserContext(), at: time.Now()}
		ctx, cancel := context.WithDeadline(start.parent, start.at.Add(d))
		defer cancel()
		c.Locals(longPollStartKey{}, start)
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// LongPollContext is the context of a long poll's work: budget from the
// request's start, on the request's context as it was before
// LongPollDeadline (so its shorter deadline does not cut the wait). Without
// LongPollDeadline before it, budget from now.
func LongPollContext(c *fiber.Ctx, budget time.Duration) (context.Context, context.CancelFunc) {
	if s, ok := c.Locals(longPollStartKey{}).(longPollStart); ok {
		return context.WithDeadline(s.parent, s.at.Add(budget))
	}
	return context.WithTimeout(c.UserContext(), budget)
}

// longPollStart is what LongPollDeadline leaves LongPollContext: the
// request's context before any deadline, and when the request started.
type longPollStart struct {
	parent context.Context
	at     time.Time
}

type longPollStartKey struct{}
