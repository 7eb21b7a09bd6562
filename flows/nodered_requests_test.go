package flows_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/shadow"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// TestNodeRedQueueStatusRequestAuth: the dashboard's queue-status request
// carries the monitoring credentials as basic auth when they are set (the
// whole queue is theirs only), and no Authorization otherwise.
func TestNodeRedQueueStatusRequestAuth(t *testing.T) {
	var got struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	out, _ := runFunctionNode(t, "booking-queue-request.js", map[string]any{}, map[string]string{"FLOWGATE_URL": "http://flowgate:8080/",
		"FLOWGATE_MONITORING_USER": "ops", "FLOWGATE_MONITORING_PASSWORD": "pä:ss"}, fixedNow)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth("ops", "pä:ss")
	if want := req.Header.Get("Authorization"); got.Headers["authorization"] != want {
		t.Errorf("authorization %q, want %q", got.Headers["authorization"], want)
	}
	if got.URL != "http://flowgate:8080/chord/ortho-prd/queue-status?page=1&pageSize=100" {
		t.Errorf("url %q", got.URL)
	}
	got.Headers = nil
	out, _ = runFunctionNode(t, "booking-queue-request.js", map[string]any{}, map[string]string{"FLOWGATE_URL": "http://flowgate:8080"}, fixedNow)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if v, ok := got.Headers["authorization"]; ok {
		t.Errorf("no credentials set, yet authorization %q", v)
	}
}

// TestNodeRedStatsRequestSigned: the dashboard's GET /queue/stats carries a
// version-2 signature flowgate's own signer produces for the same second.
func TestNodeRedStatsRequestSigned(t *testing.T) {
	out, _ := runFunctionNode(t, "task-queue-request.js", map[string]any{},
		map[string]string{"FLOWGATE_URL": "http://flowgate:8080/", "HMAC_SECRET": testSecret}, fixedNow)
	var got struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://flowgate:8080/queue/stats", nil)
	signature.SignRequestV2(req, []byte(testSecret), fixedNow, nil)
	if got.URL != "http://flowgate:8080/queue/stats" || got.Method != http.MethodGet {
		t.Errorf("request %s %s", got.Method, got.URL)
	}
	for _, h := range []string{"X-Timestamp", "X-Signature-Version", "X-Signature"} {
		if got.Headers[strings.ToLower(h)] != req.Header.Get(h) {
			t.Errorf("%s = %q, flowgate's signer gives %q", h, got.Headers[strings.ToLower(h)], req.Header.Get(h))
		}
	}
}

// TestNodeRedRouteOpsCallerAuthOnly: FLOWGATE_TOKEN is never attached to an
// operations endpoint or queue-status (Node-RED's http in is
// unauthenticated; the token may be the monitoring credentials): a request
// without Authorization reaches flowgate without one, the caller's own is
// passed; a read endpoint still gets the token. Fails with route.js
// injecting the token everywhere.
func TestNodeRedRouteOpsCallerAuthOnly(t *testing.T) {
	l := loadEndpoints(t)
	ops := map[string]bool{}
	for _, e := range l.Endpoints {
		ops[e.Name] = e.CallerAuthOnly
	}
	for _, name := range []string{"redisGet", "redisSet", "cache", "cache/trigger", "test/slot-cache/clear", "queue-status"} {
		if !ops[name] {
			t.Errorf("%s: callerAuthOnly not set", name)
		}
	}
	req := func(auth string) map[string]any {
		h := map[string]any{"content-type": "application/json"}
		if auth != "" {
			h["authorization"] = auth
		}
		return map[string]any{"payload": nil, "req": map[string]any{"method": "POST", "originalUrl": "/x", "headers": h}}
	}
	env := func(endpoint, callerOnly string) map[string]string {
		return map[string]string{"ENDPOINT": endpoint, "ENDPOINT_PATH": endpoint, "FLOWGATE_URL": "http://flowgate:8080",
			"FLOWGATE_TOKEN": "Basic bW9uOnB3", "CALLER_AUTH_ONLY": callerOnly}
	}
	auth := func(out json.RawMessage) (string, bool) {
		var outs []*struct {
			Headers map[string]string `json:"headers"`
		}
		if err := json.Unmarshal(out, &outs); err != nil || len(outs) == 0 || outs[0] == nil {
			t.Fatalf("route output %s: %v", out, err)
		}
		v, ok := outs[0].Headers["authorization"]
		return v, ok
	}
	if v, ok := auth(func() json.RawMessage {
		o, _ := runFunctionNode(t, "route.js", req(""), env("redisSet", "true"), fixedNow)
		return o
	}()); ok {
		t.Errorf("ops endpoint without Authorization: flowgate got %q", v)
	}
	if v, _ := auth(func() json.RawMessage {
		o, _ := runFunctionNode(t, "route.js", req("Basic Y2FsbGVy"), env("redisSet", "true"), fixedNow)
		return o
	}()); v != "Basic Y2FsbGVy" {
		t.Errorf("ops endpoint: flowgate got %q, want the caller's", v)
	}
	if v, _ := auth(func() json.RawMessage {
		o, _ := runFunctionNode(t, "route.js", req(""), env("getPatient", ""), fixedNow)
		return o
	}()); v != "Basic bW9uOnB3" {
		t.Errorf("read endpoint: flowgate got %q, want FLOWGATE_TOKEN", v)
	}
}

// TestNodeRedShadowTableMatchesEndpoints: flowgate's shadow table
// (orchestrator/shadow.Endpoints: the report's rows, the metrics' endpoint
// label, the groups the verdict joins) is the kit's list — the same names
// in the same order, the same switch groups, and shadowed exactly where
// the admin route allows "shadow" (every group but ops).
func TestNodeRedShadowTableMatchesEndpoints(t *testing.T) {
	l := loadEndpoints(t)
	var want []shadow.Endpoint
	for _, e := range l.Endpoints {
		if slices.ContainsFunc(want, func(w shadow.Endpoint) bool { return w.Name == e.Name }) {
			continue
		}
		want = append(want, shadow.Endpoint{Name: e.Name, Group: e.SwitchGroup, Shadowed: e.Group != "ops"})
	}
	if !slices.Equal(want, shadow.Endpoints) {
		t.Errorf("orchestrator/shadow.Endpoints is not endpoints.json's list:\nwant %+v\ngot  %+v", want, shadow.Endpoints)
	}
}
