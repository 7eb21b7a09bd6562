package flows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// testSecret is the HMAC secret of every test here (≥ 16 bytes, as flowgate
// requires).
const testSecret = "flows-test-secret-0123456789abcdef"

// fixedNow is the clock of the Code nodes and of the verifier in the
// offline tests: 2026-01-01T00:00:00Z.
var fixedNow = time.Unix(1767225600, 0)

// ---- n8n workflow files -----------------------------------------------------

type workflow struct {
	file        string
	Name        string                                 `json:"name"`
	Nodes       []wfNode                               `json:"nodes"`
	Connections map[string]map[string][][]wfConnection `json:"connections"`
	Settings    map[string]any                         `json:"settings"`
}

type wfNode struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Type        string         `json:"type"`
	TypeVersion float64        `json:"typeVersion"`
	Position    []float64      `json:"position"`
	Parameters  map[string]any `json:"parameters"`
	WebhookID   string         `json:"webhookId"`
	RetryOnFail bool           `json:"retryOnFail"`
}

type wfConnection struct {
	Node  string `json:"node"`
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// n8nTypes are the node types the workflows may use, with the type versions
// n8n 1.x ships for them.
var n8nTypes = map[string][]float64{
	"n8n-nodes-base.manualTrigger":   {1},
	"n8n-nodes-base.webhook":         {1, 1.1, 2, 2.1},
	"n8n-nodes-base.scheduleTrigger": {1, 1.1, 1.2},
	"n8n-nodes-base.code":            {1, 2},
	"n8n-nodes-base.httpRequest":     {4, 4.1, 4.2},
	"n8n-nodes-base.if":              {2, 2.1, 2.2},
	"n8n-nodes-base.noOp":            {1},
	"n8n-nodes-base.stickyNote":      {1},
}

var triggerTypes = map[string]bool{
	"n8n-nodes-base.manualTrigger":   true,
	"n8n-nodes-base.webhook":         true,
	"n8n-nodes-base.scheduleTrigger": true,
}

// The workflows this directory must ship.
var wantWorkflows = []string{"phase1-create-task.json", "vm-worker-example.json"}

func loadWorkflows(t *testing.T) []workflow {
	t.Helper()
	files, err := filepath.Glob("n8n/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wantWorkflows {
		if !slices.Contains(files, filepath.Join("n8n", want)) {
			t.Errorf("n8n/%s is missing", want)
		}
	}
	var out []workflow
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Errorf("%s: not JSON: %v", f, err)
			continue
		}
		for _, k := range []string{"name", "nodes", "connections"} {
			if _, ok := top[k]; !ok {
				t.Errorf("%s: no %q", f, k)
			}
		}
		wf := workflow{file: f}
		if err := json.Unmarshal(raw, &wf); err != nil {
			t.Errorf("%s: not an n8n workflow: %v", f, err)
			continue
		}
		out = append(out, wf)
	}
	return out
}

func (wf workflow) node(name string) (wfNode, bool) {
	for _, n := range wf.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return wfNode{}, false
}

// parents returns the nodes with a connection into name.
func (wf workflow) parents(name string) []string {
	var out []string
	for src, outputs := range wf.Connections {
		for _, branches := range outputs {
			for _, branch := range branches {
				for _, c := range branch {
					if c.Node == name {
						out = append(out, src)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (n wfNode) str(key string) string {
	s, _ := n.Parameters[key].(string)
	return s
}

// signing reports whether n is a Code node that builds flowgate requests.
func (n wfNode) signing() bool {
	return n.Type == "n8n-nodes-base.code" && strings.Contains(n.str("jsCode"), "flowgateRequest(")
}

func TestWorkflowsAreWellFormed(t *testing.T) {
	for _, wf := range loadWorkflows(t) {
		t.Run(filepath.Base(wf.file), func(t *testing.T) {
			if strings.TrimSpace(wf.Name) == "" {
				t.Error("empty name")
			}
			if len(wf.Nodes) == 0 {
				t.Fatal("no nodes")
			}
			if wf.Connections == nil {
				t.Fatal("connections is not an object")
			}
			ids, names := map[string]bool{}, map[string]bool{}
			for _, n := range wf.Nodes {
				if n.ID == "" || ids[n.ID] {
					t.Errorf("node %q: id %q is empty or not unique", n.Name, n.ID)
				}
				ids[n.ID] = true
				if n.Name == "" || names[n.Name] {
					t.Errorf("node name %q is empty or not unique", n.Name)
				}
				names[n.Name] = true
				versions, ok := n8nTypes[n.Type]
				if !ok {
					t.Errorf("node %q: type %q is not an n8n 1.x node type this kit allows", n.Name, n.Type)
				} else if !slices.Contains(versions, n.TypeVersion) {
					t.Errorf("node %q: %s has no typeVersion %v in n8n 1.x (want one of %v)", n.Name, n.Type, n.TypeVersion, versions)
				}
				if len(n.Position) != 2 {
					t.Errorf("node %q: position %v is not [x, y]", n.Name, n.Position)
				}
				if n.Parameters == nil {
					t.Errorf("node %q: no parameters object", n.Name)
				}
				if n.Type == "n8n-nodes-base.webhook" && (n.WebhookID == "" || n.str("path") == "") {
					t.Errorf("webhook node %q needs a webhookId and a path", n.Name)
				}
				if n.Type == "n8n-nodes-base.code" && n.str("jsCode") == "" {
					t.Errorf("code node %q has no jsCode", n.Name)
				}
			}
			for src, outputs := range wf.Connections {
				s, ok := wf.node(src)
				if !ok {
					t.Errorf("connection from %q: no such node", src)
					continue
				}
				if s.Type == "n8n-nodes-base.stickyNote" {
					t.Errorf("sticky note %q has connections", src)
				}
				for kind, branches := range outputs {
					if kind != "main" {
						t.Errorf("connection from %q: output %q, want main", src, kind)
					}
					for _, branch := range branches {
						for _, c := range branch {
							d, ok := wf.node(c.Node)
							switch {
							case !ok:
								t.Errorf("connection %q → %q: no such node", src, c.Node)
							case c.Type != "main" || c.Index != 0:
								t.Errorf("connection %q → %q: type %q index %d, want main 0", src, c.Node, c.Type, c.Index)
							case c.Node == src:
								t.Errorf("node %q is connected to itself", src)
							case triggerTypes[d.Type] || d.Type == "n8n-nodes-base.stickyNote":
								t.Errorf("connection %q → %q: a %s takes no input", src, c.Node, d.Type)
							}
						}
					}
				}
			}
			// Every working node is reached from a trigger.
			for _, n := range wf.Nodes {
				if triggerTypes[n.Type] || n.Type == "n8n-nodes-base.stickyNote" {
					continue
				}
				if len(wf.parents(n.Name)) == 0 {
					t.Errorf("node %q has no input: nothing runs it", n.Name)
				}
			}
			if wf.Settings["executionOrder"] != "v1" {
				t.Errorf("settings.executionOrder = %v, want v1 (n8n 1.x)", wf.Settings["executionOrder"])
			}
		})
	}
}

var hex64 = regexp.MustCompile(`\b[0-9a-fA-F]{64}\b`)

// TestHTTPNodesSendWhatWasSigned: every HTTP Request node posts to
// FLOWGATE_URL the Code node's body string unchanged (raw, so n8n cannot
// re-serialize it) with the Code node's headers, is fed only by signing
// Code nodes, and does not retry (a retry resends a used signature).
func TestHTTPNodesSendWhatWasSigned(t *testing.T) {
	for _, wf := range loadWorkflows(t) {
		t.Run(filepath.Base(wf.file), func(t *testing.T) {
			raw, _ := os.ReadFile(wf.file)
			if m := hex64.Find(raw); m != nil {
				t.Errorf("a 64-hex-digit string (a secret or a signature?) is committed: %s", m)
			}
			for _, n := range wf.Nodes {
				if n.Type == "n8n-nodes-base.code" {
					for _, m := range regexp.MustCompile(`require\(\s*['"]([^'"]+)['"]\s*\)`).FindAllStringSubmatch(n.str("jsCode"), -1) {
						if m[1] != "crypto" {
							t.Errorf("code node %q requires %q; only crypto is allowed by the documented NODE_FUNCTION_ALLOW_BUILTIN=crypto", n.Name, m[1])
						}
					}
				}
				if n.Type != "n8n-nodes-base.httpRequest" {
					continue
				}
				want := map[string]string{
					"method":         "POST",
					"sendHeaders":    "true",
					"specifyHeaders": "json",
					"jsonHeaders":    "={{ JSON.stringify($json.headers) }}",
					"sendBody":       "true",
					"contentType":    "raw",
					"rawContentType": "application/json",
					"body":           "={{ $json.body }}",
				}
				for k, v := range want {
					if got := fmt.Sprint(n.Parameters[k]); got != v {
						t.Errorf("HTTP node %q: %s = %q, want %q", n.Name, k, got, v)
					}
				}
				if url := n.str("url"); !strings.HasPrefix(url, "={{ $env.FLOWGATE_URL }}") {
					t.Errorf("HTTP node %q: url %q does not start from $env.FLOWGATE_URL", n.Name, url)
				}
				if n.RetryOnFail {
					t.Errorf("HTTP node %q retries on fail: a retry resends the same signature, which flowgate refuses as a replay", n.Name)
				}
				parents := wf.parents(n.Name)
				if len(parents) == 0 {
					t.Errorf("HTTP node %q has no input", n.Name)
				}
				for _, p := range parents {
					if pn, _ := wf.node(p); !pn.signing() {
						t.Errorf("HTTP node %q is fed by %q, which is not a signing Code node", n.Name, p)
					}
				}
			}
		})
	}
}

// ---- running the Code nodes under Node.js ------------------------------------

// harness runs a Code node's jsCode the way n8n's "Run Once for All Items"
// mode does: an async function body with $env, $input, items and $json, and
// (as NODE_FUNCTION_ALLOW_BUILTIN=crypto allows) require. now_ms, when set,
// fixes Date.now.
const harness = `'use strict';
const fs = require('fs');
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
if (spec.now_ms) { Date.now = () => spec.now_ms; }
const $env = spec.env;
const items = spec.items.map((json) => ({ json }));
const $input = { all: () => items, first: () => items[0], last: () => items[items.length - 1], item: items[0] };
const $json = items.length ? items[0].json : {};
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
const run = new AsyncFunction('$env', '$input', 'items', '$json', 'require', spec.code);
run($env, $input, items, $json, require).then(
  (out) => { process.stdout.write(JSON.stringify(out)); },
  (err) => { process.stderr.write(String((err && err.stack) || err)); process.exit(3); });
`

// request is one item a signing Code node outputs.
type request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

func nodeJS(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node (Node.js) is not installed: the Code nodes' JavaScript cannot be run; install Node.js ≥ 18 to run this test")
	}
	return node
}

// runCode runs code with env and input items; now zero means the real clock.
func runCode(t *testing.T, code string, env map[string]string, items []any, now time.Time) ([]request, error) {
	t.Helper()
	node := nodeJS(t)
	dir := t.TempDir()
	h := filepath.Join(dir, "harness.js")
	if err := os.WriteFile(h, []byte(harness), 0o600); err != nil {
		t.Fatal(err)
	}
	var nowMS int64
	if !now.IsZero() {
		nowMS = now.UnixMilli()
	}
	spec, _ := json.Marshal(map[string]any{"code": code, "env": env, "items": items, "now_ms": nowMS})
	specPath := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, h, specPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var out []map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the Code node must return an array of items, got %s: %v", stdout.String(), err)
	}
	reqs := make([]request, 0, len(out))
	for _, item := range out {
		for k := range item {
			if k != "json" && k != "pairedItem" && k != "binary" {
				t.Errorf("output item has key %q; n8n items have json, binary, pairedItem", k)
			}
		}
		var r request
		if err := json.Unmarshal(item["json"], &r); err != nil {
			t.Fatalf("output item json %s: %v", item["json"], err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// codeFixture is an input of a signing Code node and what must come out.
type codeFixture struct {
	name  string
	items []any
	check func(t *testing.T, reqs []request)
}

func decodeBody[T any](t *testing.T, r request) T {
	t.Helper()
	var v T
	if err := contracts.DecodeJSON([]byte(r.Body), &v); err != nil {
		t.Fatalf("%s body %s: %v", r.Path, r.Body, err)
	}
	return v
}

func wantPaths(t *testing.T, reqs []request, paths ...string) {
	t.Helper()
	var got []string
	for _, r := range reqs {
		got = append(got, r.Path)
		if r.Method != http.MethodPost {
			t.Errorf("%s: method %q, want POST", r.Path, r.Method)
		}
	}
	if !slices.Equal(got, paths) {
		t.Fatalf("requests to %v, want %v", got, paths)
	}
}

const (
	uuid1 = "3f1c2b7a-9d4e-4c1b-8a2f-5e6d7c8b9a01"
	uuid2 = "3f1c2b7a-9d4e-4c1b-8a2f-5e6d7c8b9a02"
)

// claimAnswer is a POST /queue/claim answer as the HTTP Request node
// (fullResponse) hands it on.
func claimAnswer(body any) map[string]any {
	return map[string]any{"statusCode": 200, "statusMessage": "OK", "headers": map[string]any{"content-type": "application/json"}, "body": body}
}

var claimedTasks = map[string]any{"success": true, "tasks": []any{
	map[string]any{"queue_id": uuid1, "encounter_id": "enc-ok", "status": "PROCESSING", "worker_id": "vm-7",
		"payload": map[string]any{"patient": "Zoë \"Z\" Ñandú 🚑", "note": "line1\nline2\t%s\\"}},
	map[string]any{"queue_id": uuid2, "encounter_id": "enc-bad", "status": "PROCESSING", "worker_id": "vm-7",
		"payload": map[string]any{"simulate_failure": "disk full on /dev/sdz"}},
}}

// codeFixtures are the inputs of every signing Code node, by node name. A
// new signing Code node without fixtures fails the test.
var codeFixtures = map[string][]codeFixture{
	"Build & sign POST /queue": {
		{name: "manual trigger", items: []any{map[string]any{}}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/queue")
			c := decodeBody[contracts.CreateTaskRequest](t, reqs[0])
			if !strings.HasPrefix(c.EncounterID, "demo-") || len(c.Payload) == 0 {
				t.Errorf("demo task %s: want encounter_id demo-… and a payload", reqs[0].Body)
			}
		}},
		{name: "webhook, one task", items: []any{map[string]any{
			"headers": map[string]any{"content-type": "application/json"}, "params": map[string]any{}, "query": map[string]any{},
			"body": map[string]any{"encounter_id": "enc-ü-1", "priority": "HIGH",
				"payload": map[string]any{"name": "Zoë \"Z\" Ñandú 🚑", "text": "a\nb\u2028c </script> %s \\", "n": 1.5, "big": 12345678901234}},
		}}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/queue")
			c := decodeBody[contracts.CreateTaskRequest](t, reqs[0])
			if c.EncounterID != "enc-ü-1" || c.Priority != contracts.PriorityHigh || !strings.Contains(string(c.Payload), "Ñandú") {
				t.Errorf("body %s does not carry the webhook's task", reqs[0].Body)
			}
		}},
		{name: "webhook, batch and two items", items: []any{
			map[string]any{"body": map[string]any{"tasks": []any{
				map[string]any{"encounter_id": "enc-b1", "payload": map[string]any{}},
				map[string]any{"encounter_id": "enc-b2", "payload": nil},
			}}},
			map[string]any{"body": map[string]any{"encounter_id": "enc-2", "payload": []any{1, 2}}},
		}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/queue", "/queue")
			if b := decodeBody[contracts.BatchCreateRequest](t, reqs[0]); len(b.Tasks) != 2 {
				t.Errorf("batch body %s", reqs[0].Body)
			}
		}},
	},
	"Sign claim": {
		{name: "schedule tick", items: []any{map[string]any{"timestamp": "2026-01-01T00:00:00.000+00:00"}}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/queue/claim")
			c := decodeBody[contracts.ClaimRequest](t, reqs[0])
			if c.WorkerID != "vm-7" || c.Limit < 1 || c.WaitMS < 0 || c.WaitMS > contracts.MaxClaimWaitMS {
				t.Errorf("claim %s: want worker_id vm-7 (from $env.WORKER_ID), limit ≥ 1, wait_ms 0..%d", reqs[0].Body, contracts.MaxClaimWaitMS)
			}
			if !strings.Contains(reqs[0].Body, `"nonce":`) {
				t.Errorf("claim %s has no nonce: two claims in one second would be one signed request twice", reqs[0].Body)
			}
		}},
	},
	"Work, sign ACK or FAIL": {
		{name: "two claimed tasks", items: []any{claimAnswer(claimedTasks)}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/ack", "/fail")
			a := decodeBody[contracts.AckRequest](t, reqs[0])
			if a.QueueID != uuid1 || a.EncounterID != "enc-ok" || a.WorkerID != "vm-7" || len(a.ExperityActions) == 0 {
				t.Errorf("ack %s", reqs[0].Body)
			}
			f := decodeBody[contracts.FailRequest](t, reqs[1])
			if f.QueueID != uuid2 || f.EncounterID != "enc-bad" || f.ErrorMessage != "disk full on /dev/sdz" {
				t.Errorf("fail %s", reqs[1].Body)
			}
		}},
		{name: "answer body as a string", items: func() []any {
			b, _ := json.Marshal(claimedTasks)
			return []any{claimAnswer(string(b))}
		}(), check: func(t *testing.T, reqs []request) { wantPaths(t, reqs, "/ack", "/fail") }},
		{name: "no task", items: []any{claimAnswer(map[string]any{"success": true, "tasks": []any{}})}, check: func(t *testing.T, reqs []request) { wantPaths(t, reqs) }},
	},
}

// verifier is flowgate's own verifier with a fixed clock and an in-memory
// replay store.
func verifier(t *testing.T, mode signature.Mode, now time.Time) *signature.Verifier {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	v, err := signature.New(signature.Config{
		Mode: mode, Secret: []byte(testSecret), Token: "flows-test-token-0123456789",
		Now: func() time.Time { return now },
		Replay: signature.ReplayGuardFunc(func(_ context.Context, sig string, _ time.Duration) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			was := seen[sig]
			seen[sig] = true
			return was, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func headerFunc(h map[string]string) func(string) string {
	return func(k string) string {
		for hk, v := range h {
			if strings.EqualFold(hk, k) {
				return v
			}
		}
		return ""
	}
}

// TestCodeNodesSignLikeGo runs every signing Code node under Node.js with
// n8n's globals stubbed and checks each request it builds: the signature is
// the one signature.Sign (SignV2) computes for the same timestamp, body and
// secret, flowgate's Verifier accepts it, the URL of the HTTP node it feeds
// ends with its path, and the body decodes into the route's contract.
func TestCodeNodesSignLikeGo(t *testing.T) {
	nodeJS(t)
	covered := map[string]bool{}
	for _, wf := range loadWorkflows(t) {
		for _, n := range wf.Nodes {
			if !n.signing() {
				continue
			}
			fixtures, ok := codeFixtures[n.Name]
			if !ok {
				t.Errorf("%s: signing Code node %q has no fixtures in codeFixtures", wf.file, n.Name)
				continue
			}
			covered[n.Name] = true
			code := n.str("jsCode")
			var httpURL string
			for _, out := range wf.Connections[n.Name]["main"] {
				for _, c := range out {
					if d, _ := wf.node(c.Node); d.Type == "n8n-nodes-base.httpRequest" {
						httpURL = d.str("url")
					}
				}
			}
			for _, fx := range fixtures {
				t.Run(n.Name+"/"+fx.name, func(t *testing.T) {
					// Version 1: X-Timestamp + X-Signature over ts.body.
					env := map[string]string{"FLOWGATE_URL": "http://flowgate:8080", "HMAC_SECRET": testSecret, "WORKER_ID": "vm-7"}
					reqs, err := runCode(t, code, env, fx.items, fixedNow)
					if err != nil {
						t.Fatal(err)
					}
					fx.check(t, reqs)
					v := verifier(t, signature.ModeHMAC, fixedNow)
					for _, r := range reqs {
						ts, sig := signature.Sign([]byte(testSecret), fixedNow, []byte(r.Body))
						if r.Headers["X-Timestamp"] != ts || r.Headers["X-Signature"] != sig {
							t.Errorf("%s: headers %v, want X-Timestamp %s X-Signature %s (signature.Sign)", r.Path, r.Headers, ts, sig)
						}
						if len(r.Headers) != 2 {
							t.Errorf("%s: headers %v, want only X-Timestamp and X-Signature", r.Path, r.Headers)
						}
						if err := v.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: r.Path, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
							t.Errorf("%s: flowgate's verifier refuses it: %v", r.Path, err)
						}
						switch {
						case httpURL == "={{ $env.FLOWGATE_URL }}{{ $json.path }}":
						case httpURL == "={{ $env.FLOWGATE_URL }}"+r.Path:
						default:
							t.Errorf("%s: the HTTP node's url %q does not send it to FLOWGATE_URL + %s", r.Path, httpURL, r.Path)
						}
					}

					// Version 2 behind a path prefix: method and target signed.
					env["FLOWGATE_SIGNATURE_VERSION"] = "2"
					env["FLOWGATE_URL"] = "https://gw.example/flowgate/"
					reqs, err = runCode(t, code, env, fx.items, fixedNow)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range reqs {
						target := "/flowgate" + r.Path
						ts, sig := signature.SignV2([]byte(testSecret), fixedNow, r.Method, target, []byte(r.Body))
						if r.Headers["X-Signature-Version"] != "2" || r.Headers["X-Timestamp"] != ts || r.Headers["X-Signature"] != sig {
							t.Errorf("%s v2: headers %v, want version 2, X-Timestamp %s, X-Signature %s (signature.SignV2 of %s)", r.Path, r.Headers, ts, sig, target)
						}
						if err := v.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: target, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
							t.Errorf("%s v2: flowgate's verifier refuses it: %v", r.Path, err)
						}
					}

					// Token mode, with and without the secret.
					tv := verifier(t, signature.ModeToken, fixedNow)
					for _, withSecret := range []bool{true, false} {
						env := map[string]string{"FLOWGATE_URL": "http://flowgate:8080", "WEBHOOK_TOKEN": "flows-test-token-0123456789", "WORKER_ID": "vm-7"}
						if withSecret {
							env["HMAC_SECRET"] = testSecret
						}
						reqs, err := runCode(t, code, env, fx.items, fixedNow)
						if err != nil {
							t.Fatal(err)
						}
						for _, r := range reqs {
							if err := tv.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: r.Path, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
								t.Errorf("%s token mode: refused: %v (headers %v)", r.Path, err, r.Headers)
							}
							if _, signed := r.Headers["X-Signature"]; signed != withSecret {
								t.Errorf("%s token mode (secret set: %v): headers %v", r.Path, withSecret, r.Headers)
							}
						}
					}

					// Neither: the node fails and says what is missing.
					if len(reqs) > 0 {
						_, err = runCode(t, code, map[string]string{"FLOWGATE_URL": "http://flowgate:8080"}, fx.items, fixedNow)
						if err == nil || !strings.Contains(err.Error(), "HMAC_SECRET") {
							t.Errorf("without HMAC_SECRET and WEBHOOK_TOKEN: err = %v, want one naming HMAC_SECRET", err)
						}
					}
				})
			}
		}
	}
	for name := range codeFixtures {
		if !covered[name] {
			t.Errorf("codeFixtures has %q, which is no signing Code node of any workflow", name)
		}
	}
}

// ---- worker.sh ----------------------------------------------------------------

const workerScript = "worker/worker.sh"

func bashPath(t *testing.T) string {
	t.Helper()
	b, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	return b
}

// sourced runs script with worker.sh's functions loaded (source-only mode)
// and extra environment; args are $1….
func sourced(t *testing.T, env []string, script string, args ...string) (string, error) {
	t.Helper()
	full := `FLOWGATE_WORKER_SOURCE_ONLY=1; . "$0"; ` + script
	cmd := exec.Command(bashPath(t), append([]string{"-c", full, workerScript}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.String(), err
}

func TestWorkerScriptChecks(t *testing.T) {
	bash := bashPath(t)
	st, err := os.Stat(workerScript)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable (mode %v)", workerScript, st.Mode())
	}
	if out, err := exec.Command(bash, "-n", workerScript).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s", err, out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, workerScript).CombinedOutput(); err != nil {
			t.Errorf("shellcheck: %v\n%s", err, out)
		}
	} else {
		t.Log("shellcheck is not installed; skipped the lint")
	}
	// Sourcing in source-only mode prints nothing and leaves the shell's
	// options and traps as they were.
	out, err := sourced(t, nil, `printf '%s|%s' "$-" "$(trap -p)"; type sign sign_v2 json_get >/dev/null`)
	if err != nil {
		t.Fatal(err)
	}
	before, err := exec.Command(bash, "-c", `printf '%s|%s' "$-" "$(trap -p)"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if out != string(before) {
		t.Errorf("sourcing changed the shell: flags|traps %q, want %q", out, before)
	}
	// Misconfiguration exits 2 and names the variable.
	cmd := exec.Command(bash, workerScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "FLOWGATE_URL=http://127.0.0.1:1", "HMAC_SECRET=" + testSecret}
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), "WORK_CMD") {
		t.Errorf("without WORK_CMD: %v %s, want exit 2 naming WORK_CMD", err, msg)
	}
}

// signCases are bodies that trip up shell signing: format characters,
// backslashes, leading dashes, newlines (trailing too), non-ASCII.
var signCases = []string{
	"",
	"{}",
	`{"queue_id":"` + uuid1 + `","encounter_id":"enc-1","experityActions":{"a":[1,2,3]}}`,
	`{"note":"100% %s %d \\n \\\\ \"q\" $HOME $(id) ` + "`id`" + `"}`,
	"-n {\"dash\":true}",
	"line1\nline2\r\n\ttabbed\n\n",
	`{"name":"Zoë Ñandú 🚑 中文"}`,
	strings.Repeat(`{"k":"0123456789abcdef"},`, 4000),
}

// TestWorkerSignMatchesGo: worker.sh's sign and sign_v2 give the signatures
// of signature.Sign and SignV2, with openssl and with the python3 fallback.
func TestWorkerSignMatchesGo(t *testing.T) {
	secrets := []string{testSecret, `s3cr3t with spaces, $dollar, "quotes" & ümlaut`}
	backends := []struct {
		name string
		path string
	}{{"openssl", os.Getenv("PATH")}}
	if _, err := exec.LookPath("openssl"); err != nil {
		backends = nil
		t.Log("openssl is not installed; only the python3 fallback is checked")
	}
	if py := realPython(t); py != "" {
		dir := t.TempDir()
		if err := os.Symlink(py, filepath.Join(dir, "python3")); err != nil {
			t.Fatal(err)
		}
		backends = append(backends, struct{ name, path string }{"python3 (no openssl on PATH)", dir})
	}
	if len(backends) == 0 {
		t.Skip("neither openssl nor python3 is installed")
	}
	ts := fixedNow
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			for i, body := range signCases {
				for _, secret := range secrets {
					env := []string{"PATH=" + be.path, "HMAC_SECRET=" + secret}
					got, err := sourced(t, env, `sign "$1" "$2"; printf '|'; sign_v2 "$1" POST "$3" "$2"`,
						strconv.FormatInt(ts.Unix(), 10), body, "/queue/"+uuid1+"/heartbeat?x=1")
					if err != nil {
						t.Fatalf("case %d: %v", i, err)
					}
					_, want1 := signature.Sign([]byte(secret), ts, []byte(body))
					_, want2 := signature.SignV2([]byte(secret), ts, "POST", "/queue/"+uuid1+"/heartbeat?x=1", []byte(body))
					if want := want1 + "\n|" + want2 + "\n"; got != want {
						t.Errorf("case %d (%.40q…): sign|sign_v2 = %q, want %q", i, body, got, want)
					}
				}
			}
		})
	}
}

// realPython is the python3 executable itself (not a pyenv shim that needs
// PATH), or "".
func realPython(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		return ""
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestWorkerJSONHelpers: json_get, json_str and json_one agree between jq
// and python3, on the shapes the worker reads.
func TestWorkerJSONHelpers(t *testing.T) {
	claim, _ := json.Marshal(claimedTasks)
	tools := []string{}
	for _, tool := range []string{"jq", "python3"} {
		if _, err := exec.LookPath(tool); err == nil {
			tools = append(tools, tool)
		}
	}
	if len(tools) == 0 {
		t.Skip("neither jq nor python3 is installed")
	}
	tricky := "Zoë \"Z\" \\ \t\n 🚑 $HOME %s"
	for _, tool := range tools {
		t.Run(tool, func(t *testing.T) {
			env := []string{"JSON_TOOL=" + tool}
			out, err := sourced(t, env, `
				task=$(printf '%s' "$1" | json_get tasks 0)
				printf '%s\n' "$(printf '%s' "$task" | json_get queue_id)"
				printf '%s\n' "$(printf '%s' "$task" | json_get payload patient)"
				printf '[%s]\n' "$(printf '%s' "$1" | json_get tasks 5 queue_id)"
				printf '[%s]\n' "$(printf '%s' "$1" | json_get nothing)"
				printf '%s\n' "$(printf '%s' "$1" | json_get success)"
				json_str "$2"; echo
				printf '{"a":1}' | json_one && echo one
				printf '{"a":1} {"b":2}' | json_one || echo two
				printf 'not json' | json_one || echo bad
			`, string(claim), tricky)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out, "\n")
			want := []string{uuid1, "Zoë \"Z\" Ñandú 🚑", "[]", "[]", "true"}
			if len(lines) < 9 || !slices.Equal(lines[:5], want) {
				t.Fatalf("json_get output:\n%s\nwant first lines %q", out, want)
			}
			var s string
			if err := json.Unmarshal([]byte(lines[5]), &s); err != nil || s != tricky {
				t.Errorf("json_str gave %s → %q (%v), want %q", lines[5], s, err, tricky)
			}
			if got := strings.Join(lines[6:9], ","); got != "one,two,bad" {
				t.Errorf("json_one: %s, want one,two,bad", got)
			}
		})
	}
}

// ---- end to end against the flowgate binary ----------------------------------

type flowgate struct {
	t      *testing.T
	base   string
	client *http.Client
}

// startFlowgate runs the flowgate binary on a leased Redis database until
// the test ends.
func startFlowgate(t *testing.T) *flowgate {
	t.Helper()
	db := redistest.New(t)
	p := flowgatetest.Start(t, map[string]string{
		"REDIS_URL": db.URL(), "HMAC_SECRET": testSecret, "BOOKING_AUTH_SECRET": "flows-test-booking-secret-0123456789",
		// A FAILed task comes back after 5 min, not during the test.
		"REQUEUE_BACKOFF_BASE": "5m", "REQUEUE_BACKOFF_MAX": "5m",
	})
	return &flowgate{t: t, base: p.Base, client: &http.Client{Timeout: 30 * time.Second}}
}

// do sends body to path with headers as given (nil: signed here with
// signature.SignRequest) and returns the status and answer.
func (fg *flowgate) do(method, path string, body []byte, headers map[string]string) (int, []byte) {
	fg.t.Helper()
	req, err := http.NewRequest(method, fg.base+path, bytes.NewReader(body))
	if err != nil {
		fg.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if headers == nil {
		signature.SignRequest(req, []byte(testSecret), time.Now(), body)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := fg.client.Do(req)
	if err != nil {
		fg.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (fg *flowgate) create(encounter string) string {
	fg.t.Helper()
	body, _ := json.Marshal(contracts.CreateTaskRequest{EncounterID: encounter, Payload: json.RawMessage(`{"patient":"` + encounter + `"}`)})
	status, out := fg.do(http.MethodPost, "/queue", body, nil)
	if status != http.StatusCreated {
		fg.t.Fatalf("POST /queue: %d %s", status, out)
	}
	var res contracts.CreateResponse
	if err := json.Unmarshal(out, &res); err != nil {
		fg.t.Fatal(err)
	}
	return res.Task.QueueID
}

func (fg *flowgate) task(id string) contracts.Task {
	fg.t.Helper()
	status, out := fg.do(http.MethodGet, "/queue/"+id, nil, nil)
	if status != http.StatusOK {
		fg.t.Fatalf("GET /queue/%s: %d %s", id, status, out)
	}
	var res contracts.TaskResponse
	if err := json.Unmarshal(out, &res); err != nil {
		fg.t.Fatal(err)
	}
	return res.Task
}

// runWorker runs worker.sh to its end (at most 90 s) and returns its log.
func runWorker(t *testing.T, fg *flowgate, env ...string) string {
	t.Helper()
	for _, tool := range []string{"curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; worker.sh cannot run", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", workerScript)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"FLOWGATE_URL=" + fg.base, "HMAC_SECRET=" + testSecret,
	}, env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("worker.sh: %v\n%s", err, out)
	}
	return string(out)
}

// workOK is a WORK_CMD that checks it got its task on stdin, works for 1.5 s
// (so a heartbeat goes out at HEARTBEAT_INTERVAL=1) and prints its actions.
const workOK = `task=$(cat)
case "$task" in *"\"queue_id\":\"$TASK_QUEUE_ID\""*) ;; *) echo "task not on stdin" >&2; exit 9 ;; esac
sleep 1.5
printf '{"done_by":"%s","queue_id":"%s","attempts":%s,"note":"Zoë 🚑"}\n' "$WORKER_ID" "$TASK_QUEUE_ID" "$TASK_ATTEMPTS"`

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building and running flowgate")
	}
	fg := startFlowgate(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	t.Run("worker.sh ACKs three tasks", func(t *testing.T) {
		ids := map[string]bool{}
		for i := range 3 {
			ids[fg.create(fmt.Sprintf("enc-ack-%s-%d", run, i))] = true
		}
		log := runWorker(t, fg, "WORKER_ID=e2e-worker", "MAX_TASKS=3", "WAIT_MS=2000",
			"HEARTBEAT_INTERVAL=1", "JSON_TOOL=jq", "WORK_CMD="+workOK)
		t.Logf("worker log:\n%s", log)

		path := "/queue?status=DONE&limit=1000"
		status, out := fg.do(http.MethodGet, path, nil, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, out)
		}
		var list contracts.ListResponse
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, task := range list.Tasks {
			if !ids[task.QueueID] {
				continue
			}
			done++
			var pp struct {
				ExperityActions struct {
					DoneBy  string `json:"done_by"`
					QueueID string `json:"queue_id"`
					Note    string `json:"note"`
				} `json:"experityActions"`
			}
			if err := json.Unmarshal(task.ParsedPayload, &pp); err != nil {
				t.Errorf("%s parsed_payload %s: %v", task.QueueID, task.ParsedPayload, err)
			}
			if a := pp.ExperityActions; a.DoneBy != "e2e-worker" || a.QueueID != task.QueueID || a.Note != "Zoë 🚑" {
				t.Errorf("%s: experityActions %s, want the work command's output", task.QueueID, task.ParsedPayload)
			}
			if task.WorkerID != "e2e-worker" {
				t.Errorf("%s: worker_id %q", task.QueueID, task.WorkerID)
			}
			if task.ClaimedAt == nil || task.HeartbeatAt == nil || !task.HeartbeatAt.After(*task.ClaimedAt) {
				t.Errorf("%s: claimed_at %v heartbeat_at %v: no heartbeat reached flowgate while working", task.QueueID, task.ClaimedAt, task.HeartbeatAt)
			}
		}
		if done != 3 {
			t.Fatalf("%d of the 3 tasks are DONE", done)
		}
	})

	t.Run("n8n Code nodes against flowgate", func(t *testing.T) {
		nodeJS(t)
		codes := map[string]string{}
		for _, wf := range loadWorkflows(t) {
			for _, n := range wf.Nodes {
				if n.signing() {
					codes[n.Name] = n.str("jsCode")
				}
			}
		}
		env := map[string]string{"FLOWGATE_URL": fg.base, "HMAC_SECRET": testSecret, "WORKER_ID": "n8n-e2e"}
		send := func(r request) (int, []byte) { return fg.do(r.Method, r.Path, []byte(r.Body), r.Headers) }

		// Phase 1: create two tasks, the second signed with version 2.
		var created []string
		for i, version := range []string{"1", "2"} {
			env["FLOWGATE_SIGNATURE_VERSION"] = version
			reqs, err := runCode(t, codes["Build & sign POST /queue"], env, []any{map[string]any{
				"body": map[string]any{"encounter_id": fmt.Sprintf("enc-n8n-%s-%d", run, i), "payload": map[string]any{"via": "n8n", "name": "Zoë 🚑"}},
			}}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			status, out := send(reqs[0])
			if status != http.StatusCreated {
				t.Fatalf("Phase 1 (signature v%s): %d %s", version, status, out)
			}
			var res contracts.CreateResponse
			_ = json.Unmarshal(out, &res)
			created = append(created, res.Task.QueueID)
			// The HTTP node retrying the same request is a replay.
			if status, out := send(reqs[0]); status != http.StatusUnauthorized || !strings.Contains(string(out), signature.ReasonReplayed) {
				t.Errorf("the same signed request again: %d %s, want 401 %s", status, out, signature.ReasonReplayed)
			}
		}
		env["FLOWGATE_SIGNATURE_VERSION"] = "1"

		// The example worker: claim, then ACK.
		for range created {
			reqs, err := runCode(t, codes["Sign claim"], env, []any{map[string]any{}}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			status, out := send(reqs[0])
			if status != http.StatusOK {
				t.Fatalf("claim: %d %s", status, out)
			}
			var claim any
			_ = json.Unmarshal(out, &claim)
			reqs, err = runCode(t, codes["Work, sign ACK or FAIL"], env, []any{claimAnswer(claim)}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			wantPaths(t, reqs, "/ack")
			status, out = send(reqs[0])
			var ack contracts.WebhookResponse
			_ = json.Unmarshal(out, &ack)
			if status != http.StatusOK || ack.Status != contracts.StatusDone || !slices.Contains(created, ack.QueueID) {
				t.Errorf("ACK: %d %s", status, out)
			}
		}
		// Nothing left: the claim answers 204, which the IF node routes to
		// "Nothing pending".
		reqs, err := runCode(t, codes["Sign claim"], env, []any{map[string]any{}}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var claim contracts.ClaimRequest
		_ = json.Unmarshal([]byte(reqs[0].Body), &claim)
		start := time.Now()
		if status, out := send(reqs[0]); status != http.StatusNoContent || len(out) != 0 {
			t.Errorf("empty claim: %d %q, want 204 without a body", status, out)
		}
		if waited := time.Since(start); waited < time.Duration(claim.WaitMS)*time.Millisecond*9/10 {
			t.Errorf("empty claim answered after %v; the node asks for a long poll of %d ms", waited, claim.WaitMS)
		}
	})

	t.Run("worker.sh with the wrong secret exits 1", func(t *testing.T) {
		cmd := exec.Command("bash", workerScript)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "FLOWGATE_URL=" + fg.base,
			"HMAC_SECRET=not-the-secret-0123456789", "WORKER_ID=e2e-wrong", "WAIT_MS=0", "WORK_CMD=true"}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "bad_signature") {
			t.Errorf("wrong secret: %v\n%s\nwant exit 1 naming bad_signature", err, out)
		}
	})

	// This worker signs version 2 and reads JSON with python3.
	t.Run("worker.sh FAILs a task", func(t *testing.T) {
		id := fg.create("enc-fail-" + run)
		log := runWorker(t, fg, "WORKER_ID=e2e-failer", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=python3", "SIGNATURE_VERSION=2",
			"WORK_CMD=cat >/dev/null; echo 'disk full on /dev/sdz' >&2; exit 3")
		t.Logf("worker log:\n%s", log)
		task := fg.task(id)
		if task.Status != contracts.StatusError || task.Attempts != 1 || task.InDLQ() ||
			!strings.Contains(task.ErrorMessage, "status 3") || !strings.Contains(task.ErrorMessage, "disk full on /dev/sdz") {
			t.Errorf("after FAIL: status %s attempts %d dlq %v error_message %q; want ERROR, 1 attempt, the exit status and stderr",
				task.Status, task.Attempts, task.InDLQ(), task.ErrorMessage)
		}
		if !strings.Contains(log, "requeued true") {
			t.Errorf("the worker did not log flowgate's requeued answer")
		}
	})
}
