package test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
)

// bufferCall sends one /api/buffer request with the test token and
// decodes a JSON answer into out (when not nil).
func bufferCall(t *testing.T, p *proc, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, p.Base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+flowgatetest.TestBufferToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// BUFFER_MAX_RETRIES was ignored (the built-in handlers answered 3 for
// "unset"): with BUFFER_MAX_RETRIES=0 a message of webhook.forward whose
// target answers 503 shows maxRetries 0 and goes to the dead-letter queue
// after its one attempt; a message's own maxRetries still wins.
func TestBufferMaxRetriesSettingThroughBinary(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	posts := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts[r.Header.Get("X-Buffer-Message-Id")]++
		mu.Unlock()
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	t.Cleanup(target.Close)
	db := newTestRedis(t)
	p := startFlowgate(t, map[string]string{
		"REDIS_URL": db.URL(), "HMAC_SECRET": "e2e-buffer-hmac-secret-0123456789", "BOOKING_AUTH_SECRET": "e2e-buffer-booking-secret-012345",
		"OUTBOUND_HMAC_SECRET": "e2e-buffer-outbound-secret-0123", "BUFFER_MAX_RETRIES": "0", "BUFFER_WEBHOOK_URL": target.URL,
		"BUFFER_BACKOFF_BASE": "50ms", "BUFFER_BACKOFF_MAX": "100ms", "BUFFER_CIRCUIT_THRESHOLD": "100",
	})

	var unset, own contracts.BufferEnqueueResponse
	require.Equal(t, http.StatusAccepted, bufferCall(t, p, "POST", "/api/buffer/enqueue",
		map[string]any{"type": "webhook.forward", "payload": map[string]any{"n": 1}}, &unset))
	require.Equal(t, http.StatusAccepted, bufferCall(t, p, "POST", "/api/buffer/enqueue",
		map[string]any{"type": "webhook.forward", "payload": map[string]any{"n": 2}, "maxRetries": 2}, &own))

	for _, c := range []struct {
		id      string
		retries int
		posts   int
	}{{unset.MessageID, 0, 1}, {own.MessageID, 2, 3}} {
		var m contracts.BufferMessage
		require.Eventually(t, func() bool {
			bufferCall(t, p, "GET", "/api/buffer/messages/"+c.id, nil, &m)
			return m.State == contracts.BufferDLQ
		}, 15*time.Second, 50*time.Millisecond, "message %s never reached the DLQ", c.id)
		require.Equal(t, c.retries, m.MaxRetries, "maxRetries of %s", c.id)
		mu.Lock()
		n := posts[c.id]
		mu.Unlock()
		require.Equal(t, c.posts, n, "attempts of %s", c.id)
	}
}
