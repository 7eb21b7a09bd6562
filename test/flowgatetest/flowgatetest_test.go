package flowgatetest

import (
	"slices"
	"testing"
)

func TestHermeticKeepsOnlyTheSystemsVariables(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "TMPDIR=/t", "LC_ALL=C", "GOCOVERDIR=/c", "GORACE=halt_on_error=1",
		"REDIS_URL=redis://x:1/0", "CLOUD9_PASSWORD=p", "CLOUD9_SIMULATOR=true", "HMAC_SECRET=s", "FLOWGATE_ADDR=:1",
		"FLOWGATE_TEST_REDIS_URL=redis://t:1/0", "SOME_FUTURE_SETTING=x", "DOCKER_HOST=tcp://x"}
	got := Hermetic(in)
	want := []string{"PATH=/bin", "HOME=/h", "TMPDIR=/t", "LC_ALL=C", "GOCOVERDIR=/c", "GORACE=halt_on_error=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Hermetic = %v, want %v", got, want)
	}
}

func TestWithoutFlowgateDropsSettingsAndSecrets(t *testing.T) {
	in := []string{"PATH=/bin", "NODE_OPTIONS=--x", "npm_config_cache=/c", "FLOWGATE_URL=http://x", "FLOWGATE_TOKEN=t",
		"HMAC_SECRET=s", "REDIS_URL=redis://x", "CLOUD9_ENDPOINT=http://c9", "MONITORING_PASSWORD=p", "WEBHOOK_TOKEN=w",
		"FLOWGATE_TEST_CHROMIUM=/c", "FLOWGATE_NODERED_DIR=/n", "FLOWGATE_N8N_DIR=/m"}
	got := WithoutFlowgate(in)
	want := []string{"PATH=/bin", "NODE_OPTIONS=--x", "npm_config_cache=/c", "FLOWGATE_TEST_CHROMIUM=/c", "FLOWGATE_NODERED_DIR=/n", "FLOWGATE_N8N_DIR=/m"}
	if !slices.Equal(got, want) {
		t.Fatalf("WithoutFlowgate = %v, want %v", got, want)
	}
}

func TestSimulatorDefaultOnlyOnARealRedisWithoutAChoice(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false}, // embedded: the binary's own default
		{map[string]string{"REDIS_URL": "redis://x:1/0"}, true},
		{map[string]string{"REDIS_CLUSTER_ADDRS": "a:1"}, true},
		{map[string]string{"REDIS_SENTINEL_ADDRS": "a:1", "REDIS_SENTINEL_MASTER": "m"}, true},
		{map[string]string{"REDIS_URL": "redis://x:1/0", "CLOUD9_ENDPOINT": "http://c9"}, false},
		{map[string]string{"REDIS_URL": "redis://x:1/0", "CLOUD9_SIMULATOR": ""}, false}, // the test's own: unset
		{map[string]string{"REDIS_URL": "redis://x:1/0", "CLOUD9_SIMULATOR": "false"}, false},
	} {
		if got := SimulatorDefault(c.env); got != c.want {
			t.Errorf("SimulatorDefault(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}
