package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
