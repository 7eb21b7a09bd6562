// Package timeutil holds the context-aware sleep every retry loop and
// injected Sleep default uses. It imports only the standard library.
package timeutil

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever comes first: nil after d,
// ctx.Err() when ctx ended first. d <= 0 does not wait: it returns
// ctx.Err() at once (nil while ctx is live), so an ended ctx is always
// reported, never raced against an expired timer.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
