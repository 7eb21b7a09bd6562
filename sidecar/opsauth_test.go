package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The operator routes refuse a browser's cross-origin write even with the
// monitoring credentials (a browser resends cached basic credentials:
// without this a page the operator visits could pause queues or write
// keys), and let same-origin browser writes and non-browser clients
// through. /monitoring cannot be framed, and its audit line logs the
// status a refused write was answered.
func TestOperatorRoutesRefuseCrossOriginWrites(t *testing.T) {
	env := realRedisEnv(t)
	env["MONITORING_USER"], env["MONITORING_PASSWORD"] = "ops", "ops-password"
	var logs bytes.Buffer
	m, base := startMainLogging(t, env, slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs}, nil)))
	host := strings.TrimPrefix(base, "http://")
	do := func(method, path, body string, header map[string]string, auth bool) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain") // a form or fetch "simple request": no preflight
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if auth {
			req.SetBasicAuth("ops", "ops-password")
		}
		return send(t, req)
	}
	evil := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	writes := []struct{ method, path, body string }{
		{"POST", "/monitoring/api/queues/low:pause", ""},
		{"POST", m.Config.NodeRedBasePath + "/redisSet", `{"key":"flowgate:ops:csrf","value":"x"}`},
		{"POST", m.Config.NodeRedBasePath + "/redisDelete", `{"key":"flowgate:ops:csrf"}`},
		{"PUT", "/v1/admin/availability/appointment-types/consult", `{}`},
	}
	for _, w := range writes {
		for _, h := range []map[string]string{evil, {"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "same-site"}} {
			status, body := do(w.method, w.path, w.body, h, true)
			require.Equal(t, http.StatusForbidden, status, "%s %s %v: %s", w.method, w.path, h, body)
			require.Contains(t, body, `"reason":"cross_origin"`)
		}
	}
	require.ErrorIs(t, m.redis.Client.Get(t.Context(), "flowgate:ops:csrf").Err(), redis.Nil, "nothing written")
	paused, err := m.redis.Client.SIsMember(t.Context(), "asynq:queues:paused", "low").Result()
	require.NoError(t, err)
	require.False(t, paused, "nothing paused")

	// The same origin (the Asynqmon UI's own fetches), and clients that
	// are no browser, write as before.
	for _, h := range []map[string]string{{"Sec-Fetch-Site": "same-origin"}, {"Origin": "http://" + host}, nil} {
		status, body := do("POST", "/monitoring/api/queues/low:pause", "", h, true)
		require.Equal(t, http.StatusNoContent, status, "%v: %s", h, body)
		status, body = do("POST", "/monitoring/api/queues/low:resume", "", h, true)
		require.Equal(t, http.StatusNoContent, status, "%v: %s", h, body)
	}
	status, body := do("POST", m.Config.NodeRedBasePath+"/redisSet", `{"key":"flowgate:ops:ok","value":"x"}`, nil, true)
	require.Equal(t, http.StatusOK, status, body)

	// The audit line of a write refused for its credentials says 401.
	status, _ = do("POST", "/monitoring/api/queues/low:pause", "", nil, false)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Regexp(t, `"msg":"monitoring write","method":"POST","path":"/monitoring/api/queues/low:pause","status":401,"user":""`, logs.String())
	require.NotRegexp(t, `"msg":"monitoring write"[^\n]*"status":200`, logs.String())

	// No page may frame the monitoring UI.
	req, _ := http.NewRequest(http.MethodGet, base+"/monitoring", nil)
	req.SetBasicAuth("ops", "ops-password")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	require.Equal(t, "frame-ancestors 'none'", resp.Header.Get("Content-Security-Policy"))
}
