package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// hostileEnv is what a developer's shell may hold after README's Going
// live (`set -a; . ./.env`) or from another deployment, made so that any
// test or binary that picked one of them up would fail: a Redis where
// nothing listens, a Cloud9 that does not answer, CLOUD9_SIMULATOR=false
// (no simulator), secrets too short to be accepted, invalid settings, and
// compose's own variables.
var hostileEnv = map[string]string{
	"REDIS_URL":             "redis://127.0.0.1:1/0",
	"REDIS_CLUSTER_ADDRS":   "127.0.0.1:1",
	"REDIS_SENTINEL_MASTER": "hostile",
	"CLOUD9_ENDPOINT":       "http://127.0.0.1:1/hostile",
	"CLOUD9_CLIENT_ID":      "hostile",
	"CLOUD9_USERNAME":       "hostile",
	"CLOUD9_PASSWORD":       "hostile",
	"CLOUD9_SIMULATOR":      "false",
	"BOOKING_AUTH_SECRET":   "short",
	"HMAC_SECRET":           "short",
	"BUFFER_API_TOKEN":      "short",
	"MONITORING_AUTH":       "open",
	"MONITORING_PASSWORD":   "hostile-monitoring-password",
	"FLOWGATE_ADDR":         "not-an-address",
	"FLOWGATE_URL":          "http://127.0.0.1:1",
	"LOG_FORMAT":            "xml",
	"COMPOSE_FILE":          "/nonexistent/docker-compose.yml",
	"COMPOSE_PROJECT_NAME":  "hostile",
}

// setHostileEnv sets hostileEnv in the test process for t's duration.
func setHostileEnv(t *testing.T) {
	t.Helper()
	for k, v := range hostileEnv {
		t.Setenv(k, v)
	}
}

// A child of a test starts from Env: nothing of hostileEnv (nor any other
// flowgate setting) reaches it; what a program needs to run (PATH, HOME)
// does.
func TestChildEnvIsHermetic(t *testing.T) {
	setHostileEnv(t)
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("HOME", "/home/test")
	env := flowgatetest.Env()
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, bad := hostileEnv[name]; bad {
			t.Errorf("Env passes %s on to children", kv)
		}
	}
	for _, want := range []string{"PATH=/usr/bin:/bin", "HOME=/home/test"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env lacks %s: %v", want, env)
		}
	}
}

// A binary the harness starts on a real Redis runs as the test says,
// whatever the test process's environment holds: hostileEnv would stop it
// at once (an invalid address, short secrets, no simulator, a dead Redis).
func TestBinaryStartIgnoresAHostileEnvironment(t *testing.T) {
	setHostileEnv(t)
	db := redistest.New(t)
	p := startFlowgate(t, withSecrets(map[string]string{"REDIS_URL": db.URL()}))
	if status, body := p.Get("/readyz"); status != 200 {
		t.Fatalf("/readyz: %d %s", status, body)
	}
	if len(p.LogLines("CLOUD9 SANDBOX SIMULATOR")) == 0 {
		t.Errorf("the harness's CLOUD9_SIMULATOR=true did not choose the simulator:\n%s", p.Logs.String())
	}
	if out, code := runBinary(t, flowgateBinary(t), "", "-help"); code != 0 || !strings.Contains(out, "CLOUD9_SIMULATOR") {
		t.Fatalf("flowgate -help: exit %d\n%s", code, out)
	}
}
