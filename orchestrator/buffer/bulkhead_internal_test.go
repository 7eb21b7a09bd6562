package buffer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The bulkhead: a message over the cap of a type that is leaving places
// gets the place left while it waits, and is refused when none is left
// within the wait (or its context ends); a type that has left no place
// lately (slow, hanging) refuses at once; concurrent callers never hold
// more than the cap.
func TestBulkheadWaitsForAPlace(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64 // the buffer's clock, Unix ns
	clock.Store(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC).UnixNano())
	b := newBulkhead(func() time.Time { return time.Unix(0, clock.Load()) })
	if !b.enter(ctx, 1, time.Millisecond) {
		t.Fatal("an empty bulkhead refused")
	}
	start := time.Now()
	if b.enter(ctx, 1, 10*time.Second) {
		t.Fatal("a full bulkhead gave a second place")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("a type that never left a place was waited for (%s)", waited)
	}

	b.leave() // a place left just now: the next one over the cap waits
	if !b.enter(ctx, 1, time.Millisecond) {
		t.Fatal("the place left was not taken")
	}
	start = time.Now()
	if b.enter(ctx, 1, 20*time.Millisecond) {
		t.Fatal("a full bulkhead gave a second place")
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("refused after %s, before the wait", waited)
	}

	left := make(chan struct{})
	go func() {
		time.Sleep(5 * time.Millisecond)
		b.leave()
		close(left)
	}()
	if !b.enter(ctx, 1, 10*time.Second) {
		t.Fatal("the place left during the wait was not taken")
	}
	<-left

	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	start = time.Now()
	if b.enter(cctx, 1, 10*time.Second) {
		t.Fatal("a full bulkhead gave a place after the context ended")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the ended context was noticed after %s", waited)
	}

	clock.Add(int64(time.Minute)) // the last place was left a minute ago
	start = time.Now()
	if b.enter(ctx, 1, 10*time.Second) {
		t.Fatal("a full bulkhead gave a second place")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("a type that left no place lately was waited for (%s)", waited)
	}
	b.leave()
	if got := b.inflight.Load(); got != 0 {
		t.Fatalf("in flight after every leave: %d", got)
	}
}

func TestBulkheadNeverExceedsItsCap(t *testing.T) {
	b := newBulkhead(time.Now)
	const limit, workers, each = 3, 12, 200
	var in, most, refused atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if !b.enter(context.Background(), limit, time.Millisecond) {
					refused.Add(1)
					continue
				}
				n := in.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(10 * time.Microsecond)
				in.Add(-1)
				b.leave()
			}
		}()
	}
	wg.Wait()
	if most.Load() > limit {
		t.Fatalf("%d in flight at once, cap %d", most.Load(), limit)
	}
	if b.inflight.Load() != 0 {
		t.Fatalf("in flight after every leave: %d", b.inflight.Load())
	}
	t.Logf("%d workers over a cap of %d: at most %d in flight, %d of %d refused after a 1 ms wait",
		workers, limit, most.Load(), refused.Load(), workers*each)
}
