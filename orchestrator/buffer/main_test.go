package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/test/redistest"
)

// bundle is one test's buffer on its own Redis database.
type bundle struct {
	db  *redistest.DB
	buf *buffer.Buffer
	cfg buffer.Config
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setup leases a database and builds a stopped buffer; mod adjusts the
// config. Backoffs are shortened so retry tests run in well under a second.
func setup(t testing.TB, mod func(*buffer.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	cfg := buffer.Config{
		ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 5, ShutdownTimeout: 2 * time.Second,
		DelayedCheck: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond, DepthRefresh: time.Millisecond,
		Backoff: buffer.Backoff{Base: 50 * time.Millisecond, Multiplier: 2, Max: 200 * time.Millisecond},
		Logger:  quiet(),
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := buffer.New(cfg)
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	return &bundle{db: db, buf: b, cfg: cfg}
}

func (x *bundle) start(t *testing.T, hs ...buffer.Handler) {
	t.Helper()
	for _, h := range hs {
		require.NoError(t, x.buf.Register(h))
	}
	require.NoError(t, x.buf.Start())
}

// fn is a handler of type typ running f.
func fn(typ string, f func(ctx context.Context, m *buffer.Message) (any, error)) buffer.Func {
	return buffer.Func{Base: buffer.Base{Name: typ, TimeoutAfter: 5 * time.Second}, Fn: f}
}

func enq(t *testing.T, b *buffer.Buffer, typ string, payload string, mod ...func(*contracts.BufferEnqueueRequest)) buffer.Enqueued {
	t.Helper()
	req := contracts.BufferEnqueueRequest{Type: typ, Payload: json.RawMessage(payload)}
	for _, m := range mod {
		m(&req)
	}
	e, err := b.Enqueue(context.Background(), req)
	require.NoError(t, err)
	return e
}

func pri(p contracts.BufferPriority) func(*contracts.BufferEnqueueRequest) {
	return func(r *contracts.BufferEnqueueRequest) { r.Priority = &p }
}

// waitState waits until the message reaches state.
func waitState(t *testing.T, b *buffer.Buffer, id string, state contracts.BufferState) *buffer.Message {
	t.Helper()
	var last *buffer.Message
	require.Eventually(t, func() bool {
		m, err := b.Get(context.Background(), id)
		if err != nil {
			return false
		}
		last = m
		return m.State == state
	}, 10*time.Second, 10*time.Millisecond, "message %s never reached %s (last %+v)", id, state, last)
	return last
}

func code(err error) contracts.Code { return contracts.ErrorCode(err) }

func details(t *testing.T, err error) map[string]any {
	t.Helper()
	var e *contracts.Error
	require.True(t, errors.As(err, &e), "not a contracts error: %v", err)
	return e.Details
}

// recorder counts calls per message id.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int
	order []string
}

func newRecorder() *recorder { return &recorder{calls: map[string]int{}} }

func (r *recorder) add(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[id]++
	r.order = append(r.order, id)
	return r.calls[id]
}

func (r *recorder) snapshot() (map[string]int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.calls))
	for k, v := range r.calls {
		m[k] = v
	}
	return m, append([]string(nil), r.order...)
}
