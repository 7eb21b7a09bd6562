package timeutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/timeutil"
)

func TestSleepWaits(t *testing.T) {
	start := time.Now()
	if err := timeutil.Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("Sleep returned after %v, want at least 20ms", waited)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := timeutil.Sleep(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sleep: got %v, want context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("Sleep outlived its context: %v", waited)
	}
}

func TestSleepNonPositiveReturnsAtOnceWithTheContextsError(t *testing.T) {
	if err := timeutil.Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(live, 0): %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{0, -time.Second} {
		if err := timeutil.Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(cancelled, %v): got %v, want context.Canceled", d, err)
		}
	}
}
