package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
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

// Redis loses every key under a running flowgate (FLUSHDB; a failover to
// an empty replica): /v1/appointment-types answers 200 again, the same
// catalogue, without a restart (before, it answered 503 until
// one). The schedule file is stored again once; Cloud9's slot cache is
// refilled from Cloud9.
func TestAvailabilityHealsAfterFlushDB(t *testing.T) {
	for name, file := range map[string]string{
		"schedule file": "../orchestrator/holds/availability/testdata/schedule.json",
		"cloud9":        "",
	} {
		t.Run(name, func(t *testing.T) {
			db := redistest.New(t)
			env := redisEnv(db)
			if file != "" {
				env["HOLDS_SCHEDULE_FILE"] = file
			}
			logs := &logtest.Buffer{}
			_, base := startMainLogging(t, env, slog.New(slog.NewJSONHandler(logs, nil)))
			status, before := get(t, base+"/v1/appointment-types")
			require.Equal(t, 200, status, before)

			db.Flush(t)
			require.Zero(t, db.Client.Exists(context.Background(), "{availability}:schedule").Val())
			start := time.Now()
			var body string
			tries := 0
			if !assert.Eventually(t, func() bool {
				tries++
				status, body = get(t, base+"/v1/appointment-types")
				return status == 200
			}, 5*time.Second, 50*time.Millisecond) {
				t.Fatalf("no 200 within 5 s of FLUSHDB; last answer %d %s", status, body)
			}
			t.Logf("200 again %s after FLUSHDB, request %d", time.Since(start).Round(time.Millisecond), tries)
			require.JSONEq(t, before, body, "the same catalogue as before the loss")
			var cat struct {
				AppointmentTypes []struct{ ID string } `json:"appointmentTypes"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &cat))
			require.NotEmpty(t, cat.AppointmentTypes)
			status, body = get(t, base+"/v1/appointment-types/"+cat.AppointmentTypes[0].ID+"/timeslots?days=7")
			require.Equal(t, 200, status, body)
			if file != "" {
				require.Len(t, logs.Lines("stored the schedule file's again"), 1, logs.String())
				require.Equal(t, 1, int(db.Client.Exists(context.Background(), "{availability}:schedule").Val()))
			}
			require.Empty(t, logs.Lines(`"level":"ERROR"`))
		})
	}
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
