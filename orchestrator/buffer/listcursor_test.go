package buffer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// walk pages state to the end, calling between(page) after each page.
func walk(t *testing.T, b *buffer.Buffer, q buffer.ListQuery, between func(page int)) []string {
	t.Helper()
	var seen []string
	for page := 1; ; page++ {
		l, err := b.List(context.Background(), q)
		require.NoError(t, err)
		for _, m := range l.Items {
			seen = append(seen, m.MessageID)
		}
		if l.NextCursor == "" {
			return seen
		}
		require.Less(t, page, 100, "the walk does not end")
		q.Cursor = l.NextCursor
		between(page)
	}
}

// 400 pending messages are paged 50 at a time while workers take 10 from
// the head after each page: every message pending from start to end is
// listed exactly once, none twice. Paging by position skipped 87 of them.
func TestListPendingStableWhileTheHeadIsConsumed(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Concurrency, c.TypeConcurrency = 1, 1 })
	release := make(chan struct{})
	var mu sync.Mutex
	taken := map[string]bool{}
	x.start(t, fn("gated", func(ctx context.Context, m *buffer.Message) (any, error) {
		mu.Lock()
		taken[m.MessageID] = true
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	var all []string
	for range 400 {
		all = append(all, enq(t, x.buf, "gated", `{}`).MessageID)
	}
	takenCount := func() int { mu.Lock(); defer mu.Unlock(); return len(taken) }
	require.Eventually(t, func() bool { return takenCount() == 1 }, 5*time.Second, 5*time.Millisecond)

	seen := walk(t, x.buf, buffer.ListQuery{State: buffer.ListPending, Limit: 50}, func(int) {
		n := takenCount()
		for range 10 { // the head moves: 10 taken and finished
			release <- struct{}{}
		}
		require.Eventually(t, func() bool { return takenCount() >= n+10 }, 5*time.Second, 5*time.Millisecond)
	})
	count := map[string]int{}
	for _, id := range seen {
		count[id]++
		require.Equal(t, 1, count[id], "%s listed twice", id)
	}
	mu.Lock()
	defer mu.Unlock()
	stayed := 0
	for _, id := range all {
		if !taken[id] {
			stayed++
			require.Equal(t, 1, count[id], "%s stayed pending but was not listed", id)
		}
	}
	require.Greater(t, stayed, 300)
	require.GreaterOrEqual(t, len(taken), 61, "the head moved during the walk")
	close(release)
}

// A sorted-set state (dead) pages by (score, id): dead letters deleted
// ahead of the cursor between pages shift nothing.
func TestListDeadStableWhileOthersLeave(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("bad", func(context.Context, *buffer.Message) (any, error) {
		return nil, &buffer.ValidationError{Field: "payload", Reason: "never"}
	}))
	var all []string
	for range 60 {
		all = append(all, enq(t, x.buf, "bad", `{}`).MessageID)
	}
	for _, id := range all {
		waitState(t, x.buf, id, contracts.BufferDLQ)
	}
	var deleted []string
	seen := walk(t, x.buf, buffer.ListQuery{State: buffer.ListDead, Limit: 7}, func(page int) {
		// Delete the two oldest dead letters not yet deleted: all listed already.
		l, err := x.buf.List(context.Background(), buffer.ListQuery{State: buffer.ListDead, Limit: 2})
		require.NoError(t, err)
		for _, m := range l.Items {
			require.NoError(t, x.buf.DeleteDLQ(context.Background(), m.MessageID))
			deleted = append(deleted, m.MessageID)
		}
	})
	require.NotEmpty(t, deleted)
	require.ElementsMatch(t, all, seen, "every dead letter once, deletions ahead of the cursor notwithstanding")
}
