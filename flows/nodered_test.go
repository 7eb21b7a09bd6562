package flows_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// updateFlows rewrites the Node-RED flows generated from
// node-red/endpoints.json. flowgate-proxy.json and
// flowgate-queue-dashboard.json are built here from the endpoint list and
// the function sources in node-red/src, and compared with the committed
// files: a change to the list or a source that was not regenerated fails
// TestNodeRedFlowsGenerated. Regenerate with
//
//	go test ./flows/ -run TestNodeRedFlowsGenerated -update
var updateFlows = flag.Bool("update", false, "rewrite flows/node-red/*.json from endpoints.json and src/")

const (
	nodeRedDir    = "node-red"
	proxyFile     = "node-red/flowgate-proxy.json"
	dashboardFile = "node-red/flowgate-queue-dashboard.json"
	endpointsFile = "node-red/endpoints.json"
)

// nrEndpoint is one row of endpoints.json.
type nrEndpoint struct {
	Name           string         `json:"name"`
	Method         string         `json:"method"`
	Path           string         `json:"path"`
	Group          string         `json:"group"`
	SwitchGroup    string         `json:"switchGroup"`
	Served         bool           `json:"served"`
	Fallback       map[string]any `json:"fallback"`
	FallbackStatus int            `json:"fallbackStatus"`
	CallerAuthOnly bool           `json:"callerAuthOnly"`
}

type nrEndpoints struct {
	BasePath  string       `json:"basePath"`
	Endpoints []nrEndpoint `json:"endpoints"`
}

// URL is the Node-RED URL of the endpoint (http in), relative to httpNodeRoot.
func (e nrEndpoint) URL(base string) string {
	if strings.HasPrefix(e.Path, "/") {
		return e.Path
	}
	return base + "/" + e.Path
}

func loadEndpoints(t *testing.T) nrEndpoints {
	t.Helper()
	raw, err := os.ReadFile(endpointsFile)
	if err != nil {
		t.Fatal(err)
	}
	var l nrEndpoints
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&l); err != nil {
		t.Fatalf("%s: %v", endpointsFile, err)
	}
	return l
}

// nrID is a stable Node-RED node id (16 hex digits) for key.
func nrID(key string) string {
	sum := sha256.Sum256([]byte("flowgate/" + key))
	return hex.EncodeToString(sum[:8])
}

func jsSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nodeRedDir, "src", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type node = map[string]any

func wires(ids ...[]string) [][]string {
	out := make([][]string, len(ids))
	for i, w := range ids {
		if w == nil {
			w = []string{}
		}
		out[i] = w
	}
	return out
}

func fn(t *testing.T, id, z, name, src string, outputs int, libs []map[string]string, x, y int, w [][]string) node {
	if libs == nil {
		libs = []map[string]string{}
	}
	return node{"id": id, "type": "function", "z": z, "name": name, "func": jsSource(t, src), "outputs": outputs,
		"timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": libs, "x": x, "y": y, "wires": w}
}

var cryptoLib = []map[string]string{{"var": "crypto", "module": "crypto"}}

var httpLibs = []map[string]string{{"var": "http", "module": "http"}, {"var": "https", "module": "https"}}

// routeSubflow is the proxy logic, once: route → http request → answer, or
// → link call to the original node; every failure → fallback.
func routeSubflow(t *testing.T) []node {
	sf := nrID("subflow/route")
	id := func(s string) string { return nrID("subflow/route/" + s) }
	out := []node{{
		"id": sf, "type": "subflow", "name": "flowgate route", "category": "", "color": "#A6BBCF",
		"info": "Routes one endpoint to flowgate or to the operator's original node (\"shadow\": the original answers, then flowgate gets a mirror to compare). Instance env: ENDPOINT " +
			"(the switch key), ENDPOINT_PATH, FALLBACK (extra keys of the fallback answer), FALLBACK_STATUS, CALLER_AUTH_ONLY (\"true\": never send FLOWGATE_TOKEN). " +
			"See flows/README.md (Node-RED).",
		"in":  []node{{"x": 60, "y": 120, "wires": []node{{"id": id("route")}}}},
		"out": []node{{"x": 1100, "y": 120, "wires": []node{{"id": id("answer"), "port": 0}, {"id": id("fallback"), "port": 0}, {"id": id("to-fallback"), "port": 1}}}},
		"env": []node{
			{"name": "ENDPOINT", "type": "str", "value": ""},
			{"name": "ENDPOINT_PATH", "type": "str", "value": ""},
			{"name": "FALLBACK", "type": "json", "value": "{}"},
			{"name": "FALLBACK_STATUS", "type": "str", "value": "200"},
			{"name": "CALLER_AUTH_ONLY", "type": "str", "value": ""},
		},
	}}
	out = append(out,
		fn(t, id("route"), sf, "route", "route.js", 3, nil, 200, 120,
			wires([]string{id("request")}, []string{id("call")}, []string{id("fallback")})),
		node{"id": id("request"), "type": "http request", "z": sf, "name": "flowgate", "method": "use", "ret": "bin",
			"paytoqs": "ignore", "url": "", "tls": "", "persist": false, "proxy": "", "insecureHTTPParser": false,
			"authType": "", "senderr": false, "headers": []any{}, "x": 400, "y": 80, "wires": wires([]string{id("answer")})},
		fn(t, id("answer"), sf, "answer", "answer.js", 2, nil, 600, 80, wires(nil, []string{id("fallback")})),
		node{"id": id("call"), "type": "link call", "z": sf, "name": "original node", "links": []any{},
			"linkType": "dynamic", "timeout": "120", "x": 410, "y": 160, "wires": wires([]string{id("to-fallback")})},
		node{"id": id("to-fallback"), "type": "switch", "z": sf, "name": "answered?", "property": "flowgate.fallback",
			"propertyType": "msg", "rules": []node{{"t": "true"}, {"t": "else"}}, "checkall": "false", "repair": false,
			"outputs": 2, "x": 600, "y": 160, "wires": wires([]string{id("fallback")}, []string{id("shadow")})},
		fn(t, id("shadow"), sf, "shadow mirror", "shadow.js", 1, httpLibs, 850, 260, wires(nil)),
		node{"id": id("catch"), "type": "catch", "z": sf, "name": "original failed", "scope": []string{id("call")},
			"uncaught": false, "x": 410, "y": 220, "wires": wires([]string{id("fallback")})},
		fn(t, id("fallback"), sf, "fallback", "fallback.js", 1, nil, 850, 200, wires(nil)),
	)
	return out
}

func proxyFlow(t *testing.T, l nrEndpoints) []node {
	tab := nrID("tab/proxy")
	originals := nrID("tab/originals")
	sf := nrID("subflow/route")
	var names []string
	for _, e := range l.Endpoints {
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	namesJSON, _ := json.Marshal(names)
	groups, noShadow := map[string][]string{}, []string{}
	for _, e := range l.Endpoints {
		if e.SwitchGroup != "" && !slices.Contains(groups[e.SwitchGroup], e.Name) {
			groups[e.SwitchGroup] = append(groups[e.SwitchGroup], e.Name)
		}
		if e.Group == "ops" && !slices.Contains(noShadow, e.Name) {
			noShadow = append(noShadow, e.Name)
		}
	}
	groupsJSON, _ := json.Marshal(groups)
	noShadowJSON, _ := json.Marshal(noShadow)
	flow := []node{{
		"id": tab, "type": "tab", "label": "flowgate proxy", "disabled": false,
		"info": "Generated from flows/node-red/endpoints.json. Each endpoint: http in → flowgate route → http response. " +
			"Switch one endpoint (or its group): PUT /flowgate-admin/routes {\"endpoint\":…,\"target\":\"local\"|\"flowgate\"|\"shadow\"|null}. " +
			"See flows/README.md (Node-RED).",
		"env": []node{{"name": "FLOWGATE_ENDPOINTS", "type": "json", "value": string(namesJSON)},
			{"name": "FLOWGATE_GROUPS", "type": "json", "value": string(groupsJSON)},
			{"name": "FLOWGATE_NO_SHADOW", "type": "json", "value": string(noShadowJSON)}},
	}}
	flow = append(flow, routeSubflow(t)...)
	for i, e := range l.Endpoints {
		key := e.Method + " " + e.URL(l.BasePath)
		y := 60 + 50*i
		fb, _ := json.Marshal(e.Fallback)
		if e.Fallback == nil {
			fb = []byte("{}")
		}
		callerAuthOnly := ""
		if e.CallerAuthOnly {
			callerAuthOnly = "true"
		}
		status := "200"
		if e.FallbackStatus != 0 {
			status = fmt.Sprint(e.FallbackStatus)
		}
		flow = append(flow,
			node{"id": nrID("in/" + key), "type": "http in", "z": tab, "name": key, "url": e.URL(l.BasePath),
				"method": strings.ToLower(e.Method), "upload": false, "skipBodyParsing": true, "swaggerDoc": "", "x": 180, "y": y,
				"wires": wires([]string{nrID("route/" + key)})},
			node{"id": nrID("route/" + key), "type": "subflow:" + sf, "z": tab, "name": e.Name, "x": 480, "y": y,
				"env": []node{
					{"name": "ENDPOINT", "type": "str", "value": e.Name},
					{"name": "ENDPOINT_PATH", "type": "str", "value": e.Path},
					{"name": "FALLBACK", "type": "json", "value": string(fb)},
					{"name": "FALLBACK_STATUS", "type": "str", "value": status},
					{"name": "CALLER_AUTH_ONLY", "type": "str", "value": callerAuthOnly},
				},
				"wires": wires([]string{nrID("out/" + key)})},
			node{"id": nrID("out/" + key), "type": "http response", "z": tab, "name": "", "statusCode": "",
				"headers": node{}, "x": 700, "y": y, "wires": wires()},
		)
	}
	ay := 60 + 50*len(l.Endpoints) + 40
	admin := nrID("admin/fn")
	flow = append(flow,
		node{"id": nrID("admin/get"), "type": "http in", "z": tab, "name": "GET /flowgate-admin/routes",
			"url": "/flowgate-admin/routes", "method": "get", "upload": false, "swaggerDoc": "", "x": 180, "y": ay,
			"wires": wires([]string{admin})},
		node{"id": nrID("admin/put"), "type": "http in", "z": tab, "name": "PUT /flowgate-admin/routes",
			"url": "/flowgate-admin/routes", "method": "put", "upload": false, "swaggerDoc": "", "x": 180, "y": ay + 50,
			"wires": wires([]string{admin})},
		fn(t, admin, tab, "flowgate admin: routes", "admin.js", 1, cryptoLib, 480, ay+25, wires([]string{nrID("admin/out")})),
		node{"id": nrID("admin/out"), "type": "http response", "z": tab, "name": "", "statusCode": "", "headers": node{},
			"x": 700, "y": ay + 25, "wires": wires()},
	)
	flow = append(flow, node{
		"id": originals, "type": "tab", "label": "flowgate rollback targets", "disabled": false,
		"info": "The switch \"local\" calls the link in named original:<endpoint>. Put your original function node " +
			"for that endpoint between its link in and its return link (or paste its code into the placeholder).",
	})
	// A node of this tab that throws while answering hands the request back
	// (the caught message keeps its return path) instead of leaving the
	// caller to the link call's timeout.
	flow = append(flow,
		node{"id": nrID("orig/catch"), "type": "catch", "z": originals, "name": "an original node failed",
			"scope": nil, "uncaught": false, "x": 170, "y": 40, "wires": wires([]string{nrID("orig/failed")})},
		fn(t, nrID("orig/failed"), originals, "original failed", "original-failed.js", 1, nil, 420, 40,
			wires([]string{nrID("orig/failed/out")})),
		node{"id": nrID("orig/failed/out"), "type": "link out", "z": originals, "name": "return",
			"mode": "return", "links": []any{}, "x": 650, "y": 40, "wires": wires()},
	)
	for i, name := range names {
		y := 120 + 60*i
		flow = append(flow,
			node{"id": nrID("orig/in/" + name), "type": "link in", "z": originals, "name": "original:" + name,
				"links": []any{}, "x": 150, "y": y, "wires": wires([]string{nrID("orig/fn/" + name)})},
			fn(t, nrID("orig/fn/"+name), originals, "original "+name, "original.js", 1, nil, 420, y,
				wires([]string{nrID("orig/out/" + name)})),
			node{"id": nrID("orig/out/" + name), "type": "link out", "z": originals, "name": "return",
				"mode": "return", "links": []any{}, "x": 650, "y": y, "wires": wires()},
		)
	}
	return flow
}

func dashboardFlow(t *testing.T) []node {
	tab := nrID("tab/dashboard")
	id := func(s string) string { return nrID("dashboard/" + s) }
	flow := []node{{
		"id": tab, "type": "tab", "label": "flowgate queue dashboard", "disabled": false,
		"info": "Polls flowgate every 10 s: queue-status (booking operations; needs FLOWGATE_MONITORING_USER and " +
			"FLOWGATE_MONITORING_PASSWORD, flowgate's monitoring credentials) and signed GET /queue/stats " +
			"(VM tasks; needs HMAC_SECRET). The counts are in the status of the two display nodes. See flows/README.md.",
	}}
	for i, part := range []struct{ key, label, req, show string }{
		{"booking", "booking queue", "booking-queue-request.js", "booking-queue-status.js"},
		{"tasks", "task queue", "task-queue-request.js", "task-queue-status.js"},
	} {
		y := 80 + 100*i
		var libs []map[string]string
		if part.key == "tasks" {
			libs = cryptoLib
		}
		flow = append(flow,
			node{"id": id(part.key + "/tick"), "type": "inject", "z": tab, "name": "every 10 s",
				"props": []node{{"p": "payload"}}, "repeat": "10", "crontab": "", "once": true, "onceDelay": "2",
				"topic": "", "payload": "", "payloadType": "date", "x": 140, "y": y,
				"wires": wires([]string{id(part.key + "/req")})},
			fn(t, id(part.key+"/req"), tab, part.label+" request", part.req, 1, libs, 360, y,
				wires([]string{id(part.key + "/http")})),
			node{"id": id(part.key + "/http"), "type": "http request", "z": tab, "name": "flowgate", "method": "use",
				"ret": "obj", "paytoqs": "ignore", "url": "", "tls": "", "persist": false, "proxy": "",
				"insecureHTTPParser": false, "authType": "", "senderr": false, "headers": []any{}, "x": 570, "y": y,
				"wires": wires([]string{id(part.key + "/show")})},
			fn(t, id(part.key+"/show"), tab, part.label, part.show, 1, nil, 760, y,
				wires([]string{id(part.key + "/debug")})),
			node{"id": id(part.key + "/debug"), "type": "debug", "z": tab, "name": part.label, "active": true,
				"tosidebar": true, "console": false, "tostatus": false, "complete": "payload", "targetType": "msg",
				"statusVal": "", "statusType": "auto", "x": 970, "y": y, "wires": []any{}},
		)
	}
	return flow
}

func marshalFlow(t *testing.T, flow []node) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(flow); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNodeRedFlowsGenerated: the committed flows are exactly what
// endpoints.json and src/ give (-update rewrites them).
func TestNodeRedFlowsGenerated(t *testing.T) {
	l := loadEndpoints(t)
	for file, flow := range map[string][]node{proxyFile: proxyFlow(t, l), dashboardFile: dashboardFlow(t)} {
		want := marshalFlow(t, flow)
		if *updateFlows || os.Getenv("UPDATE_GOLDEN") == "1" {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what endpoints.json and node-red/src generate; run go test ./flows/ -run TestNodeRedFlowsGenerated -update", file)
		}
	}
}

// TestNodeRedEndpointList: every URL the production flow answers (the
// observed shapes, contracts/testdata/nodered-shapes.json) is in the list,
// each list row is one http in of the proxy flow, and names and URLs are
// unique per method.
func TestNodeRedEndpointList(t *testing.T) {
	l := loadEndpoints(t)
	raw, err := os.ReadFile("../contracts/testdata/nodered-shapes.json")
	if err != nil {
		t.Fatal(err)
	}
	var shapes map[string]json.RawMessage
	if err := json.Unmarshal(raw, &shapes); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range l.Endpoints {
		key := e.Method + " " + e.URL(l.BasePath)
		if listed[key] {
			t.Errorf("%s listed twice", key)
		}
		listed[key] = true
		if !slices.Contains([]string{"GET", "POST", "PUT", "DELETE", "PATCH"}, e.Method) || e.Name == "" || e.Path == "" {
			t.Errorf("bad row %+v", e)
		}
		if e.Group == "ops" && !e.CallerAuthOnly {
			t.Errorf("%s: an ops endpoint without callerAuthOnly would get FLOWGATE_TOKEN", key)
		}
		if !slices.Contains([]string{"read", "write", "ops"}, e.Group) {
			t.Errorf("%s: group %q, want read, write or ops", key, e.Group)
		}
	}
	for key := range shapes {
		if !listed[key] {
			t.Errorf("the original answers %s but endpoints.json does not list it", key)
		}
	}
	var flow []node
	b, err := os.ReadFile(proxyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &flow); err != nil {
		t.Fatal(err)
	}
	ins := map[string]bool{}
	for _, n := range flow {
		if n["type"] == "http in" && !strings.HasPrefix(fmt.Sprint(n["url"]), "/flowgate-admin/") {
			ins[strings.ToUpper(fmt.Sprint(n["method"]))+" "+fmt.Sprint(n["url"])] = true
		}
	}
	if len(ins) != len(listed) {
		t.Errorf("proxy flow has %d endpoint http in nodes, the list %d rows", len(ins), len(listed))
	}
	for key := range listed {
		if !ins[key] {
			t.Errorf("no http in for %s", key)
		}
	}
}

// TestNodeRedFunctionSyntax: every function node body compiles as Node-RED
// wraps it (an async function of msg with node, env, global, crypto…).
func TestNodeRedFunctionSyntax(t *testing.T) {
	nodeBin := nodeJS(t)
	entries, err := os.ReadDir(filepath.Join(nodeRedDir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		src := jsSource(t, e.Name())
		wrapped := "'use strict';\n(async function (msg, node, env, global, flow, context, crypto, Buffer) {\n" + src + "\n});\n"
		f := filepath.Join(dir, e.Name())
		if err := os.WriteFile(f, []byte(wrapped), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(nodeBin, "--check", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", e.Name(), err, out)
		}
	}
}

// nrHarness runs one function node body under Node.js the way Node-RED
// does (msg, node, env, global, crypto, Buffer in scope; a top-level
// return), with Date.now fixed, and prints {"out": <returned msg>,
// "status": <last node.status>}.
const nrHarness = `'use strict';
const fs = require('fs');
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const realNow = Date.now;
Date.now = () => spec.now_ms;
let status = null;
const node = { status: (s) => { status = s; }, warn: () => {}, error: () => {} };
const env = { get: (k) => spec.env[k] };
const ctx = {};
const global = { get: (k) => ctx[k], set: (k, v) => { ctx[k] = v; } };
const run = new Function('msg', 'node', 'env', 'global', 'crypto', 'Buffer', spec.code);
const out = run(spec.msg, node, env, global, require('crypto'), Buffer);
process.stdout.write(JSON.stringify({ out: out, status: status }));
`

type nrStatus struct {
	Fill  string `json:"fill"`
	Shape string `json:"shape"`
	Text  string `json:"text"`
}

func runFunctionNode(t *testing.T, src string, msg any, env map[string]string, now time.Time) (json.RawMessage, nrStatus) {
	t.Helper()
	nodeBin := nodeJS(t)
	dir := t.TempDir()
	h := filepath.Join(dir, "harness.js")
	spec, _ := json.Marshal(map[string]any{"code": jsSource(t, src), "msg": msg, "env": env, "now_ms": now.UnixMilli()})
	specPath := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(h, []byte(nrHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nodeBin, h, specPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", src, err, out)
	}
	var res struct {
		Out    json.RawMessage `json:"out"`
		Status nrStatus        `json:"status"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: %v: %s", src, err, out)
	}
	return res.Out, res.Status
}

// TestNodeRedDashboardStatusTexts: the seed's Status Node Display (grey
// Idle counts, blue processing, yellow retry wait, red errors) from
// queue-status answers, and the task-queue texts from /queue/stats.
func TestNodeRedDashboardStatusTexts(t *testing.T) {
	retryAt := fixedNow.Add(12300 * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
	lastErr := "CLOUD9_ERROR: An unknown error occurred."
	booking := []struct {
		name string
		msg  map[string]any
		want nrStatus
	}{
		{"idle", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 3, "pending": 1, "processing": 0, "completed": 2, "failed": 0,
			"operations": []any{map[string]any{"id": "op-1", "status": "pending", "nextRetryAt": nil}}}},
			nrStatus{"grey", "ring", "Idle - P:1 C:2 F:0"}},
		{"retry waiting", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 1, "pending": 1, "processing": 0, "completed": 0, "failed": 0,
			"operations": []any{map[string]any{"id": "op-1", "status": "pending", "nextRetryAt": retryAt}}}},
			nrStatus{"yellow", "ring", "Rate limited - retry in 13s"}},
		{"processing", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 1, "pending": 0, "processing": 1, "completed": 0, "failed": 0,
			"operations": []any{map[string]any{"id": "op-7", "status": "processing", "attempts": 1}}}},
			nrStatus{"blue", "dot", "Processing op-7 (attempt 2)"}},
		{"failed", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 2, "pending": 0, "processing": 0, "completed": 1, "failed": 1,
			"operations": []any{map[string]any{"id": "op-2", "status": "failed", "lastError": lastErr}}}},
			nrStatus{"red", "ring", "Error: 1 failed - " + lastErr + " | Idle - P:0 C:1 F:1"}},
		{"unreachable", map[string]any{"statusCode": "ECONNREFUSED", "payload": "RequestError: connect ECONNREFUSED"},
			nrStatus{"red", "ring", "Error: queue-status ECONNREFUSED"}},
		{"idle, the whole queue", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 0, "pending": 0, "processing": 0,
			"completed": 0, "failed": 0, "operations": []any{}, "scope": "all"}},
			nrStatus{"grey", "ring", "Idle - P:0 C:0 F:0"}},
		// Without the monitoring credentials flowgate answers only the
		// operations a caller names: not the queue, so no counts to show.
		{"no monitoring credentials", map[string]any{"statusCode": 200, "payload": map[string]any{"total": 0, "pending": 0, "processing": 0,
			"completed": 0, "failed": 0, "operations": []any{}, "scope": "lookup"}},
			nrStatus{"red", "ring", "Error: queue-status needs the monitoring credentials (FLOWGATE_MONITORING_USER)"}},
	}
	for _, c := range booking {
		_, got := runFunctionNode(t, "booking-queue-status.js", c.msg, nil, fixedNow)
		if got != c.want {
			t.Errorf("booking queue, %s: status %+v, want %+v", c.name, got, c.want)
		}
	}
	stats := func(pending, done, errs, dlq, retry int) map[string]any {
		return map[string]any{"statusCode": 200, "payload": map[string]any{"success": true, "dlq": dlq, "retry_waiting": retry, "total": pending + done + errs,
			"by_status": map[string]int{"PENDING": pending, "PROCESSING": 0, "DONE": done, "ERROR": errs}}}
	}
	tasks := []struct {
		name string
		msg  map[string]any
		want nrStatus
	}{
		{"idle", stats(4, 7, 0, 0, 0), nrStatus{"grey", "ring", "Idle - P:4 C:7 F:0"}},
		{"retry waiting", stats(0, 7, 2, 0, 2), nrStatus{"yellow", "ring", "Retry waiting - 2 tasks"}},
		{"dead letters", stats(0, 7, 3, 1, 2), nrStatus{"red", "ring", "Error: 1 dead letters | Idle - P:0 C:7 F:3"}},
		{"refused", map[string]any{"statusCode": 401, "payload": map[string]any{"success": false, "error": map[string]any{"code": "unauthorized", "message": "signature does not match"}}},
			nrStatus{"red", "ring", "Error: queue/stats signature does not match"}},
	}
	for _, c := range tasks {
		_, got := runFunctionNode(t, "task-queue-status.js", c.msg, nil, fixedNow)
		if got != c.want {
			t.Errorf("task queue, %s: status %+v, want %+v", c.name, got, c.want)
		}
	}
}
