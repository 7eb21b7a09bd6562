package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide date-header updater and go-redis' pool
		// reaper of a client closed elsewhere are started once per process.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// startMain runs a Main on a random port and returns it with its base URL.
func startMain(t *testing.T, env map[string]string) (*Main, string) {
	t.Helper()
	return startMainLogging(t, env, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// startMainLogging is startMain with the Main logging to logger.
func startMainLogging(t *testing.T, env map[string]string, logger *slog.Logger) (*Main, string) {
	t.Helper()
	return startMainAt(t, env, logger, nil)
}

// startMainAt is startMainLogging with the Main's clock now (nil: the
// real one).
func startMainAt(t *testing.T, env map[string]string, logger *slog.Logger, now func() time.Time) (*Main, string) {
	t.Helper()
	env["FLOWGATE_ADDR"] = "127.0.0.1:0"
	if env["MONITORING_USER"] == "" && env["MONITORING_AUTH"] == "" {
		env["MONITORING_AUTH"] = "none" // Asynqmon open: tests read /monitoring without credentials
	}
	if _, own := env["CLOUD9_SIMULATOR"]; !own && env["CLOUD9_ENDPOINT"] == "" && env["REDIS_URL"]+env["REDIS_CLUSTER_ADDRS"]+env["REDIS_SENTINEL_ADDRS"] != "" {
		env["CLOUD9_SIMULATOR"] = "true" // a real Redis books into the sandbox simulator only on purpose
	}
	if _, ok := env["ASYNQ_SHUTDOWN_TIMEOUT"]; !ok {
		env["ASYNQ_SHUTDOWN_TIMEOUT"] = "1s"
	}
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	m := NewMain(cfg, logger)
	if now != nil {
		m.Now = now
	}
	require.NoError(t, m.Run(context.Background()))
	t.Cleanup(func() { _ = m.Close() })
	return m, "http://" + m.Addr()
}

func get(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func realRedisEnv(t *testing.T) map[string]string { return redisEnv(redistest.New(t)) }

// redisEnv is the settings of a Main on db, booking into the sandbox
// simulator (CLOUD9_SIMULATOR=true: a test that sets CLOUD9_* deletes it).
func redisEnv(db *redistest.DB) map[string]string {
	return map[string]string{
		"REDIS_URL":           db.URL(),
		"CLOUD9_SIMULATOR":    "true",
		"BOOKING_AUTH_SECRET": strings.Repeat("b", 32),
		"HMAC_SECRET":         strings.Repeat("h", 32),
		"BUFFER_API_TOKEN":    strings.Repeat("t", 32),
	}
}

func TestMainLifecycleEmbeddedAndReal(t *testing.T) {
	for name, env := range map[string]map[string]string{"embedded": {}, "real": realRedisEnv(t)} {
		t.Run(name, func(t *testing.T) {
			m, base := startMain(t, env)
			status, body := get(t, base+"/healthz")
			require.Equal(t, 200, status, body)
			status, body = get(t, base+"/readyz")
			require.Equal(t, 200, status, body)
			require.Eventually(t, func() bool {
				_, metrics := get(t, base+"/metrics")
				return strings.Contains(metrics, "asynq_queue_size") &&
					strings.Contains(metrics, "http_requests_total") &&
					strings.Contains(metrics, `flowgate_asynq_probe_last_success_timestamp_seconds{queue="critical"}`)
			}, 10*time.Second, 50*time.Millisecond, "probe tasks processed and metrics exported")
			status, body = get(t, base+"/monitoring/api/queues")
			require.Equal(t, 200, status)
			var queues struct {
				Queues []struct {
					Queue string `json:"queue"`
				} `json:"queues"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &queues))
			require.Len(t, queues.Queues, 4)
			require.NoError(t, m.Close())
			require.NoError(t, m.Close(), "second Close is a no-op")
		})
	}
}

func TestReadyzFailsWhenRedisDown(t *testing.T) {
	srv := rediscluster.StartServer(t)
	_, base := startMain(t, map[string]string{
		"REDIS_URL": srv.URL(), "BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": strings.Repeat("h", 32), "BUFFER_API_TOKEN": strings.Repeat("t", 32),
	})
	status, _ := get(t, base+"/readyz")
	require.Equal(t, 200, status)
	srv.Kill()
	status, body := get(t, base+"/readyz")
	require.Equal(t, 503, status)
	var r readiness
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.False(t, r.Ready)
	require.Equal(t, "redis_unavailable", r.Reason)
	require.Equal(t, "unavailable", r.Checks["redis"])
	requireNoInternals(t, body, srv.Addr())
	status, _ = get(t, base+"/healthz")
	require.Equal(t, 200, status, "liveness does not depend on Redis")
	srv.Start()
	require.Eventually(t, func() bool { s, _ := get(t, base+"/readyz"); return s == 200 }, 10*time.Second, 100*time.Millisecond)
}

func TestReadyzFalseOnceClosing(t *testing.T) {
	m, base := startMain(t, map[string]string{"READINESS_DRAIN_DELAY": "300ms"})
	done := make(chan struct{})
	go func() { _ = m.Close(); close(done) }()
	require.Eventually(t, func() bool { s, _ := get(t, base+"/readyz"); return s == 503 }, time.Second, 10*time.Millisecond)
	<-done
}

func TestMonitoringAuthAndReadOnly(t *testing.T) {
	_, base := startMain(t, map[string]string{
		"MONITORING_USER": "ops", "MONITORING_PASSWORD": "s3cret-pass", "MONITORING_READONLY": "true",
	})
	status, _ := get(t, base+"/monitoring/api/queues")
	require.Equal(t, 401, status)
	auth := "Basic " + basic("ops", "wrong")
	status, _ = get(t, base+"/monitoring/api/queues", "Authorization", auth)
	require.Equal(t, 401, status)
	auth = "Basic " + basic("ops", "s3cret-pass")
	status, body := get(t, base+"/monitoring/", "Authorization", auth)
	require.Equal(t, 200, status)
	require.Contains(t, body, "<html")
	req, _ := http.NewRequest(http.MethodDelete, base+"/monitoring/api/queues/default", nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "read-only Asynqmon refuses writes")
}

func basic(u, p string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(u, p)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestMonitoringUnknownQueueIs404: Asynqmon answers 500 with asynq's error
// text for a queue that does not exist; flowgate answers 404 with its
// envelope and keeps the text in the log (found by the bad-input drill).
func TestMonitoringUnknownQueueIs404(t *testing.T) {
	_, base := startMain(t, map[string]string{"MONITORING_USER": "ops", "MONITORING_PASSWORD": "s3cret-pass"})
	auth := "Basic " + basic("ops", "s3cret-pass")
	for _, path := range []string{"/monitoring/api/queues/nosuchqueue", "/monitoring/api/queues/nosuchqueue/pending_tasks"} {
		status, body := get(t, base+path, "Authorization", auth)
		require.Equal(t, http.StatusNotFound, status, "%s: %s", path, body)
		require.Contains(t, body, `"code":"not_found"`)
		require.NotContains(t, body, "asynq")
		require.NotContains(t, body, "does not exist")
	}
	status, body := get(t, base+"/monitoring/api/queues", "Authorization", auth)
	require.Equal(t, http.StatusOK, status, body)
}
