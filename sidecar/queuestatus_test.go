package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
)

// queueOne enqueues a booking of the call sessionID / uui for child on m's
// worker (far in the future: it stays pending) and returns its id.
func queueOne(t *testing.T, m *Main, sessionID, uui, child string) string {
	t.Helper()
	id := booking.NewOperationID("op", time.Now())
	require.NoError(t, m.booking.worker.EnqueueAppointment(context.Background(), booking.AppointmentTask{
		OperationID: id, CreatedAt: time.Now().UTC(), CallSessionID: sessionID, UUI: uui, PatientName: "Parent of " + child,
		Appointment: booking.Appointment{PatientGUID: "877f0034-7e09-4e35-be0d-397e309df2e8", StartTime: "01/20/2099 10:00 AM",
			ChildName: child}}))
	return id
}

func queueStatusAt(t *testing.T, base, query string, hdr ...string) contracts.QueueStatusResponse {
	t.Helper()
	status, body := get(t, base+"/chord/ortho-prd/queue-status"+query, hdr...)
	require.Equal(t, http.StatusOK, status, "a caller without the credentials is never refused: %s", body)
	var st contracts.QueueStatusResponse
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	return st
}

// queue-status through the binary's wiring: the whole queue with names for
// the monitoring credentials (opsAuth's check), the caller's own
// operations without names for anyone else — wrong credentials and other
// schemes included, never a 401; with no credentials configured
// (MONITORING_AUTH=none, the embedded trial) nobody gets the whole queue.
func TestQueueStatusOperatorView(t *testing.T) {
	env := realRedisEnv(t)
	env["MONITORING_USER"], env["MONITORING_PASSWORD"] = "ops", "s3cret-pass"
	m, base := startMain(t, env)
	mine := queueOne(t, m, "flowise-mine-1", "uui-mine-1", "Mine Child")
	theirs := queueOne(t, m, "flowise-theirs-1", "uui-theirs-1", "Their Child")
	good := "Basic " + basic("ops", "s3cret-pass")

	st := queueStatusAt(t, base, "?pageSize=500", "Authorization", good)
	require.Equal(t, contracts.QueueScopeAll, st.Scope)
	require.Equal(t, 2, st.Total)
	require.ElementsMatch(t, []string{"Mine Child", "Their Child"}, []string{st.Operations[0].ChildName, st.Operations[1].ChildName})

	for name, hdr := range map[string][]string{
		"anonymous":            nil,
		"wrong password":       {"Authorization", "Basic " + basic("ops", "wrong")},
		"wrong user":           {"Authorization", "Basic " + basic("opz", "s3cret-pass")},
		"bearer":               {"Authorization", "Bearer s3cret-pass"},
		"malformed basic":      {"Authorization", "Basic %%%"},
		"password only":        {"Authorization", "Basic " + basic("", "s3cret-pass")},
		"forwarded internally": {"X-Forwarded-For", "127.0.0.1"},
	} {
		st := queueStatusAt(t, base, "?pageSize=500", hdr...)
		require.Equal(t, contracts.QueueScopeLookup, st.Scope, name)
		require.Empty(t, st.Operations, name)
		require.Zero(t, st.Total, name)
		st = queueStatusAt(t, base, "?sessionId=flowise-mine-1", hdr...)
		require.Len(t, st.Operations, 1, name)
		require.Equal(t, mine, st.Operations[0].ID, name)
		require.Empty(t, st.Operations[0].ChildName, name)
		require.Equal(t, 1, st.Total, name)
	}
	st = queueStatusAt(t, base, "?operationId="+theirs)
	require.Equal(t, []string{theirs}, []string{st.Operations[0].ID})
	require.Empty(t, st.Operations[0].ChildName)
	st = queueStatusAt(t, base, "?uui=uui-theirs-1", "Authorization", good)
	require.Equal(t, "Their Child", st.Operations[0].ChildName, "the operator's lookup keeps the names")

	t.Run("no credentials configured", func(t *testing.T) {
		for name, env := range map[string]map[string]string{
			"MONITORING_AUTH=none":         func() map[string]string { e := realRedisEnv(t); e["MONITORING_AUTH"] = "none"; return e }(),
			"embedded, no MONITORING_USER": {"MONITORING_AUTH": "basic"},
		} {
			m, base := startMain(t, env)
			queueOne(t, m, "flowise-x", "uui-x", "X Child")
			for _, hdr := range [][]string{nil, {"Authorization", "Basic " + basic("ops", "s3cret-pass")}, {"Authorization", "Basic " + basic("", "")}} {
				st := queueStatusAt(t, base, "", hdr...)
				require.Equal(t, contracts.QueueScopeLookup, st.Scope, name)
				require.Empty(t, st.Operations, name)
			}
			st := queueStatusAt(t, base, "?uui=uui-x")
			require.Len(t, st.Operations, 1, name)
			require.Empty(t, st.Operations[0].ChildName, name)
		}
	})
}

func TestBasicCredentials(t *testing.T) {
	for h, want := range map[string][3]string{
		"Basic " + basic("ops", "pw"):       {"ops", "pw", "true"},
		"basic " + basic("ops", "p:w"):      {"ops", "p:w", "true"},
		"BASIC " + basic("", ""):            {"", "", "true"},
		"Basic " + basic("ops", "pw") + "=": {"", "", "false"},
		"Basic":                             {"", "", "false"},
		"Basic ":                            {"", "", "false"},
		"Bearer " + basic("ops", "pw"):      {"", "", "false"},
		"Basic bm9jb2xvbg==":                {"", "", "false"}, // "nocolon"
		"":                                  {"", "", "false"},
	} {
		u, p, ok := basicCredentials(h)
		if ok {
			require.Equal(t, want, [3]string{u, p, "true"}, h)
		} else {
			require.Equal(t, "false", want[2], h)
		}
	}
}
