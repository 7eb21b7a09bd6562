package taskhttp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// hungReplay is a replay store that answers nothing until the request's
// context ends, like a Redis stopped with SIGSTOP; it records how long each
// check was given.
type hungReplay struct {
	mu     sync.Mutex
	budget []time.Duration
}

func (g *hungReplay) Seen(ctx context.Context, _ string, _ time.Duration) (bool, error) {
	if d, ok := ctx.Deadline(); ok {
		g.mu.Lock()
		g.budget = append(g.budget, time.Until(d))
		g.mu.Unlock()
	}
	<-ctx.Done()
	return false, ctx.Err()
}

func (g *hungReplay) budgets() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.budget...)
}

// The signature's replay check runs within RequestTimeout on every route,
// the claim included: with the replay store hung, a long-polling claim
// answers 503 after RequestTimeout, not after the whole long-poll budget
// (RequestTimeout + 20 s, which once covered the claim's Auth too).
func TestReplayCheckWithinRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	guard := &hungReplay{}
	v, err := signature.New(signature.Config{Secret: taskhttptest.Secret, Replay: guard})
	require.NoError(t, err)
	b := setup(t, func(c *taskhttp.Config) {
		c.Auth, c.RequestTimeout = v.Middleware(), timeout
	})

	for _, req := range []struct{ method, path, body string }{
		{"POST", "/queue/claim", `{"worker_id":"vm-1","wait_ms":5000}`},
		{"POST", "/queue/claim", `{"worker_id":"vm-2"}`},
		{"GET", "/queue/stats", ""},
		{"POST", "/queue", `{"encounter_id":"enc-1"}`},
	} {
		var body []byte
		if req.body != "" {
			body = []byte(req.body)
		}
		r := b.srv.Do(req.method, req.path, body)
		env := r.Error(t, 503, contracts.CodeUnavailable)
		require.Equal(t, signature.ReasonReplayUnavailable, env.Error.Details["reason"], req.path)
		require.Less(t, r.Elapsed, timeout+time.Second, "%s %s answered after %s", req.method, req.path, r.Elapsed)
	}
	budgets := guard.budgets()
	require.Len(t, budgets, 4)
	for _, d := range budgets {
		require.LessOrEqual(t, d, timeout, "the replay check's budget")
	}
	st, err := b.ledger.Stats(b.ctx) // the ledger was never asked

	require.NoError(t, err)
	require.Zero(t, st.Total)
}

// A claim's long poll still gets wait_ms on top of RequestTimeout, counted
// from the request's start.
func TestClaimLongPollKeepsItsWait(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *taskhttp.Config) { c.RequestTimeout = 300 * time.Millisecond })
	r := b.srv.Do("POST", "/queue/claim", []byte(`{"worker_id":"vm-1","wait_ms":800}`))
	require.Equal(t, 204, r.Status, string(r.Body))
	require.GreaterOrEqual(t, r.Elapsed, 800*time.Millisecond)
	require.Less(t, r.Elapsed, 800*time.Millisecond+300*time.Millisecond+time.Second)
}
