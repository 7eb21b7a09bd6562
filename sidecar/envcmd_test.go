package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sourced runs bash on the file (set -a; . file) and answers the settings'
// values as the shell saw them.
func sourced(t *testing.T, file string) map[string]string {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -a; . " + file + "; set +a\n")
	for _, s := range settings {
		script.WriteString("printf '%s\\0%s\\0' " + s.name + " \"${" + s.name + "-}\"\n")
	}
	out, err := exec.Command("bash", "-c", script.String()).Output()
	require.NoError(t, err)
	parts := strings.Split(string(out), "\x00")
	env := map[string]string{}
	for i := 0; i+1 < len(parts); i += 2 {
		if parts[i+1] != "" {
			env[parts[i]] = parts[i+1]
		}
	}
	return env
}

// `flowgate env` writes a .env that a shell loads as is into a valid
// real-Redis configuration, with fresh secrets at each run; uncommenting
// every default line changes nothing.
func TestEnvWritesAWorkingRealDeploymentConfig(t *testing.T) {
	dir := t.TempDir()
	var first, second bytes.Buffer
	require.Equal(t, 0, run([]string{"env"}, envOf(nil), &first, os.Stderr))
	require.NoError(t, writeEnv(&second, envOf(nil), time.Now()))
	file := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(file, first.Bytes(), 0o600))

	env := sourced(t, file)
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	require.False(t, cfg.Embedded())
	require.Len(t, cfg.HMACSecret, 64)
	require.NotContains(t, second.String(), cfg.HMACSecret, "fresh secrets at each run")
	for _, s := range settings {
		require.Contains(t, first.String(), s.name+"=", "every variable is in the file")
	}

	all := regexp.MustCompile(`(?m)^# ([A-Z0-9_]+=)`).ReplaceAllString(first.String(), "$1")
	require.NoError(t, os.WriteFile(file, []byte(all), 0o600))
	envAll := sourced(t, file)
	withDefaults, err := LoadConfig(envOf(envAll))
	require.NoError(t, err, "every default line, uncommented, loads")
	require.Equal(t, cfg.SlotCache.Schedule, withDefaults.SlotCache.Schedule)
	require.Equal(t, cfg.HeartbeatSpec, withDefaults.HeartbeatSpec)

	// A value already in the environment is kept.
	var kept bytes.Buffer
	require.NoError(t, writeEnv(&kept, envOf(map[string]string{"REDIS_URL": "redis://redis:6379/0"}), time.Now()))
	require.Contains(t, kept.String(), "\nREDIS_URL=redis://redis:6379/0\n")
}
