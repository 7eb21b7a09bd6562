package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// opsDeliberate are the original's operation variants flowgate answers
// otherwise on purpose, with the docs/differences.md row that says why.
var opsDeliberate = map[string]string{
	"GET /chord/ortho-prd/redisGet#0":  "README: redisGet answers JSON (a stored string as a JSON string), the original the raw text",
	"GET /chord/ortho-prd/redisGet#1":  "README: the operation endpoints' errors are the flowgate error envelope, not {error: string}",
	"POST /chord/ortho-prd/redisSet#1": "README: the operation endpoints' errors are the flowgate error envelope, not {error: string}",
}

// healthHistoryPaths are the keys of the original's refreshHistory entries
// the measured shapes lack: each
// entry carries them. dateRange is the original's string
// ("11/28/2026 to 02/26/2027"), in the shapes too.
var healthHistoryPaths = map[string]string{
	"refreshHistory[].dateRange":       "string",
	"refreshHistory[].fetchDurationMs": "number", "refreshHistory[].isRetry": "bool",
	"refreshHistory[].redisWriteSuccess": "bool", "refreshHistory[].retries": "number",
}

var opsEndpoints = []string{
	"GET " + parityBase + "/redisGet", "POST " + parityBase + "/redisSet", "GET " + parityBase + "/cache-health",
	"POST " + parityBase + "/cache/refresh", "POST " + parityBase + "/cache/trigger", "DELETE " + parityBase + "/cache",
	"POST /test/slot-cache/prefetch", "GET /test/slot-cache/status", "POST /test/slot-cache/query",
	"DELETE /test/slot-cache/clear", "POST /test/redis-slot-cache/trigger", "GET /test/redis-slot-cache/status",
	"DELETE /test/redis-slot-cache/clear",
}

const opsUser, opsPass = "ops", "s3cret-monitoring-pass"

// opsCall sends an operation request with the monitoring credentials
// (user "" sends none); path is from the server root.
func opsCall(t *testing.T, p *parityEnv, method, path, body, user, pass string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(p.base, parityBase)+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// warmTiers waits until every tier of p's slot cache is fresh: the
// background refresh the first slot request fired, or one asked for here.
func warmTiers(t *testing.T, p *parityEnv, cred ...string) {
	t.Helper()
	user, pass := "", ""
	if len(cred) == 2 {
		user, pass = cred[0], cred[1]
	}
	require.Eventually(t, func() bool {
		st, body := opsCall(t, p, http.MethodGet, parityBase+"/cache-health", "", user, pass)
		if st == http.StatusOK && obj(t, body)["status"] == "healthy" {
			return true
		}
		opsCall(t, p, http.MethodPost, parityBase+"/cache/refresh", "", user, pass) // 409 while the background one runs
		return false
	}, 30*time.Second, 100*time.Millisecond, "the tiers are refreshed")
}

// TestOpsShapeParity: the operation endpoints' contract parity. Every
// answer variant of redisGet / redisSet, cache-health, cache/refresh,
// DELETE cache, cache/trigger and the /test/slot-cache/* and
// /test/redis-slot-cache/* aliases, produced through the real wiring
// (monitoring credentials on) against the simulator, carries every key path
// of the original's variant with the same JSON type.
func TestOpsShapeParity(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, map[string]string{"MONITORING_USER": opsUser, "MONITORING_PASSWORD": opsPass})
	var answers []produced
	call := func(name, variant, method, path, body string) []byte {
		st, out := opsCall(t, p, method, path, body, opsUser, opsPass)
		answers = append(answers, produced{name: name, variant: variant, status: st, body: out})
		return out
	}
	warmTiers(t, p, opsUser, opsPass)
	bookOneSlot(t, p) // cache-health then names the slot that left the tiers

	B := parityBase
	health := call("health", "GET "+B+"/cache-health#0", http.MethodGet, B+"/cache-health", "")
	require.Empty(t, shapeProblems(shapeVariant{Paths: healthHistoryPaths}, health), "refreshHistory entries: %s", health)
	call("refresh", "POST "+B+"/cache/refresh#0", http.MethodPost, B+"/cache/refresh", `{"tier":1}`)
	call("trigger", "POST "+B+"/cache/trigger#0", http.MethodPost, B+"/cache/trigger", "")
	waitIdle(t, p)
	call("prefetch", "POST /test/slot-cache/prefetch#0", http.MethodPost, "/test/slot-cache/prefetch", "")
	call("status", "GET /test/slot-cache/status#0", http.MethodGet, "/test/slot-cache/status", "")
	call("query", "POST /test/slot-cache/query#0", http.MethodPost, "/test/slot-cache/query", `{}`)
	call("redis trigger", "POST /test/redis-slot-cache/trigger#0", http.MethodPost, "/test/redis-slot-cache/trigger", "")
	call("redis status", "GET /test/redis-slot-cache/status#0", http.MethodGet, "/test/redis-slot-cache/status", "")
	call("redis clear", "DELETE /test/redis-slot-cache/clear#0", http.MethodDelete, "/test/redis-slot-cache/clear", "")
	call("clear", "DELETE /test/slot-cache/clear#0", http.MethodDelete, "/test/slot-cache/clear", "")
	call("delete cache", "DELETE "+B+"/cache#0", http.MethodDelete, B+"/cache", "")
	call("redisSet", "POST "+B+"/redisSet#0", http.MethodPost, B+"/redisSet", `{"key":"flowgate:ops:k","value":{"a":1},"ttl":60}`)
	checkVariants(t, answers, opsEndpoints, opsDeliberate)
}

// waitIdle waits for the background refresh cache/trigger started.
func waitIdle(t *testing.T, p *parityEnv) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, _ := opsCall(t, p, http.MethodPost, parityBase+"/cache/refresh", `{"tier":1}`, opsUser, opsPass)
		return st == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond)
}

// bookOneSlot creates a parent and books the first offered slot with its
// bookingToken: the confirmed booking takes the slot out of every tier.
func bookOneSlot(t *testing.T, p *parityEnv) {
	t.Helper()
	st, body := p.post(t, "/createPatient", map[string]any{"patientFirstName": "Ann", "patientLastName": "Lee",
		"phoneNumber": "412-555-0199", "uui": "call-ops-1", "sessionId": "s-ops-1"})
	require.Equal(t, http.StatusOK, st)
	parent := obj(t, body)
	st, body = p.post(t, "/getApptSlots", map[string]any{"sessionId": "s-ops-1"})
	require.Equal(t, http.StatusOK, st)
	slot := obj(t, body)["slots"].([]any)[0].(map[string]any)
	st, body = p.post(t, "/createAppt", map[string]any{"patientGUID": parent["patientGUID"], "bookingAuthToken": parent["bookingAuthToken"],
		"bookingToken": slot["bookingToken"], "childName": "Tom", "uui": "call-ops-1", "sessionId": "s-ops-1"})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, true, obj(t, body)["success"], "%s", body)
	st, body = opsCall(t, p, http.MethodPost, "/test/slot-cache/query", `{}`, opsUser, opsPass)
	require.Equal(t, http.StatusOK, st)
	require.NotContains(t, string(body), `"startTime":"`+slot["startTime"].(string)+`","endTime":"`+slot["endTime"].(string)+`","scheduleViewGUID":"`+
		slot["scheduleViewGUID"].(string)+`","scheduleColumnGUID":"`+slot["scheduleColumnGUID"].(string), "the booked slot left tier 1")
}

// checkVariants is checkParity for the endpoints named.
func checkVariants(t *testing.T, answers []produced, endpoints []string, deliberate map[string]string) {
	t.Helper()
	shapes := loadShapes(t)
	seen := map[string]bool{}
	for _, a := range answers {
		endpoint, idx := splitVariant(t, a.variant)
		require.Less(t, idx, len(shapes[endpoint]), a.variant)
		orig := shapes[endpoint][idx]
		seen[a.variant] = true
		_, isDeliberate := deliberate[a.variant]
		require.False(t, isDeliberate, "%s is produced but listed as deliberate", a.variant)
		problems := shapeProblems(orig, a.body)
		if a.status != orig.Status {
			problems = append(problems, "status differs")
		}
		if len(problems) > 0 {
			t.Errorf("%s (%s) differs from the original (status %d):\n%s\nbody: %.2000s", a.name, a.variant, a.status,
				strings.Join(problems, "\n"), a.body)
		}
	}
	for _, endpoint := range endpoints {
		for i := range shapes[endpoint] {
			key := variantKey(endpoint, i)
			if _, ok := deliberate[key]; !seen[key] && !ok {
				t.Errorf("variant %s of the original is neither produced nor listed as deliberate", key)
			}
		}
	}
}

// Without the monitoring credentials (none, or wrong ones) every
// operation route and /monitoring answer 401 with the error envelope and
// change nothing; with them they answer.
func TestOpsRequireMonitoringCredentials(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, map[string]string{"MONITORING_USER": opsUser, "MONITORING_PASSWORD": opsPass})
	B := parityBase
	routes := [][3]string{
		{http.MethodGet, B + "/redisGet?key=flowgate:ops:k", ""}, {http.MethodPost, B + "/redisSet", `{"key":"flowgate:ops:k","value":1}`},
		{http.MethodPost, B + "/redisDelete", `{"key":"flowgate:ops:k"}`}, {http.MethodDelete, B + "/redisDelete?key=flowgate:ops:k", ""},
		{http.MethodGet, B + "/cache-health", ""}, {http.MethodPost, B + "/cache/refresh", ""}, {http.MethodDelete, B + "/cache", ""},
		{http.MethodPost, B + "/cache/trigger", ""}, {http.MethodPost, "/test/slot-cache/prefetch", ""},
		{http.MethodGet, "/test/slot-cache/status", ""}, {http.MethodPost, "/test/slot-cache/query", "{}"},
		{http.MethodDelete, "/test/slot-cache/clear", ""}, {http.MethodPost, "/test/redis-slot-cache/trigger", ""},
		{http.MethodGet, "/test/redis-slot-cache/status", ""}, {http.MethodDelete, "/test/redis-slot-cache/clear", ""},
		{http.MethodGet, "/monitoring/api/queues", ""},
	}
	for _, r := range routes {
		for _, cred := range [][2]string{{"", ""}, {opsUser, "wrong"}, {"someone", opsPass}} {
			st, body := opsCall(t, p, r[0], r[1], r[2], cred[0], cred[1])
			require.Equal(t, http.StatusUnauthorized, st, "%s %s as %q: %s", r[0], r[1], cred[0], body)
			require.Contains(t, string(body), `"code":"unauthorized"`, "%s %s", r[0], r[1])
		}
	}
	st, body := opsCall(t, p, http.MethodGet, B+"/redisGet?key=flowgate:ops:k", "", opsUser, opsPass)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "null", string(body), "the refused redisSet stored nothing")
	st, _ = opsCall(t, p, http.MethodGet, B+"/cache-health", "", opsUser, opsPass)
	require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, st)
}

// cache-health's config.refreshIntervalMs is SLOT_CACHE_REFRESH_SCHEDULE's
// period, not a fixed 5 min.
func TestCacheHealthReportsTheRefreshSchedule(t *testing.T) {
	t.Parallel()
	p := newParityEnv(t, cloud9sim.Config{}, map[string]string{"SLOT_CACHE_REFRESH_SCHEDULE": "@every 2m"})
	_, body := opsCall(t, p, http.MethodGet, parityBase+"/cache-health", "", "", "")
	cfg, ok := obj(t, body)["config"].(map[string]any)
	require.True(t, ok, string(body))
	require.EqualValues(t, 120000, cfg["refreshIntervalMs"], string(body))
}
