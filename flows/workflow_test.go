package flows_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ---- n8n workflow files -----------------------------------------------------

type workflow struct {
	file        string
	ID          string                                 `json:"id"`
	Active      bool                                   `json:"active"`
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
	OnError     string         `json:"onError"`
}

type wfConnection struct {
	Node  string `json:"node"`
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// n8nTypes are the node types the workflows may use, with the type versions
// n8n 1.x ships for them.
var n8nTypes = map[string][]float64{
	"n8n-nodes-base.manualTrigger":    {1},
	"n8n-nodes-base.webhook":          {1, 1.1, 2, 2.1},
	"n8n-nodes-base.scheduleTrigger":  {1, 1.1, 1.2},
	"n8n-nodes-base.code":             {1, 2},
	"n8n-nodes-base.httpRequest":      {4, 4.1, 4.2},
	"n8n-nodes-base.if":               {2, 2.1, 2.2},
	"n8n-nodes-base.noOp":             {1},
	"n8n-nodes-base.stickyNote":       {1},
	"n8n-nodes-base.respondToWebhook": {1, 1.1, 1.2, 1.3, 1.4},
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
				// target is the signed path + query (with the nonce).
				if url := n.str("url"); url != "={{ $env.FLOWGATE_URL }}{{ $json.target }}" {
					t.Errorf("HTTP node %q: url %q, want FLOWGATE_URL + the signed target ={{ $env.FLOWGATE_URL }}{{ $json.target }}", n.Name, url)
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

// ancestors returns every node from which name can be reached.
func (wf workflow) ancestors(name string) map[string]bool {
	seen := map[string]bool{}
	todo := []string{name}
	for len(todo) > 0 {
		n := todo[0]
		todo = todo[1:]
		for _, p := range wf.parents(n) {
			if !seen[p] {
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	return seen
}

// workflowIDs are the ids the workflows keep across imports; the guide and
// the end-to-end test name them.
var workflowIDs = map[string]string{
	"phase1-create-task.json": "flowgatePhase1Ct",
	"vm-worker-example.json":  "flowgateVmWorker",
}

// TestWorkflowsHaveStableIDs: each workflow has its own fixed id, so that
// `n8n import:workflow` of the same file again updates the workflow instead
// of adding a copy (a copy of Phase 1, once activated, took its webhook
// path over). n8n's own ids are 16 letters and digits; `n8n execute --id`
// takes at most 16 characters. The files ship inactive (import deactivates
// anyway) and the guide tells the ids.
func TestWorkflowsHaveStableIDs(t *testing.T) {
	guide, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	idRE := regexp.MustCompile(`^[A-Za-z0-9]{16}$`)
	seen := map[string]string{}
	for _, wf := range loadWorkflows(t) {
		base := filepath.Base(wf.file)
		if want, ok := workflowIDs[base]; !ok {
			t.Errorf("%s: no id listed in workflowIDs", base)
		} else if wf.ID != want {
			t.Errorf("%s: id %q, want %q", base, wf.ID, want)
		}
		if !idRE.MatchString(wf.ID) {
			t.Errorf("%s: id %q is not 16 letters and digits like n8n's own", base, wf.ID)
		}
		if other, dup := seen[wf.ID]; dup {
			t.Errorf("%s and %s share the id %q", base, other, wf.ID)
		}
		seen[wf.ID] = base
		if wf.Active {
			t.Errorf("%s ships active; the guide activates Phase 1 as a step of its own", base)
		}
		if !strings.Contains(string(guide), "--id="+wf.ID) {
			t.Errorf("flows/README.md never names --id=%s (%s)", wf.ID, base)
		}
	}
}

// TestPhase1AnswersWithFlowgatesAnswer: the webhook caller gets flowgate's
// status and body (a 4xx with its reason, a duplicate's 200), not n8n's bare
// 500. The webhook responds through a Respond to Webhook node; the HTTP node
// never errors on a status, keeps the body as text and, without any HTTP
// answer, hands the error on; a Code node maps both to {statusCode, body}.
// The demo task of a manual run is reachable from the Manual Trigger only.
func TestPhase1AnswersWithFlowgatesAnswer(t *testing.T) {
	var wf workflow
	for _, w := range loadWorkflows(t) {
		if filepath.Base(w.file) == "phase1-create-task.json" {
			wf = w
		}
	}
	if wf.file == "" {
		t.Fatal("phase1-create-task.json not loaded")
	}
	hook, ok := wf.node("Phase 1 Webhook")
	if !ok || hook.Type != "n8n-nodes-base.webhook" {
		t.Fatal(`no webhook node "Phase 1 Webhook"`)
	}
	if got := hook.str("responseMode"); got != "responseNode" {
		t.Errorf("webhook responseMode %q, want responseNode (the Respond to Webhook node answers)", got)
	}
	if got := hook.str("path"); got != "flowgate-phase1-create-task" {
		t.Errorf("webhook path %q; the guide and the test call flowgate-phase1-create-task", got)
	}
	http, _ := wf.node("POST /queue")
	resp := map[string]any{}
	if o, ok := http.Parameters["options"].(map[string]any); ok {
		if r, ok := o["response"].(map[string]any); ok {
			resp, _ = r["response"].(map[string]any)
		}
	}
	// The response format stays autodetect: n8n 1.97 cannot give a raw-body
	// request's answer as text (its stream reaches the item unread).
	for k, v := range map[string]any{"fullResponse": true, "neverError": true, "responseFormat": nil} {
		if resp[k] != v {
			t.Errorf("POST /queue options.response.response.%s = %v, want %v", k, resp[k], v)
		}
	}
	if http.OnError != "continueRegularOutput" {
		t.Errorf("POST /queue onError = %q, want continueRegularOutput (no answer at all: the caller gets 502, not n8n's 500)", http.OnError)
	}
	var respond []wfNode
	for _, n := range wf.Nodes {
		if n.Type == "n8n-nodes-base.respondToWebhook" {
			respond = append(respond, n)
		}
	}
	if len(respond) != 1 {
		t.Fatalf("%d Respond to Webhook nodes, want 1", len(respond))
	}
	r := respond[0]
	if up := wf.ancestors(r.Name); !up["POST /queue"] || !up["Phase 1 Webhook"] {
		t.Errorf("%q is not downstream of the webhook and POST /queue: %v", r.Name, up)
	}
	if ps := wf.parents(r.Name); len(ps) != 1 || ps[0] != "flowgate's answer" {
		t.Errorf("%q is fed by %v, want the Code node \"flowgate's answer\"", r.Name, ps)
	}
	if ps := wf.parents("flowgate's answer"); len(ps) != 1 || ps[0] != "POST /queue" {
		t.Errorf("\"flowgate's answer\" is fed by %v, want POST /queue", ps)
	}
	if r.str("respondWith") != "text" || r.str("responseBody") != "={{ $json.body }}" {
		t.Errorf("%q: respondWith %q responseBody %q, want text ={{ $json.body }} (flowgate's body as a string)", r.Name, r.str("respondWith"), r.str("responseBody"))
	}
	opts, _ := r.Parameters["options"].(map[string]any)
	if opts["responseCode"] != "={{ $json.statusCode }}" {
		t.Errorf("%q: responseCode %v, want ={{ $json.statusCode }}", r.Name, opts["responseCode"])
	}
	if h, _ := json.Marshal(opts["responseHeaders"]); !strings.Contains(strings.ToLower(string(h)), `"content-type","value":"={{ $json.contenttype }}"`) {
		t.Errorf("%q: response headers %s, want Content-Type ={{ $json.contentType }}", r.Name, h)
	}
	for _, n := range wf.Nodes {
		if n.Type != "n8n-nodes-base.code" || !strings.Contains(n.str("jsCode"), "'demo-'") {
			continue
		}
		for a := range wf.ancestors(n.Name) {
			if d, _ := wf.node(a); d.Type == "n8n-nodes-base.webhook" {
				t.Errorf("the demo task node %q is reachable from the webhook %q: a webhook call would create a demo task", n.Name, a)
			}
		}
		if n.signing() {
			t.Errorf("the demo task is made in the signing node %q; it belongs on the Manual Trigger's branch alone", n.Name)
		}
	}
}

// TestWorkerRunsHeadless: the worker example has a Manual Trigger beside its
// schedule, feeding the same claim, so `n8n execute --id=…` (which starts
// from a Manual Trigger) and *Test workflow* run it once.
func TestWorkerRunsHeadless(t *testing.T) {
	for _, wf := range loadWorkflows(t) {
		if filepath.Base(wf.file) != "vm-worker-example.json" {
			continue
		}
		kinds := map[string]bool{}
		for _, p := range wf.parents("Sign claim") {
			n, _ := wf.node(p)
			kinds[n.Type] = true
		}
		if !kinds["n8n-nodes-base.manualTrigger"] || !kinds["n8n-nodes-base.scheduleTrigger"] {
			t.Errorf("Sign claim is fed by %v, want a Manual Trigger and the Schedule Trigger", wf.parents("Sign claim"))
		}
		return
	}
	t.Fatal("vm-worker-example.json not loaded")
}
