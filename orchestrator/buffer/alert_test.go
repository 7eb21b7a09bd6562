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

// The DLQ alert fires once per crossing of the threshold, not per message,
// and again after the count fell below and crossed anew.
func TestDLQAlertOncePerCrossing(t *testing.T) {
	var mu sync.Mutex
	var alerts []int64
	x := setup(t, func(c *buffer.Config) {
		c.DLQAlertThreshold = 2
		c.Alerter = buffer.AlerterFunc(func(_ context.Context, count, th int64) error {
			mu.Lock()
			defer mu.Unlock()
			require.EqualValues(t, 2, th)
			alerts = append(alerts, count)
			return nil
		})
	})
	x.start(t, fn("bad", func(context.Context, *buffer.Message) (any, error) {
		return nil, &buffer.StatusError{StatusCode: 400}
	}))
	got := func() []int64 { mu.Lock(); defer mu.Unlock(); return append([]int64(nil), alerts...) }
	dead := func(id string) {
		enq(t, x.buf, "bad", `{}`, func(r *contracts.BufferEnqueueRequest) { r.MessageID = id })
		waitState(t, x.buf, id, contracts.BufferDLQ)
		require.Eventually(t, func() bool {
			l, _ := x.buf.DLQList(context.Background(), 100, "")
			for _, it := range l.Items {
				if it.MessageID == id {
					return true
				}
			}
			return false
		}, 5*time.Second, 5*time.Millisecond)
	}
	dead("d1")
	require.Empty(t, got())
	dead("d2")
	dead("d3")
	dead("d4")
	require.Equal(t, []int64{2}, got(), "one alert for the crossing, none for the messages after it")
	for _, id := range []string{"d1", "d2", "d3"} {
		require.NoError(t, x.buf.DeleteDLQ(context.Background(), id))
	}
	dead("d5")
	require.Equal(t, []int64{2, 2}, got(), "a new crossing alerts again")
}
