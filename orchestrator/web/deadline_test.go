package web

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

// Requests within one window share a context whose deadline is the
// window's start + d; the next window gets a new one; a clock that went
// back opens a new window rather than reuse one from the future.
func TestDeadlineWindows(t *testing.T) {
	t0 := time.Now()
	now := t0
	w := &deadlines{d: 2 * time.Second, step: 2 * time.Second / deadlineWindows, now: func() time.Time { return now }}
	a := w.get()
	da, ok := a.Deadline()
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), da)

	now = t0.Add(w.step - time.Nanosecond) // same window: same context, budget ≥ d − step
	require.Same(t, a, w.get())
	require.GreaterOrEqual(t, da.Sub(now), w.d-w.step)

	now = t0.Add(w.step) // next window
	b := w.get()
	require.NotSame(t, a, b)
	db, _ := b.Deadline()
	require.Equal(t, now.Add(2*time.Second), db)

	now = t0 // the clock went back: not b's window
	c := w.get()
	require.NotSame(t, b, c)
	dc, _ := c.Deadline()
	require.Equal(t, t0.Add(2*time.Second), dc)
}

// Concurrent requests all get a context within their budget.
func TestDeadlineConcurrent(t *testing.T) {
	w := &deadlines{d: time.Second, step: time.Second / deadlineWindows, now: time.Now}
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				start := time.Now()
				d, ok := w.get().Deadline()
				end := time.Now() // get reads the clock between start and end
				if !ok || d.After(end.Add(time.Second)) || d.Before(start.Add(time.Second-w.step)) {
					t.Errorf("deadline %v after the start, want within [%v, %v]", d.Sub(start), time.Second-w.step, end.Sub(start)+time.Second)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Through Fiber: a handler sees a deadline within its budget, the shared
// context really ends, and a request whose context carries a value keeps it
// (its own context, not a shared one).
func TestDeadlineMiddleware(t *testing.T) {
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error {
		if c.Get("X-Value") != "" {
			c.SetUserContext(context.WithValue(c.UserContext(), ctxKey{}, c.Get("X-Value")))
		}
		return c.Next()
	})
	app.Get("/", Deadline(150*time.Millisecond), func(c *fiber.Ctx) error {
		start := time.Now()
		ctx := c.UserContext()
		d, ok := ctx.Deadline()
		if !ok || d.Sub(start) > 150*time.Millisecond {
			return c.Status(500).SendString("no deadline within the budget")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			return c.Status(500).SendString("the context did not end")
		}
		v, _ := ctx.Value(ctxKey{}).(string)
		return c.SendString("ended " + v)
	})
	for _, v := range []string{"", "kept"} {
		req := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			req.Header.Set("X-Value", v)
		}
		start := time.Now()
		resp, err := app.Test(req, 5000)
		require.NoError(t, err)
		body := make([]byte, 64)
		n, _ := resp.Body.Read(body)
		require.Equal(t, 200, resp.StatusCode, string(body[:n]))
		require.Equal(t, "ended "+v, string(body[:n]))
		require.Less(t, time.Since(start), time.Second)
	}
}

// d <= 0 sets no deadline.
func TestDeadlineNone(t *testing.T) {
	app := fiber.New()
	app.Get("/", Deadline(0), func(c *fiber.Ctx) error {
		if _, ok := c.UserContext().Deadline(); ok {
			return c.SendStatus(500)
		}
		return c.SendStatus(204)
	})
	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	require.NoError(t, err)
	require.Equal(t, 204, resp.StatusCode)
}

// A long poll's chain before its handler ends d after the start; the
// handler's LongPollContext ends budget after the same start, on the
// context from before the deadline. Without LongPollDeadline it counts
// from now.
func TestLongPollDeadline(t *testing.T) {
	var chain, poll, bare time.Time
	var chainOK, pollOK, bareOK bool
	app := fiber.New()
	app.Post("/poll", LongPollDeadline(100*time.Millisecond), func(c *fiber.Ctx) error {
		chain, chainOK = c.UserContext().Deadline()
		ctx, cancel := LongPollContext(c, 5*time.Second)
		defer cancel()
		poll, pollOK = ctx.Deadline()
		return c.SendStatus(fiber.StatusNoContent)
	})
	app.Post("/bare", func(c *fiber.Ctx) error {
		ctx, cancel := LongPollContext(c, 5*time.Second)
		defer cancel()
		bare, bareOK = ctx.Deadline()
		return c.SendStatus(fiber.StatusNoContent)
	})
	start := time.Now()
	for _, path := range []string{"/poll", "/bare"} {
		resp, err := app.Test(httptest.NewRequest("POST", path, nil))
		require.NoError(t, err)
		require.Equal(t, fiber.StatusNoContent, resp.StatusCode)
	}
	end := time.Now()
	require.True(t, chainOK && pollOK && bareOK, "every context has a deadline")
	require.WithinRange(t, chain, start.Add(100*time.Millisecond), end.Add(100*time.Millisecond))
	require.Equal(t, 5*time.Second-100*time.Millisecond, poll.Sub(chain), "both count from the request's start")
	require.WithinRange(t, bare, start.Add(5*time.Second), end.Add(5*time.Second))
}
