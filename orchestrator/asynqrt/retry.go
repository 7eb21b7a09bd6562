package asynqrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// RetryPolicy gives the delay before retry n (1-based count of failures so
// far, as asynq passes it) of a task.
type RetryPolicy interface {
	RetryDelay(n int, err error, t *asynq.Task) time.Duration
}

// RetryPolicyFunc adapts a function to RetryPolicy.
type RetryPolicyFunc func(n int, err error, t *asynq.Task) time.Duration

// RetryDelay implements RetryPolicy.
func (f RetryPolicyFunc) RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	return f(n, err, t)
}

// Exponential is base·2^n capped at max: the seeds' backoff shape
// (booking: min(300 s, 10 s·2^n)).
type Exponential struct {
	Base time.Duration
	Max  time.Duration
}

// RetryDelay implements RetryPolicy.
func (e Exponential) RetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	if n < 0 {
		n = 0
	}
	d := e.Base
	for i := 0; i < n && d < e.Max; i++ {
		d *= 2
	}
	if d > e.Max {
		d = e.Max
	}
	return d
}

// DeferError asks Asynq to run the task again after a delay without counting
// an attempt (for example when a shared rate limiter says "not yet"). Return
// it from a handler through Defer.
type DeferError struct {
	After  time.Duration
	Reason string
}

// deferPrefix starts every DeferError message (IsDeferral reads it back
// from asynq's last-error string).
const deferPrefix = "deferred for "

func (e *DeferError) Error() string {
	return fmt.Sprintf("%s%s: %s", deferPrefix, e.After, e.Reason)
}

// IsDeferral reports whether a task's last error (asynq keeps it as a
// string) was a Defer, not a failure.
func IsDeferral(lastErr string) bool { return strings.HasPrefix(lastErr, deferPrefix) }

// Defer returns an error that re-runs the task after d without burning an
// attempt.
func Defer(d time.Duration, reason string) error { return &DeferError{After: d, Reason: reason} }

// isFailure is the asynq IsFailure func: deferrals are not failures.
func isFailure(err error) bool {
	var d *DeferError
	return err != nil && !errors.As(err, &d)
}

// Final reports whether err, returned by a handler running with ctx, ends
// its task for good: asynq archives it because the handler asked for no
// retry (asynq.SkipRetry) or this was the last attempt. A deferral never
// does. The runtime's ErrorHandler writes the dead-letter record on it; a
// handler may use it to report the failure in its own terms.
func Final(ctx context.Context, err error) bool {
	if !isFailure(err) {
		return false
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry || errors.Is(err, asynq.SkipRetry)
}

// retryDelay dispatches to the task type's policy; deferrals use their own
// delay.
func (r *Runtime) retryDelay(n int, err error, t *asynq.Task) time.Duration {
	var d *DeferError
	if errors.As(err, &d) {
		return d.After
	}
	r.mu.RLock()
	p, ok := r.policies[t.Type()]
	r.mu.RUnlock()
	if !ok {
		p = r.cfg.DefaultRetry
	}
	return p.RetryDelay(n, err, t)
}
