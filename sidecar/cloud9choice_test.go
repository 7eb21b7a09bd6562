package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// liveEnv is a complete real-Redis configuration but for Cloud9: the
// secrets and monitoring credentials are set, so that the Cloud9 choice is
// the only thing left to decide. redis picks the mode.
func liveEnv(redis map[string]string, extra ...string) map[string]string {
	env := map[string]string{"BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": strings.Repeat("h", 32),
		"BUFFER_API_TOKEN": strings.Repeat("t", 32), "MONITORING_USER": "ops", "MONITORING_PASSWORD": "ops-password"}
	for k, v := range redis {
		env[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

var (
	redisModes = map[string]map[string]string{
		"url":      {"REDIS_URL": "redis://127.0.0.1:1/0"},
		"cluster":  {"REDIS_CLUSTER_ADDRS": "127.0.0.1:7000,127.0.0.1:7001"},
		"sentinel": {"REDIS_SENTINEL_ADDRS": "127.0.0.1:26379", "REDIS_SENTINEL_MASTER": "mymaster"},
	}
	realCloud9 = []string{"CLOUD9_ENDPOINT", "https://c9.example/GetData.ashx", "CLOUD9_CLIENT_ID", "c",
		"CLOUD9_USERNAME", "u", "CLOUD9_PASSWORD", "p", "CLOUD9_VENDOR_USERNAME", "v",
		"CLOUD9_PROVIDER_GUID", "256a8738-e093-4e71-a263-7fa95f7fae4e"}
)

// configVar is the one variable LoadConfig refuses env for ("" when it
// loads), with the problem's text.
func configVar(t *testing.T, env map[string]string) (string, string) {
	t.Helper()
	_, err := LoadConfig(envOf(env))
	if err == nil {
		return "", ""
	}
	var es ConfigErrors
	require.ErrorAs(t, err, &es)
	require.Len(t, es, 1, "one problem: %v", err)
	return es[0].Var, es[0].Err.Error()
}

// A real Redis (URL, cluster or sentinel) without Cloud9 credentials is
// refused unless CLOUD9_SIMULATOR=true chooses the simulator on purpose: a
// production start never tells callers "confirmed" for appointments that
// exist only in the in-process simulator.
func TestRealRedisNeedsCloud9OrAnExplicitSimulator(t *testing.T) {
	for mode, redis := range redisModes {
		v, msg := configVar(t, liveEnv(redis))
		require.Equal(t, "CLOUD9_ENDPOINT", v, mode)
		require.Contains(t, msg, "CLOUD9_ENDPOINT, CLOUD9_CLIENT_ID, CLOUD9_USERNAME and CLOUD9_PASSWORD", mode)
		require.Contains(t, msg, "CLOUD9_SIMULATOR=true", mode)

		v, _ = configVar(t, liveEnv(redis, "CLOUD9_SIMULATOR", "true"))
		require.Empty(t, v, "%s: CLOUD9_SIMULATOR=true chooses the simulator", mode)
		v, _ = configVar(t, liveEnv(redis, "CLOUD9_SIMULATOR", "false"))
		require.Equal(t, "CLOUD9_ENDPOINT", v, "%s: false is no choice of the simulator", mode)
		v, _ = configVar(t, liveEnv(redis, realCloud9...))
		require.Empty(t, v, "%s: a real Cloud9", mode)
		v, msg = configVar(t, liveEnv(redis, append([]string{"CLOUD9_SIMULATOR", "true"}, realCloud9...)...))
		require.Equal(t, "CLOUD9_SIMULATOR", v, "%s: the simulator and a real Cloud9 contradict each other", mode)
		require.Contains(t, msg, "contradicts")
	}
	// Only the exact name counts.
	v, _ := configVar(t, liveEnv(redisModes["url"], "CLOUD9_SIM", "true", "FLOWGATE_CLOUD9_SIMULATOR", "true"))
	require.Equal(t, "CLOUD9_ENDPOINT", v)
	_, err := LoadConfig(envOf(liveEnv(redisModes["url"], "CLOUD9_SIMULATOR", "yes")))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "CLOUD9_SIMULATOR", ce.Var, "true or false only: %v", err)
}

// The embedded Redis keeps the simulator by default; CLOUD9_SIMULATOR=false
// asks for a real Cloud9 there too.
func TestEmbeddedKeepsTheSimulatorByDefault(t *testing.T) {
	for _, env := range []map[string]string{{}, {"CLOUD9_SIMULATOR": "true"}, {"CLOUD9_SIMULATOR": ""}} {
		v, _ := configVar(t, env)
		require.Empty(t, v, "%v", env)
	}
	v, _ := configVar(t, map[string]string{"CLOUD9_SIMULATOR": "false"})
	require.Equal(t, "CLOUD9_ENDPOINT", v)
	v, _ = configVar(t, liveEnv(nil, append([]string{"CLOUD9_SIMULATOR", "true"}, realCloud9...)...))
	require.Equal(t, "CLOUD9_SIMULATOR", v)
}

// The refused start exits 2 with one line that says how to choose.
func TestRealRedisWithoutCloud9ExitsTwoWithOneLine(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run(nil, envOf(liveEnv(redisModes["url"])), &out, &errOut))
	line := strings.TrimSpace(errOut.String())
	require.NotContains(t, line, "\n", "one line")
	require.Regexp(t, `^flowgate: invalid configuration: CLOUD9_ENDPOINT: a real Redis needs a real Cloud9: set CLOUD9_ENDPOINT, `+
		`CLOUD9_CLIENT_ID, CLOUD9_USERNAME and CLOUD9_PASSWORD \(with CLOUD9_PROVIDER_GUID and CLOUD9_VENDOR_USERNAME\), or CLOUD9_SIMULATOR=true`, line)
	require.Empty(t, out.String())
}

// A Config built by hand (not through LoadConfig) still cannot put a real
// Redis on the simulator: Main.Run refuses it as a configuration error.
func TestMainRefusesTheSimulatorOnARealRedisNotChosen(t *testing.T) {
	env := realRedisEnv(t)
	env["FLOWGATE_ADDR"], env["MONITORING_AUTH"] = "127.0.0.1:0", "none"
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	cfg.Cloud9Simulator = false
	m := NewMain(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	err = m.Run(context.Background())
	_ = m.Close()
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "CLOUD9_ENDPOINT", ce.Var)
}

// `flowgate check` FAILs a real Redis without Cloud9 the same way (the
// configuration row, the same line on stderr), and warns when the
// simulator is chosen on purpose.
func TestCheckFailsARealRedisWithoutCloud9(t *testing.T) {
	env := checkEnv(t)
	for _, k := range []string{"CLOUD9_ENDPOINT", "CLOUD9_CLIENT_ID", "CLOUD9_USERNAME", "CLOUD9_PASSWORD", "CLOUD9_VENDOR_USERNAME", "CLOUD9_PROVIDER_GUID"} {
		delete(env, k)
	}
	code, out, errs := check(t, env)
	require.Equal(t, 1, code, out)
	require.Contains(t, row(t, out, "configuration"), "FAIL")
	require.Contains(t, errs, "CLOUD9_ENDPOINT: a real Redis needs a real Cloud9")
	require.Contains(t, errs, "CLOUD9_SIMULATOR=true")

	env["CLOUD9_SIMULATOR"] = "true"
	code, out, errs = check(t, env)
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Regexp(t, `WARN\s+.*sandbox simulator \(CLOUD9_SIMULATOR=true\), not to Cloud9`, row(t, out, "cloud9"))
}
