package buffer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// The bulkhead: 50 messages of a type whose target hangs take at most
// their cap of the workers (half of them by default); the messages of a
// healthy type enqueued behind them are processed within a second, p99.
// Without the cap the hanging type took all 10 workers and the healthy
// messages waited for the hanging ones' timeouts.
func TestBulkheadHangingTypeDoesNotStallOthers(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Servers, c.Concurrency = 1, 10 })
	release := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	defer stop()
	var mu sync.Mutex
	hanging, maxHanging := 0, 0
	hang := buffer.Func{Base: buffer.Base{Name: "hang", TimeoutAfter: 30 * time.Second},
		Fn: func(ctx context.Context, _ *buffer.Message) (any, error) {
			mu.Lock()
			hanging++
			maxHanging = max(maxHanging, hanging)
			mu.Unlock()
			defer func() { mu.Lock(); hanging--; mu.Unlock() }()
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
	done := map[string]time.Time{}
	healthy := fn("healthy", func(_ context.Context, m *buffer.Message) (any, error) {
		mu.Lock()
		done[m.MessageID] = time.Now()
		mu.Unlock()
		return nil, nil
	})
	x.start(t, hang, healthy)
	var hangIDs []string
	for range 50 {
		hangIDs = append(hangIDs, enq(t, x.buf, "hang", `{}`).MessageID)
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return hanging == 5 }, 5*time.Second, 10*time.Millisecond,
		"the hanging type fills its cap (half of 10 workers)")
	sent := map[string]time.Time{}
	for range 20 {
		e := enq(t, x.buf, "healthy", `{}`)
		sent[e.MessageID] = time.Now()
		time.Sleep(50 * time.Millisecond) // measured: healthy messages arrive spread out, each one's delay is timed
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == len(sent) }, 10*time.Second, 10*time.Millisecond)
	var delays []time.Duration
	for id, at := range sent {
		delays = append(delays, done[id].Sub(at))
	}
	slices.Sort(delays)
	p99 := delays[len(delays)*99/100]
	t.Logf("healthy type beside 50 hanging messages: %d messages, p50 %s, p99 %s, max %s; hanging in flight at most %d",
		len(delays), delays[len(delays)/2], p99, delays[len(delays)-1], maxHanging)
	require.LessOrEqual(t, p99, time.Second)
	mu.Lock()
	require.Equal(t, 5, maxHanging, "never more than the cap in flight")
	mu.Unlock()

	// Released, every hanging message completes: a deferral costs no attempt.
	stop()
	for _, id := range hangIDs {
		got := waitState(t, x.buf, id, contracts.BufferCompleted)
		require.Equal(t, 1, got.AttemptCount, "%s", id)
	}
}
