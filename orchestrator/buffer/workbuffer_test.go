package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// ok is a handler body that succeeds.
func ok(context.Context, *buffer.Message) (any, error) { return map[string]any{"ok": true}, nil }

// TestWorkBuffer is the seed's "WorkBuffer" unit list.
func TestWorkBuffer(t *testing.T) {
	t.Run("enqueue/should enqueue successfully", workBufferCase1)
	t.Run("enqueue/should reject when shutting down", workBufferCase2)
	t.Run("enqueue/should reject when queue full", workBufferCase3)
	t.Run("enqueue/should handle duplicates with idempotency", workBufferCase4)
	t.Run("start and stop/should start and stop gracefully", workBufferCase5)
	t.Run("start and stop/should not start twice", workBufferCase6)
	t.Run("message processing/should process message successfully", workBufferCase7)
	t.Run("message processing/should retry failed messages", workBufferCase8)
	t.Run("getStats/should return buffer statistics", workBufferCase9)
}

func workBufferCase1(t *testing.T) {
	x := setup(t, nil)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(ctx context.Context, _ *buffer.Message) (any, error) { <-block; return nil, nil }))
	e := enq(t, x.buf, "email", `{"to":"a@b.c"}`, pri(contracts.BufferPriorityHigh), func(r *contracts.BufferEnqueueRequest) {
		r.Metadata = contracts.BufferMetadata{CorrelationID: "c-1", CompanyID: "co-9"}
	})
	require.Equal(t, "buffer.high", e.Queue)
	m, err := x.buf.Get(context.Background(), e.MessageID)
	require.NoError(t, err)
	require.Contains(t, []contracts.BufferState{contracts.BufferPending, contracts.BufferProcessing}, m.State)
	require.Equal(t, "email", m.Type)
	require.Equal(t, contracts.BufferPriorityHigh, m.Priority)
	require.Equal(t, "c-1", m.Metadata.CorrelationID)
	require.JSONEq(t, `{"to":"a@b.c"}`, string(m.Payload))
	require.Equal(t, buffer.DefaultMaxRetries, m.MaxRetries)
}

func workBufferCase2(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", ok))
	x.buf.Stop()
	require.Equal(t, buffer.StateStopped, x.buf.State())
	_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)})
	require.Equal(t, contracts.CodeShutdownInProgress, code(err))
	require.Equal(t, 503, code(err).HTTPStatus())
}

func workBufferCase3(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.MaxQueueSize = 3; c.Concurrency = 1 })
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	for i := 0; i < 3; i++ {
		enq(t, x.buf, "email", `{}`)
	}
	_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{MessageID: "over", Type: "email", Payload: json.RawMessage(`{}`)})
	require.Equal(t, contracts.CodeBufferQueueFull, code(err))
	require.Equal(t, 429, code(err).HTTPStatus())
	require.EqualValues(t, 3, details(t, err)["depth"])
	_, err = x.buf.Get(context.Background(), "over")
	require.Equal(t, contracts.CodeNotFound, code(err), "a refused message is not stored")
}

func workBufferCase4(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", ok))
	first := enq(t, x.buf, "email", `{}`, func(r *contracts.BufferEnqueueRequest) { r.IdempotencyKey = "order-7" })
	for _, p := range []contracts.BufferPriority{contracts.BufferPriorityNormal, contracts.BufferPriorityCritical} {
		_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`),
			IdempotencyKey: "order-7", Priority: &p})
		require.Equal(t, contracts.CodeDuplicateMessage, code(err))
		require.Equal(t, first.MessageID, details(t, err)["messageId"], "the original messageId, whatever the priority")
	}
	_, err := x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{MessageID: first.MessageID, Type: "email", Payload: json.RawMessage(`{}`)})
	require.Equal(t, contracts.CodeDuplicateMessage, code(err), "the same messageId is a duplicate too")
	waitState(t, x.buf, first.MessageID, contracts.BufferCompleted)
	_, err = x.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: "order-7"})
	require.Equal(t, contracts.CodeDuplicateMessage, code(err), "still a duplicate while the completed original is retained")
	ttl := x.db.Client.PTTL(context.Background(), "flowgate:buffer:{buffer}:idem:order-7").Val()
	require.InDelta(t, buffer.DefaultCompletedRetention.Hours(), ttl.Hours(), 0.01, "the key lives as long as the original")
}

func workBufferCase5(t *testing.T) {
	x := setup(t, nil)
	require.Equal(t, buffer.StateStopped, x.buf.State())
	started := make(chan struct{})
	x.start(t, fn("slow", func(context.Context, *buffer.Message) (any, error) {
		close(started)
		time.Sleep(300 * time.Millisecond) // a job still running when Stop comes
		return "done", nil
	}))
	require.Equal(t, buffer.StateRunning, x.buf.State())
	e := enq(t, x.buf, "slow", `{}`)
	<-started
	x.buf.Stop()
	require.Equal(t, buffer.StateStopped, x.buf.State())
	m, err := x.buf.Get(context.Background(), e.MessageID)
	require.NoError(t, err)
	require.Equal(t, contracts.BufferCompleted, m.State, "the in-flight message finished during the stop")
}

func workBufferCase6(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", ok))
	require.Error(t, x.buf.Start())
	err := x.buf.Register(fn("late", ok))
	require.ErrorIs(t, err, buffer.ErrRegistryClosed)
}

func workBufferCase7(t *testing.T) {
	x := setup(t, nil)
	x.start(t, fn("email", func(_ context.Context, m *buffer.Message) (any, error) {
		return map[string]any{"sent": m.MessageID, "attempt": m.AttemptCount}, nil
	}))
	e := enq(t, x.buf, "email", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.JSONEq(t, `{"sent":"`+e.MessageID+`","attempt":1}`, string(m.Result))
	require.Equal(t, 1, m.AttemptCount)
	require.NotNil(t, m.CompletedAt)
	require.Equal(t, m.CompletedAt.Add(24*time.Hour), *m.ExpiresAt)
}

func workBufferCase8(t *testing.T) {
	x := setup(t, nil)
	rec := newRecorder()
	x.start(t, fn("hook", func(_ context.Context, m *buffer.Message) (any, error) {
		if rec.add(m.MessageID) == 1 {
			return nil, &buffer.StatusError{StatusCode: 503}
		}
		return "ok", nil
	}))
	e := enq(t, x.buf, "hook", `{}`)
	m := waitState(t, x.buf, e.MessageID, contracts.BufferCompleted)
	require.Equal(t, 2, m.AttemptCount)
	require.Len(t, m.Errors, 1)
	require.Equal(t, "HTTP_503", m.Errors[0].Code)
	require.Equal(t, 1, m.Errors[0].AttemptNumber)
}

func workBufferCase9(t *testing.T) {
	x := setup(t, func(c *buffer.Config) { c.Concurrency = 1 })
	block := make(chan struct{})
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	for i := 0; i < 4; i++ {
		enq(t, x.buf, "email", `{}`, pri(contracts.BufferPriorityLow))
	}
	require.Eventually(t, func() bool {
		st, err := x.buf.Stats(context.Background())
		return err == nil && st.Queues["buffer.low"].Active == 1
	}, 5*time.Second, 10*time.Millisecond)
	st, err := x.buf.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, buffer.StateRunning, st.State)
	require.EqualValues(t, 4, st.Depth)
	require.Equal(t, 3, st.Queues["buffer.low"].Pending)
	require.Equal(t, []string{"email"}, st.Handlers)
	require.Equal(t, "CLOSED", st.Circuits[0].State)
	close(block)
}

// TestMessageHandler is the seed's "MessageHandler" list.
func TestMessageHandler(t *testing.T) {
	t.Run("should create handler with correct properties", func(t *testing.T) {
		var h buffer.Handler = buffer.Base{Name: "email"}
		require.Equal(t, "email", h.Type())
		require.Equal(t, buffer.DefaultTimeout, h.Timeout())
		require.Equal(t, buffer.Unset, h.MaxRetries(), "unset: the buffer's default (DefaultMaxRetries, BUFFER_MAX_RETRIES) applies")
		require.True(t, h.Idempotent())
		h = buffer.Base{Name: "x", TimeoutAfter: time.Second, Retries: -1, NotIdempotent: true}
		require.Equal(t, time.Second, h.Timeout())
		require.Equal(t, 0, h.MaxRetries())
		require.False(t, h.Idempotent())
	})
	t.Run("should throw if process not implemented", func(t *testing.T) {
		_, err := buffer.Base{Name: "x"}.Process(context.Background(), &buffer.Message{})
		require.ErrorIs(t, err, buffer.ErrNotImplemented)
		require.False(t, buffer.Retryable(err), "an unimplemented handler is never retried")
	})
	t.Run("should validate payload", func(t *testing.T) {
		b := buffer.Base{Name: "x"}
		require.NoError(t, b.Validate(json.RawMessage(`{"a":1}`)))
		for _, p := range []string{``, `null`, `[1]`, `"s"`, `{"a":`} {
			var ve *buffer.ValidationError
			require.True(t, errors.As(b.Validate(json.RawMessage(p)), &ve), "payload %q", p)
			require.Equal(t, "payload", ve.Field)
		}
	})
	t.Run("should handle error with default behavior", func(t *testing.T) {
		b := buffer.Base{Name: "x"}
		cases := []struct {
			err   error
			retry bool
			code  string
		}{
			{&buffer.ValidationError{Field: "to", Reason: "missing"}, false, "INVALID_MESSAGE"},
			{errors.New("Invalid recipient"), false, "HANDLER_ERROR"},
			{&buffer.StatusError{StatusCode: 500}, true, "HTTP_500"},
			{&buffer.StatusError{StatusCode: 503}, true, "HTTP_503"},
			{&buffer.StatusError{StatusCode: 429}, true, "HTTP_429"},
			{&buffer.StatusError{StatusCode: 408}, true, "HTTP_408"},
			{&buffer.StatusError{StatusCode: 404}, false, "HTTP_404"},
			{&buffer.StatusError{StatusCode: 400}, false, "HTTP_400"},
			{errors.New("something odd"), true, "HANDLER_ERROR"},
		}
		for _, c := range cases {
			require.Equal(t, c.retry, b.OnError(c.err, &buffer.Message{}), "%v", c.err)
			require.Equal(t, c.code, buffer.ErrorCode(c.err), "%v", c.err)
		}
	})
}
