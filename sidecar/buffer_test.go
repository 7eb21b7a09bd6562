package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// The token is required with a real Redis.
func TestBufferTokenRequiredWithRealRedis(t *testing.T) {
	_, err := LoadConfig(envOf(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0",
		"BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": strings.Repeat("h", 32), "MONITORING_AUTH": "none", "CLOUD9_SIMULATOR": "true"}))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "BUFFER_API_TOKEN", ce.Var)
	_, err = LoadConfig(envOf(map[string]string{"BUFFER_API_TOKEN": "short"}))
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "BUFFER_API_TOKEN", ce.Var)
}

// The buffer runs inside flowgate, in both Redis modes: a message enqueued
// over HTTP completes, a wrong token is refused, the metrics are exported.
func TestBufferEndToEndEmbeddedAndReal(t *testing.T) {
	for name, env := range map[string]map[string]string{"embedded": {}, "real": realRedisEnv(t)} {
		t.Run(name, func(t *testing.T) {
			env["BUFFER_BENCH_HANDLERS"] = "true"
			m, base := startMain(t, env)
			tok := m.Config.Buffer.APIToken
			require.GreaterOrEqual(t, len(tok), 16, "embedded mode generates one")
			status, body := post(t, base+"/api/buffer/enqueue", `{"type":"noop","payload":{}}`, strings.Repeat("x", len(tok)))
			require.Equal(t, 401, status, body)
			status, body = post(t, base+"/api/buffer/enqueue", `{"type":"sse.emit","messageId":"m-1","payload":{"channel":"c","event":"e","data":1}}`, tok)
			require.Equal(t, 202, status, body)
			require.Eventually(t, func() bool {
				_, b := getAuth(t, base+"/api/buffer/messages/m-1", tok)
				return strings.Contains(b, `"state":"completed"`)
			}, 10*time.Second, 20*time.Millisecond)
			status, body = post(t, base+"/api/buffer/enqueue", `{"type":"fax","payload":{}}`, tok)
			require.Equal(t, 400, status)
			require.Contains(t, body, `"HANDLER_NOT_FOUND"`)
			_, metrics := get(t, base+"/metrics")
			for _, s := range []string{"flowgate_buffer_queue_depth", `flowgate_buffer_events_total{event="completed",type="sse.emit"} 1`, "buffer_flowgate_dlq_size"} {
				require.Contains(t, metrics, s)
			}
		})
	}
}

func getAuth(t *testing.T, url, tok string) (int, string) {
	return get(t, url, "Authorization", "Bearer "+tok)
}

// The DLQ alert is one POST signed like flowgate's other outgoing POSTs:
// hex HMAC-SHA256(OUTBOUND_HMAC_SECRET, X-Timestamp + "." + body).
func TestBufferDLQAlertSignedPost(t *testing.T) {
	secret := strings.Repeat("o", 32)
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer srv.Close()
	m := &Main{Config: Config{HMACSecret: strings.Repeat("h", 32), OutboundSecret: secret}}
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	m.Now = func() time.Time { return at }
	a := &dlqAlerter{url: srv.URL, send: m.outboundSender(srv.Client()), now: m.Now}
	require.NoError(t, a.DLQAlert(context.Background(), 101, 100))
	r, body := <-got, <-bodies
	require.JSONEq(t, `{"event":"buffer.dlq_threshold","count":101,"threshold":100,"at":"2026-11-23T09:00:00Z"}`, string(body))
	ts := r.Header.Get("X-Timestamp")
	require.Equal(t, strconv.FormatInt(at.Unix(), 10), ts)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	require.Equal(t, hex.EncodeToString(mac.Sum(nil)), r.Header.Get("X-Signature"))
}
