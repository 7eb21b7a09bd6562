package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

var testSecrets = map[string]string{
	"BOOKING_AUTH_SECRET": "e2e-booking-secret-0123456789abcdef",
	"HMAC_SECRET":         "e2e-hmac-secret-0123456789abcdef",
	// OUTBOUND_HMAC_SECRET signs what flowgate sends (booking events,
	// webhook.forward, the DLQ alert, declared handlers).
	"OUTBOUND_HMAC_SECRET": "e2e-outbound-secret-0123456789ab",
	"BUFFER_API_TOKEN":     "e2e-buffer-token-0123456789abcdef",
}

func withSecrets(env map[string]string) map[string]string {
	for k, v := range testSecrets {
		env[k] = v
	}
	return env
}

// The binary on embedded and on real Redis: every operational endpoint,
// then SIGTERM and a clean exit within 10 s.
func TestBinaryEndpointsAndGracefulStop(t *testing.T) {
	db := redistest.New(t)
	for name, env := range map[string]map[string]string{
		"embedded": {},
		"real":     withSecrets(map[string]string{"REDIS_URL": db.URL()}),
	} {
		t.Run(name, func(t *testing.T) {
			p := startFlowgate(t, env)
			t.Logf("cold start to ready (%s Redis): %s (exec → /readyz 200)", name, p.ReadyIn)
			if status, body := p.Get("/healthz"); status != 200 || !strings.Contains(body, `"ok"`) {
				t.Fatalf("/healthz: %d %s", status, body)
			}
			if status, body := p.Get("/readyz"); status != 200 || !strings.Contains(body, `"ready":true`) {
				t.Fatalf("/readyz: %d %s", status, body)
			}
			waitMetrics(t, p, "asynq_queue_size", "http_requests_total", "http_request_duration_seconds", "flowgate_asynq_probe_last_success_timestamp_seconds")
			status, body := p.Get("/monitoring/")
			if status != 200 || !strings.Contains(body, "<html") {
				t.Fatalf("/monitoring/: %d %.200s", status, body)
			}
			status, body = p.Get("/monitoring/api/queues")
			var q struct {
				Queues []map[string]any `json:"queues"`
			}
			if status != 200 || json.Unmarshal([]byte(body), &q) != nil || len(q.Queues) != 4 {
				t.Fatalf("/monitoring/api/queues: %d %.300s", status, body)
			}
			if name == "embedded" && len(p.LogLines("EMBEDDED REDIS")) != 1 {
				t.Fatalf("embedded mode must be announced loudly once")
			}
			code, took := p.Stop()
			if code != 0 || took > 10*time.Second {
				t.Fatalf("SIGTERM: exit %d after %s", code, took)
			}
			t.Logf("SIGTERM → exit 0 in %s", took)
			if len(p.LogLines("flowgate stopped")) != 1 {
				t.Fatalf("no clean-stop log line")
			}
		})
	}
}

func waitMetrics(t *testing.T, p *proc, names ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := p.Get("/metrics")
		missing := ""
		for _, n := range names {
			if !strings.Contains(body, "\n"+n) {
				missing = n
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s:\n%.3000s", missing, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A wrong setting exits with status 2 and one line naming the variable.
func TestBinaryBadConfigExits2(t *testing.T) {
	bin := flowgateBinary(t)
	for variable, value := range map[string]string{
		"REDIS_URL": "http://nope", "ASYNQ_SERVERS": "-1", "HTTP_SHUTDOWN_TIMEOUT": "-3s", "LOG_FORMAT": "yaml",
	} {
		out, code := runBinary(t, bin, variable+"="+value)
		if code != 2 || !strings.Contains(out, variable) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%s=%s: exit %d, output %q", variable, value, code, out)
		}
	}
	out, code := runBinary(t, bin, "", "-help")
	if code != 0 || !strings.Contains(out, "REDIS_CLUSTER_ADDRS") || !strings.Contains(out, "MAX_RETRY_ATTEMPTS") {
		t.Fatalf("-help: exit %d: %s", code, out)
	}
}

// Cold start to ready on real Redis, measured over several runs (logged,
// not asserted: the machine is shared).
func TestBinaryColdStart(t *testing.T) {
	db := redistest.New(t)
	var worst, total time.Duration
	const runs = 5
	for i := 0; i < runs; i++ {
		p := startFlowgate(t, withSecrets(map[string]string{"REDIS_URL": db.URL()}))
		total += p.ReadyIn
		if p.ReadyIn > worst {
			worst = p.ReadyIn
		}
		p.Stop()
	}
	t.Logf("cold start to ready with real Redis over %d runs: mean %s, worst %s", runs, total/runs, worst)
}

// flowgate on a 3-master Redis Cluster: ready, processes Asynq tasks (the
// probe on every queue) and runs a cron tick.
func TestBinaryOnRedisCluster(t *testing.T) {
	c := rediscluster.Start(t)
	p := startFlowgate(t, withSecrets(map[string]string{
		"REDIS_CLUSTER_ADDRS":    strings.Join(c.Addrs(), ","),
		"DLQ_RECONCILE_SCHEDULE": "@every 1s",
	}))
	waitMetrics(t, p,
		`flowgate_asynq_probe_last_success_timestamp_seconds{queue="critical"}`,
		`flowgate_asynq_probe_last_success_timestamp_seconds{queue="low"}`,
		`flowgate_cron_last_run_timestamp_seconds{job="dlq_reconcile"}`)
	if code, took := p.Stop(); code != 0 {
		t.Fatalf("exit %d after %s", code, took)
	}
}

// TestBinaryJSONLogsOnly: with LOG_FORMAT=json every line flowgate writes
// is one JSON object — also what libraries print on their own, such as
// go-redis' "failed to dial" when Redis is gone (those
// were plain-text lines in the JSON stream).
func TestBinaryJSONLogsOnly(t *testing.T) {
	srv := rediscluster.StartServer(t)
	p := startFlowgate(t, withSecrets(map[string]string{"REDIS_URL": srv.URL(), "LOG_FORMAT": "json"}))
	srv.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for len(p.LogLines("failed to dial")) == 0 && time.Now().Before(deadline) {
		p.Get("/readyz")
		p.Get("/monitoring/api/queues")
		time.Sleep(200 * time.Millisecond)
	}
	if len(p.LogLines("failed to dial")) == 0 {
		t.Fatalf("go-redis never logged its dial failure:\n%s", p.Logs.String())
	}
	p.Stop()
	lines := 0
	for _, line := range strings.Split(p.Logs.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		lines++
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("not a JSON line: %q", line)
		}
	}
	if lines == 0 {
		t.Fatal("no log lines")
	}
	for _, l := range p.LogLines("failed to dial") {
		if !strings.Contains(l, `"component":"go-redis"`) {
			t.Errorf("go-redis' line is not tagged: %s", l)
		}
	}
}

// A Redis whose data was written with one shard count refuses a flowgate
// with another: exit 2, one line naming REDIS_SHARDS, before it could
// serve without seeing the tasks already there.
func TestBinaryRefusesAnotherShardCount(t *testing.T) {
	db := redistest.New(t)
	p := startFlowgate(t, withSecrets(map[string]string{"REDIS_URL": db.URL()}))
	if code, _ := p.Stop(); code != 0 {
		t.Fatalf("first start (one shard) exited %d", code)
	}
	cmd := exec.Command(flowgateBinary(t))
	cmd.Env = flowgatetest.Env()
	for k, v := range withSecrets(map[string]string{"REDIS_URL": db.URL(), "REDIS_SHARDS": "6",
		"MONITORING_AUTH": "none", "CLOUD9_SIMULATOR": "true", "FLOWGATE_ADDR": flowgatetest.FreeAddr(t)}) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "REDIS_SHARDS=1") {
		t.Fatalf("REDIS_SHARDS=6 on one shard's data: %v\n%s", err, out)
	}
}

// Issue 34: redisDelete of the REDIS_SHARDS marker was the way to start
// over six shards' data with one shard, hiding it. The ops routes refuse
// it (403 protected_key); the marker lost all the same (deleted by hand),
// a start with another count exits 2 naming the data's count, and one
// with that count starts and records it again.
func TestBinaryMarkerDeletionAttack(t *testing.T) {
	db := redistest.New(t)
	env := withSecrets(map[string]string{"REDIS_URL": db.URL(), "REDIS_SHARDS": "6",
		"MONITORING_USER": "ops", "MONITORING_PASSWORD": "ops-password-0123456789"})
	p := startFlowgate(t, env)
	items := make([]contracts.CreateTaskRequest, 24)
	for i := range items {
		items[i] = contracts.CreateTaskRequest{QueueID: fmt.Sprintf("3a7c0000-0000-4000-8000-%012d", i), EncounterID: fmt.Sprintf("enc-%d", i)}
	}
	body, err := json.Marshal(contracts.BatchCreateRequest{Tasks: items})
	require.NoError(t, err)
	r, err := newAPI(t, p, newSigner()).roundTrip(http.MethodPost, "/queue", body)
	require.NoError(t, err)
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, r.Status, "%s", r.Body)

	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/redisDelete", `{"key":"flowgate:redis-shards"}`},
		{http.MethodDelete, "/redisDelete?key=flowgate%3Aredis-shards", ""},
		{http.MethodPost, "/redisSet", `{"key":"flowgate:redis-shards","value":1}`},
	} {
		req, err := http.NewRequest(c.method, p.Base+"/chord/ortho-prd"+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("ops", "ops-password-0123456789")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e errorEnvelope
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		_ = resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s", req.Method, req.URL)
		require.Equal(t, contracts.CodeProtectedKey, e.Error.Code)
	}
	ctx := context.Background()
	require.Equal(t, "6", db.Client.Get(ctx, "flowgate:redis-shards").Val())

	require.NoError(t, db.Client.Del(ctx, "flowgate:redis-shards").Err(), "lost by hand")
	if code, _ := p.Stop(); code != 0 {
		t.Fatalf("stop exited %d", code)
	}
	cmd := exec.Command(flowgateBinary(t))
	cmd.Env = flowgatetest.Env()
	for k, v := range env {
		if k != "REDIS_SHARDS" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	// Started by hand, so without what flowgatetest.Start adds: the
	// simulator is chosen here as Start chooses it on a real Redis.
	cmd.Env = append(cmd.Env, "REDIS_SHARDS=1", "CLOUD9_SIMULATOR=true", "FLOWGATE_ADDR="+flowgatetest.FreeAddr(t))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "flowgate:redis-shards is missing") ||
		!strings.Contains(string(out), "REDIS_SHARDS=6 (flowgate:{tasks:") {
		t.Fatalf("REDIS_SHARDS=1 over six shards' data without the marker: %v\n%s", err, out)
	}
	require.Zero(t, db.Client.Exists(ctx, "flowgate:redis-shards").Val(), "a refused start records nothing")
	startFlowgate(t, env)
	require.Equal(t, "6", db.Client.Get(ctx, "flowgate:redis-shards").Val(), "recorded again")
}
