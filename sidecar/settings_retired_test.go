package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// A retired variable still set is named at start and by check, with what
// replaced it; none of them is a setting any more.
func TestRetiredSettingsAreNamed(t *testing.T) {
	current := map[string]bool{}
	for _, s := range settings {
		current[s.name] = true
	}
	for _, r := range retiredSettings {
		require.False(t, current[r.name], "%s is retired and read", r.name)
		require.NotEmpty(t, r.instead, r.name)
	}

	env := map[string]string{"PHONE_INDEX_REFRESH": "10m", "PHONE_INDEX_CONCURRENCY": "4"}
	var b bytes.Buffer
	warnRetired(slog.New(slog.NewTextHandler(&b, nil)), envOf(env))
	require.Contains(t, b.String(), "setting=PHONE_INDEX_REFRESH")
	require.Contains(t, b.String(), "setting=PHONE_INDEX_CONCURRENCY")
	require.Contains(t, b.String(), "PHONE_SEARCH_CONCURRENCY")
	require.NotContains(t, b.String(), "PHONE_INDEX_DEADLINE", "only what is set")

	b.Reset()
	warnRetired(slog.New(slog.NewTextHandler(&b, nil)), envOf(nil))
	require.Empty(t, b.String())
}

func TestCheckWarnsARetiredSetting(t *testing.T) {
	env := checkEnv(t)
	env["PHONE_INDEX_MAX_PATIENTS"] = "5000"
	code, out, errs := check(t, env)
	require.Equal(t, 0, code, "a warning does not fail check: %s\n%s", out, errs)
	require.Regexp(t, `WARN\s+PHONE_INDEX_MAX_PATIENTS is no longer read .*PHONE_SEARCH_READS`, row(t, out, "retired setting"))
}
