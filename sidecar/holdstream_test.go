package main

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// A stream of an appointment type the catalogue does not know is refused
// 404 before it starts, every time (only known types are trusted for a
// while); a known type's stream opens and reaches "connected", again
// within the trust window.
func TestHoldStreamValidatesTheAppointmentType(t *testing.T) {
	env := realRedisEnv(t)
	env["HOLDS_SCHEDULE_FILE"] = "../orchestrator/holds/availability/testdata/schedule.json"
	_, base := startMain(t, env)
	for range 2 {
		status, body := get(t, base+"/v1/holds/stream?appointmentTypeId=nope&clientId=a")
		require.Equal(t, http.StatusNotFound, status, body)
	}
	for _, client := range []string{"a", "b"} {
		resp, err := http.Get(base + "/v1/holds/stream?appointmentTypeId=consultation&clientId=" + client)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			if strings.Contains(line, `"type":"connected"`) {
				break
			}
		}
		resp.Body.Close()
	}
}

// The hub's fan-out and memory-release settings come from the environment
// with the package's defaults, and out-of-range values name their variable.
func TestHoldStreamHubSettings(t *testing.T) {
	cfg, err := LoadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, 0, cfg.HoldStream.Shards) // holdstream: GOMAXPROCS
	require.Equal(t, holdstream.DefaultReleaseBurst, cfg.HoldStream.ReleaseBurst)
	require.Equal(t, holdstream.DefaultReleaseQuiet, cfg.HoldStream.ReleaseQuiet)
	cfg, err = LoadConfig(envOf(map[string]string{"HOLDS_STREAM_SHARDS": "4", "HOLDS_STREAM_RELEASE_BURST": "-1", "HOLDS_STREAM_RELEASE_QUIET": "2s"}))
	require.NoError(t, err)
	require.Equal(t, 4, cfg.HoldStream.Shards)
	require.Equal(t, -1, cfg.HoldStream.ReleaseBurst)
	require.Equal(t, 2*time.Second, cfg.HoldStream.ReleaseQuiet)
	for k, v := range map[string]string{"HOLDS_STREAM_SHARDS": "-1", "HOLDS_STREAM_RELEASE_BURST": "-2", "HOLDS_STREAM_RELEASE_QUIET": "soon"} {
		_, err := LoadConfig(envOf(map[string]string{k: v}))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%s=%s: %v", k, v, err)
		require.Equal(t, k, ce.Var)
	}
}
