package flows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
)

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
	Target  string            `json:"target"` // Path + "?nonce=…", where it is sent and what is signed
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

// runItems runs code with env and input items (the json of each) and
// returns the json of the items it outputs; now zero means the real clock.
func runItems(t *testing.T, code string, env map[string]string, items []any, now time.Time) ([]json.RawMessage, error) {
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
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	var out []map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the Code node must return an array of items, got %s: %v", stdout.String(), err)
	}
	res := make([]json.RawMessage, 0, len(out))
	for _, item := range out {
		for k := range item {
			if k != "json" && k != "pairedItem" && k != "binary" {
				t.Errorf("output item has key %q; n8n items have json, binary, pairedItem", k)
			}
		}
		res = append(res, item["json"])
	}
	return res, nil
}

// runCode runs a signing Code node and returns the requests it builds.
func runCode(t *testing.T, code string, env map[string]string, items []any, now time.Time) ([]request, error) {
	t.Helper()
	out, err := runItems(t, code, env, items, now)
	if err != nil {
		return nil, err
	}
	reqs := make([]request, 0, len(out))
	for _, j := range out {
		var r request
		if err := json.Unmarshal(j, &r); err != nil {
			t.Fatalf("output item json %s: %v", j, err)
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
		{name: "webhook, empty body", items: []any{map[string]any{
			"headers": map[string]any{"content-length": "0"}, "params": map[string]any{}, "query": map[string]any{}, "body": map[string]any{},
		}}, check: func(t *testing.T, reqs []request) {
			// flowgate answers it 400 and the caller sees why; no demo task.
			wantPaths(t, reqs, "/queue")
			if reqs[0].Body != "{}" {
				t.Errorf("an empty webhook body became %s, want {} sent as it is (a demo task from a webhook call?)", reqs[0].Body)
			}
		}},
		{name: "webhook, invalid task", items: []any{map[string]any{
			"body": map[string]any{"encounter_id": 42, "payload": map[string]any{}},
		}}, check: func(t *testing.T, reqs []request) {
			wantPaths(t, reqs, "/queue")
			if reqs[0].Body != `{"encounter_id":42,"payload":{}}` {
				t.Errorf("body %s, want the webhook's body unchanged", reqs[0].Body)
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

var nonceTarget = regexp.MustCompile(`^(/[^?]*)\?nonce=[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkTarget: r is sent to its path with a fresh nonce (a UUID) as the
// only query parameter.
func checkTarget(t *testing.T, r request) {
	t.Helper()
	if m := nonceTarget.FindStringSubmatch(r.Target); m == nil || m[1] != r.Path {
		t.Errorf("%s: target %q, want %s?nonce=<uuid v4>", r.Path, r.Target, r.Path)
	}
}

// TestCodeNodesSignLikeGo runs every signing Code node under Node.js with
// n8n's globals stubbed and checks each request it builds: it goes to its
// path with a fresh nonce in the query (the target), is signed with version
// 2 exactly as signature.SignV2 signs that target for the same timestamp,
// body and secret, flowgate's Verifier accepts it, the URL of the HTTP node
// it feeds is FLOWGATE_URL + target, and the body decodes into the route's
// contract. Run twice within the same second (a fixed clock), the same
// input gives two requests flowgate accepts both of: no replay.
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
			if httpURL != "={{ $env.FLOWGATE_URL }}{{ $json.target }}" {
				t.Errorf("%s: the HTTP node after %q has url %q; it must send to FLOWGATE_URL + the signed target", wf.file, n.Name, httpURL)
			}
			for _, fx := range fixtures {
				t.Run(n.Name+"/"+fx.name, func(t *testing.T) {
					env := map[string]string{"FLOWGATE_URL": "http://flowgate:8080", "HMAC_SECRET": testSecret, "WORKER_ID": "vm-7"}
					v := verifier(t, signature.ModeHMAC, fixedNow)
					var first []request
					for run := range 2 {
						reqs, err := runCode(t, code, env, fx.items, fixedNow)
						if err != nil {
							t.Fatal(err)
						}
						fx.check(t, reqs)
						for i, r := range reqs {
							checkTarget(t, r)
							ts, sig := signature.SignV2([]byte(testSecret), fixedNow, r.Method, r.Target, []byte(r.Body))
							if r.Headers["X-Signature-Version"] != "2" || r.Headers["X-Timestamp"] != ts || r.Headers["X-Signature"] != sig || len(r.Headers) != 3 {
								t.Errorf("%s: headers %v, want only X-Signature-Version 2, X-Timestamp %s, X-Signature %s (signature.SignV2 of %s)", r.Path, r.Headers, ts, sig, r.Target)
							}
							// The verifier remembers every signature: the second run,
							// in the same second with the same bodies, must not be a
							// replay of the first.
							if err := v.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: r.Target, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
								t.Errorf("%s (run %d): flowgate's verifier refuses it: %v", r.Target, run+1, err)
							}
							if run == 1 && i < len(first) && (first[i].Target == r.Target || first[i].Headers["X-Signature"] == r.Headers["X-Signature"]) {
								t.Errorf("%s: two runs in one second sent the same target %s and signature: the second is a replay", r.Path, r.Target)
							}
						}
						first = reqs
					}

					// Behind a path prefix: the prefix is signed as part of the target.
					env["FLOWGATE_URL"] = "https://gw.example/flowgate/"
					reqs, err := runCode(t, code, env, fx.items, fixedNow)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range reqs {
						target := "/flowgate" + r.Target
						ts, sig := signature.SignV2([]byte(testSecret), fixedNow, r.Method, target, []byte(r.Body))
						if r.Headers["X-Signature-Version"] != "2" || r.Headers["X-Timestamp"] != ts || r.Headers["X-Signature"] != sig {
							t.Errorf("%s behind /flowgate: headers %v, want version 2, X-Timestamp %s, X-Signature %s (signature.SignV2 of %s)", r.Path, r.Headers, ts, sig, target)
						}
						if err := v.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: target, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
							t.Errorf("%s behind /flowgate: flowgate's verifier refuses it: %v", r.Path, err)
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
							if err := tv.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: r.Target, Header: headerFunc(r.Headers), Body: []byte(r.Body)}); err != nil {
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

// phase1Code returns the jsCode of the Phase 1 node named name.
func phase1Code(t *testing.T, name string) string {
	t.Helper()
	for _, wf := range loadWorkflows(t) {
		if n, ok := wf.node(name); ok && filepath.Base(wf.file) == "phase1-create-task.json" {
			return n.str("jsCode")
		}
	}
	t.Fatalf("phase1-create-task.json has no node %q", name)
	return ""
}

// TestPhase1DemoTaskOnManualRun: the Manual Trigger's branch makes one demo
// task, which the signing node sends like a webhook's task.
func TestPhase1DemoTaskOnManualRun(t *testing.T) {
	nodeJS(t)
	out, err := runItems(t, phase1Code(t, "Demo task"), map[string]string{}, []any{map[string]any{}}, time.Time{})
	if err != nil || len(out) != 1 {
		t.Fatalf("Demo task: %d items, %v; want one", len(out), err)
	}
	var item map[string]any
	if err := json.Unmarshal(out[0], &item); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLOWGATE_URL": "http://flowgate:8080", "HMAC_SECRET": testSecret}
	reqs, err := runCode(t, phase1Code(t, "Build & sign POST /queue"), env, []any{item}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	wantPaths(t, reqs, "/queue")
	c := decodeBody[contracts.CreateTaskRequest](t, reqs[0])
	if !strings.HasPrefix(c.EncounterID, "demo-") || len(c.Payload) == 0 {
		t.Errorf("demo task %s: want encounter_id demo-… and a payload", reqs[0].Body)
	}
}

// TestPhase1AnswerNode: the Code node between POST /queue and the Respond
// to Webhook node hands flowgate's status, content type and body on (the
// body as n8n parsed it, serialized again), and turns "no HTTP answer" into
// 502 in flowgate's error shape.
func TestPhase1AnswerNode(t *testing.T) {
	nodeJS(t)
	code := phase1Code(t, "flowgate's answer")
	invalid := map[string]any{"success": false, "error": map[string]any{"code": "invalid", "message": `field "encounter_id" must be string, got number`,
		"request_id": "r1", "details": map[string]any{"field": "encounter_id"}}}
	items := []any{
		map[string]any{"statusCode": 400, "statusMessage": "Bad Request", "headers": map[string]any{"content-type": "application/json"}, "body": invalid},
		map[string]any{"statusCode": 200, "headers": map[string]any{}, "body": map[string]any{"duplicate": true}},
		map[string]any{"statusCode": 502, "headers": map[string]any{"content-type": "text/plain"}, "body": "proxy: no upstream"},
		map[string]any{"error": map[string]any{"message": "connect ECONNREFUSED 127.0.0.1:1", "code": "ECONNREFUSED"}},
	}
	got, err := runAnswer(t, code, items)
	if err != nil {
		t.Fatal(err)
	}
	wantInvalid, _ := json.Marshal(invalid)
	want := []answer{
		{400, "application/json", string(wantInvalid)},
		{200, "application/json; charset=utf-8", `{"duplicate":true}`},
		{502, "text/plain", "proxy: no upstream"},
	}
	if len(got) != len(items) {
		t.Fatalf("%d items out, want %d: %v", len(got), len(items), got)
	}
	for i, w := range want {
		g := got[i]
		if g.StatusCode != w.StatusCode || g.ContentType != w.ContentType {
			t.Errorf("item %d: %d %q, want %d %q", i, g.StatusCode, g.ContentType, w.StatusCode, w.ContentType)
		}
		if !jsonEqual(g.Body, w.Body) && g.Body != w.Body {
			t.Errorf("item %d: body %s, want %s", i, g.Body, w.Body)
		}
	}
	var e contracts.ErrorResponse
	if g := got[3]; g.StatusCode != http.StatusBadGateway || !strings.HasPrefix(g.ContentType, "application/json") {
		t.Errorf("no answer: %d %q, want 502 application/json", g.StatusCode, g.ContentType)
	}
	if err := json.Unmarshal([]byte(got[3].Body), &e); err != nil || e.Success || e.Error.Code != "unavailable" || !strings.Contains(e.Error.Message, "ECONNREFUSED") {
		t.Errorf("no answer: body %s (%v), want flowgate's error shape, code unavailable, naming the cause", got[3].Body, err)
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

type answer struct {
	StatusCode  int    `json:"statusCode"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

func runAnswer(t *testing.T, code string, items []any) ([]answer, error) {
	t.Helper()
	out, err := runItems(t, code, map[string]string{}, items, time.Time{})
	if err != nil {
		return nil, err
	}
	res := make([]answer, 0, len(out))
	for _, j := range out {
		var a answer
		if err := json.Unmarshal(j, &a); err != nil {
			return nil, fmt.Errorf("output %s: %w", j, err)
		}
		res = append(res, a)
	}
	return res, nil
}
