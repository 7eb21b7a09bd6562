package signature_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fasthttp starts one process-wide goroutine that keeps the Date header
// fresh the first time a Fiber app serves a request; it never stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}

var (
	testSecret = []byte("test-secret-0123456789abcdef")
	testNow    = time.Unix(1_700_000_000, 0)
	ackBody    = []byte(`{"queue_id":"3f0c1d2e-0000-4000-8000-000000000001","encounter_id":"e1","experityActions":{}}`)
)

func fixedClock() time.Time { return testNow }

// memGuard is an in-process ReplayGuard for tests that are not about Redis.
type memGuard struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (g *memGuard) Seen(_ context.Context, sig string, _ time.Duration) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	was := g.seen[sig]
	g.seen[sig] = true
	return was, nil
}

var noopGuard = signature.ReplayGuardFunc(func(context.Context, string, time.Duration) (bool, error) {
	return false, nil
})

// newHMAC is a verifier on the fixed clock with the given guard (an
// in-memory one when nil).
func newHMAC(t testing.TB, guard signature.ReplayGuard) *signature.Verifier {
	t.Helper()
	if guard == nil {
		guard = &memGuard{}
	}
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: guard, Now: fixedClock})
	require.NoError(t, err)
	return v
}

// signed returns the header lookup of a request signed at ts.
func signed(secret []byte, ts time.Time, body []byte) http.Header {
	req, _ := http.NewRequest(http.MethodPost, "http://flowgate/ack", nil)
	signature.SignRequest(req, secret, ts, body)
	return req.Header
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// requireRefused checks err is a *contracts.Error with code and reason, a
// message, and no trace of the secrets.
func requireRefused(t testing.TB, err error, code contracts.Code, reason string) {
	t.Helper()
	var e *contracts.Error
	require.True(t, errors.As(err, &e), "want *contracts.Error, got %T %v", err, err)
	require.Equal(t, code, e.Code, e.Error())
	require.Equal(t, reason, e.Details["reason"], e.Error())
	require.NotEmpty(t, e.Message)
	require.NotContains(t, e.Error(), string(testSecret))
	require.NotContains(t, e.Error(), testToken)
}

// refusal is requireRefused returning the *contracts.Error, for tests that
// check more of it.
func refusal(t testing.TB, err error, code contracts.Code, reason string) *contracts.Error {
	t.Helper()
	requireRefused(t, err, code, reason)
	var e *contracts.Error
	require.ErrorAs(t, err, &e)
	return e
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
