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

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Dead letters expire after the failed retention (seed: 7 d): record,
// archived task, errors and idempotency key go.
func TestPurgeExpiredDeadLetters(t *testing.T) {
	clk := &clock{t: time.Now()}
	x := setup(t, func(c *buffer.Config) { c.Now = clk.now })
	x.start(t, fn("bad", func(context.Context, *buffer.Message) (any, error) {
		return nil, &buffer.StatusError{StatusCode: 400}
	}))
	enq(t, x.buf, "bad", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = "old"; r.IdempotencyKey = "k-old" })
	waitState(t, x.buf, "old", contracts.BufferDLQ)
	require.Eventually(t, func() bool { n, _ := x.buf.DLQCount(context.Background()); return n == 1 }, 5*time.Second, 5*time.Millisecond)
	clk.add(6 * 24 * time.Hour)
	enq(t, x.buf, "bad", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = "young" })
	require.Eventually(t, func() bool { n, _ := x.buf.DLQCount(context.Background()); return n == 2 }, 5*time.Second, 5*time.Millisecond)

	n, err := x.buf.PurgeExpired(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "nothing is 7 days old yet")
	clk.add(24*time.Hour + time.Minute)
	require.NoError(t, x.buf.Purger().Run(context.Background()))
	l, err := x.buf.DLQList(context.Background(), 10, "")
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	require.Equal(t, "young", l.Items[0].MessageID)
	_, err = x.buf.Get(context.Background(), "old")
	require.Equal(t, contracts.CodeNotFound, code(err), "the archived task is gone too")
	require.Zero(t, x.db.Client.Exists(context.Background(), "flowgate:buffer:{buffer}:idem:k-old", "flowgate:buffer:err:{old}").Val())
}
