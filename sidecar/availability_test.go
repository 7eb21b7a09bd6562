package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// With HOLDS_SCHEDULE_FILE the catalogue serves the file's types and
// timeslots; the admin endpoints take the monitoring credentials.
func TestAvailabilityScheduleFile(t *testing.T) {
	env := realRedisEnv(t)
	env["HOLDS_SCHEDULE_FILE"] = "../orchestrator/holds/availability/testdata/schedule.json"
	env["MONITORING_USER"], env["MONITORING_PASSWORD"] = "ops", "s3cret-pass"
	_, base := startMain(t, env)
	status, body := get(t, base+"/v1/appointment-types")
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"id":"consultation"`)
	status, body = get(t, base+"/v1/appointment-types/consultation/timeslots?days=14")
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"timeZone":"America/Chicago"`)
	require.Contains(t, body, `"slotStartDate"`)
	status, _ = get(t, base+"/v1/appointment-types/nope/timeslots")
	require.Equal(t, 404, status)
	status, body = get(t, base+"/v1/appointment-types/consultation/timeslots?from=tomorrow")
	require.Equal(t, 400, status)
	require.Contains(t, body, `"field":"from"`)

	del := func(auth string) int {
		req, _ := http.NewRequest(http.MethodDelete, base+"/v1/admin/availability/specialists/dr-chen", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Basic "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 401, del(""))
	require.Equal(t, 401, del(basic("ops", "wrong")))
	require.Equal(t, 200, del(basic("ops", "s3cret-pass")))
	status, body = get(t, base+"/v1/appointment-types")
	require.Equal(t, 200, status)
	require.NotContains(t, body, "dr-chen")
}

// Without a schedule file the catalogue is Cloud9's (here the embedded
// simulator): its appointment type, chairs as specialists; no admin.
func TestAvailabilityCloud9Default(t *testing.T) {
	_, base := startMain(t, realRedisEnv(t))
	status, body := get(t, base+"/v1/appointment-types")
	require.Equal(t, 200, status, body)
	require.Contains(t, strings.ToLower(body), strings.ToLower(cloud9sim.DefaultAppointmentTypeGUID))
	status, body = get(t, base+"/v1/appointment-types/"+cloud9sim.DefaultAppointmentTypeGUID+"/timeslots?days=7")
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"specialistIds":["`)
	status, _ = get(t, base+"/v1/admin/availability/schedule")
	require.Equal(t, 409, status)
}

func TestAvailabilitySettingsRefuseBadValues(t *testing.T) {
	for name, v := range map[string]string{
		"HOLDS_SCHEDULE_FILE":         "/does/not/exist.json",
		"PRACTICE_TIME_ZONE":          "Mars/Olympus",
		"TIMESLOTS_CACHE_TTL_SECONDS": "0",
		"HOLDS_TIMESLOTS_MAX_DAYS":    "400",
	} {
		_, err := LoadConfig(envOf(map[string]string{name: v}))
		require.ErrorContains(t, err, name)
	}
}
