package buffer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// A replayed dead letter gets its whole retry budget again (Asynq's
// RunTask kept the retry count: one attempt), and a replay while the
// type's breaker is open is deferred, never dead-lettered at once; it is
// in the queue or in the DLQ at every moment.
func TestReplayGetsFreshRetriesAndWaitsForTheBreaker(t *testing.T) {
	x := setup(t, func(c *buffer.Config) {
		c.DefaultMaxRetries = 2
		c.Circuit = buffer.CircuitConfig{Threshold: 3, Timeout: time.Second}
	})
	var calls atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	x.start(t, fn("flaky", func(context.Context, *buffer.Message) (any, error) {
		calls.Add(1)
		if fail.Load() {
			return nil, &buffer.StatusError{StatusCode: 503}
		}
		return map[string]bool{"ok": true}, nil
	}))
	ctx := context.Background()
	e := enq(t, x.buf, "flaky", `{}`)
	waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.EqualValues(t, 3, calls.Load(), "1 attempt + 2 retries")

	// The breaker opened on the third failure; replay while it is open.
	require.Equal(t, "OPEN", circuitState(x.buf, "flaky"))
	require.NoError(t, x.buf.Replay(ctx, e.MessageID))
	require.Never(t, func() bool {
		m, err := x.buf.Get(ctx, e.MessageID)
		return err != nil || m.State == contracts.BufferDLQ
	}, 600*time.Millisecond, 20*time.Millisecond, "the replayed message is always somewhere; a replay with the breaker open is not dead-lettered")
	require.EqualValues(t, 3, calls.Load(), "no attempt while the breaker is open")

	// Half-open after 1 s: the trial fails, the breaker opens again, and
	// the message keeps its budget: it is dead-lettered only after three
	// attempts of its own (one counted per trial).
	waitState(t, x.buf, e.MessageID, contracts.BufferDLQ)
	require.EqualValues(t, 6, calls.Load(), "a replay runs 1 attempt + 2 retries again")

	// Replayed once more with the target healthy: it completes.
	fail.Store(false)
	require.NoError(t, x.buf.ResetCircuit("flaky"))
	require.NoError(t, x.buf.Replay(ctx, e.MessageID))
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.EqualValues(t, 7, calls.Load())
	require.Equal(t, 1, m.AttemptCount, "the count starts again at a replay")
}

func circuitState(b *buffer.Buffer, typ string) string {
	for _, c := range b.Circuits() {
		if c.Type == typ {
			return c.State
		}
	}
	return ""
}
