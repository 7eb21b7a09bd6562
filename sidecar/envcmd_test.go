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

	// A real Redis needs a Cloud9 choice the file cannot make: it says so
	// at the top, and the start names it as the one thing left.
	require.Contains(t, first.String(), "# CHOOSE YOUR CLOUD9")
	_, err := LoadConfig(envOf(sourced(t, file)))
	var es ConfigErrors
	require.ErrorAs(t, err, &es)
	require.Len(t, es, 1, "%v", err)
	require.Equal(t, "CLOUD9_ENDPOINT", es[0].Var)
	require.Contains(t, es[0].Error(), "CLOUD9_SIMULATOR=true")

	require.NoError(t, os.WriteFile(file, append(first.Bytes(), "CLOUD9_SIMULATOR=true\n"...), 0o600))
	env := sourced(t, file)
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	require.False(t, cfg.Embedded())
	require.Len(t, cfg.HMACSecret, 64)
	require.Len(t, cfg.OutboundSecret, 64)
	require.NotEqual(t, cfg.HMACSecret, cfg.OutboundSecret, "two secrets, not one")
	require.NotContains(t, second.String(), cfg.HMACSecret, "fresh secrets at each run")
	for _, s := range settings {
		require.Contains(t, first.String(), s.name+"=", "every variable is in the file")
	}

	all := regexp.MustCompile(`(?m)^# ([A-Z0-9_]+=)`).ReplaceAllString(first.String()+"CLOUD9_SIMULATOR=true\n", "$1")
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

// The Cloud9 choice already in the environment is written active: the
// credentials of a real Cloud9 (the file then loads as is), or the
// simulator on purpose; then the file asks for no choice.
func TestEnvKeepsTheCloud9ChoiceOfTheEnvironment(t *testing.T) {
	real := map[string]string{"REDIS_URL": "redis://redis:6379/0", "CLOUD9_ENDPOINT": "https://c9.example/GetData.ashx",
		"CLOUD9_CLIENT_ID": "c", "CLOUD9_USERNAME": "u", "CLOUD9_PASSWORD": "p w'd", "CLOUD9_VENDOR_USERNAME": "v",
		"CLOUD9_PROVIDER_GUID": "256a8738-e093-4e71-a263-7fa95f7fae4e"}
	for _, env := range []map[string]string{real, {"CLOUD9_SIMULATOR": "true"}} {
		var out bytes.Buffer
		require.NoError(t, writeEnv(&out, envOf(env), time.Now()))
		require.NotContains(t, out.String(), "CHOOSE YOUR CLOUD9")
		file := filepath.Join(t.TempDir(), ".env")
		require.NoError(t, os.WriteFile(file, out.Bytes(), 0o600))
		loaded := sourced(t, file)
		for k, v := range env {
			require.Equal(t, v, loaded[k], k)
		}
		_, err := LoadConfig(envOf(loaded))
		require.NoError(t, err)
	}
}

// A Sentinel or Cluster deployment keeps its Redis settings (no REDIS_URL
// beside them, which the start would refuse), and every other setting set
// in the environment is kept too.
func TestEnvKeepsTheRedisModeAndSettingsOfTheEnvironment(t *testing.T) {
	for _, redisEnv := range []map[string]string{
		{"REDIS_SENTINEL_ADDRS": "s1:26379,s2:26379", "REDIS_SENTINEL_MASTER": "mymaster", "REDIS_PASSWORD": "pw"},
		{"REDIS_CLUSTER_ADDRS": "c1:6379,c2:6379", "REDIS_PASSWORD": "pw"},
	} {
		env := map[string]string{"CLOUD9_SIMULATOR": "true", "REDIS_SHARDS": "4", "HOLD_TTL": "45s"}
		for k, v := range redisEnv {
			env[k] = v
		}
		var out bytes.Buffer
		require.NoError(t, writeEnv(&out, envOf(env), time.Now()))
		require.NotRegexp(t, `(?m)^REDIS_URL=`, out.String())
		file := filepath.Join(t.TempDir(), ".env")
		require.NoError(t, os.WriteFile(file, out.Bytes(), 0o600))
		loaded := sourced(t, file)
		for k, v := range env {
			require.Equal(t, v, loaded[k], k)
		}
		require.Empty(t, loaded["REDIS_URL"])
		_, err := LoadConfig(envOf(loaded))
		require.NoError(t, err, "one Redis mode: the file loads as is")
	}
}

// `flowgate env PATH` creates PATH with mode 0600 whatever the umask,
// refuses to overwrite it (exit 2, the file untouched) and replaces it
// with -force, mode 0600 again; the secrets never reach stdout.
func TestEnvWritesAPrivateFileAndKeepsAnExistingOne(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, ".env")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"env", file}, envOf(nil), &out, &errOut), errOut.String())
	require.Empty(t, out.String())
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	first, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(first), "\nHMAC_SECRET=")

	errOut.Reset()
	require.Equal(t, 2, run([]string{"env", file}, envOf(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "exists: not overwritten")
	again, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, first, again, "the existing file is untouched")

	require.NoError(t, os.Chmod(file, 0o644)) // widened by hand meanwhile
	require.Equal(t, 0, run([]string{"env", "-force", file}, envOf(nil), &out, &errOut))
	st, err = os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	replaced, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NotEqual(t, first, replaced, "fresh secrets")
	left, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left")
	require.Empty(t, out.String())

	require.Equal(t, 2, run([]string{"env", "a", "b"}, envOf(nil), &out, &errOut))
}

// `flowgate env > .env` under the usual umask makes a file others may
// read: env warns on stderr and still writes it.
func TestEnvWarnsWhenStdoutIsAPublicFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".env")
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Chmod(0o644))
	var errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"env"}, envOf(nil), f, &errOut))
	require.NoError(t, f.Close())
	require.Contains(t, errOut.String(), "WARNING: stdout is a file of mode 0644")

	private := filepath.Join(t.TempDir(), ".env")
	f, err = os.OpenFile(private, os.O_WRONLY|os.O_CREATE, 0o600)
	require.NoError(t, err)
	errOut.Reset()
	require.Equal(t, 0, run([]string{"env"}, envOf(nil), f, &errOut))
	require.NoError(t, f.Close())
	require.Empty(t, errOut.String())
}
