package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A variable that looks like a setting but is none (a typo) is reported
// with the setting it most likely meant; settings, retired ones, other
// programs' variables and the HTTP proxy conventions are not.
func TestUnknownSettingsAreNamed(t *testing.T) {
	got := unknownInEnv([]string{"MONITORING_READ_ONLY", "CLOUD9_WRITE_LIMITS", "REDIS_URL", "PHONE_INDEX_REFRESH",
		"PATH", "HOME", "HTTP_PROXY", "FLOWGATE_TEST_REDIS_URL", "FLOWGATE_LINT", "FLOWGATE_ADRR", "CLOUD9_SOMETHING_ELSE_ENTIRELY", "NODE_ENV",
		"REDIS_SERVICE_HOST", "REDIS_SERVICE_PORT", "REDIS_SERVICE_PORT_REDIS", "REDIS_PORT", "REDIS_PORT_6379_TCP", "REDIS_PORT_6379_TCP_ADDR"})
	require.Equal(t, []unknownSetting{{name: "MONITORING_READ_ONLY", meant: "MONITORING_READONLY"},
		{name: "CLOUD9_WRITE_LIMITS", meant: "CLOUD9_WRITE_LIMIT"}, {name: "FLOWGATE_ADRR", meant: "FLOWGATE_ADDR"},
		{name: "CLOUD9_SOMETHING_ELSE_ENTIRELY"}}, got)
	require.Contains(t, got[0].hint(), "did you mean MONITORING_READONLY?")
	require.Contains(t, got[3].hint(), "flowgate help")
}

// check warns (and does not fail) on an unknown setting in its environment.
func TestCheckWarnsOnAnUnknownSetting(t *testing.T) {
	t.Setenv("MONITORING_READ_ONLY", "true")
	code, out, errs := check(t, checkEnv(t))
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Regexp(t, `WARN\s+MONITORING_READ_ONLY is not a flowgate setting .*did you mean MONITORING_READONLY\?`, row(t, out, "unknown setting"))
}
