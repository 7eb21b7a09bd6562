package flows_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/n8ntest"
	"github.com/flowgate/flowgate/test/redistest"
)

// ---- a real n8n in front of the flowgate binary ---------------------------------

// n8nWorkerID is the WORKER_ID the worker example runs with in the test.
const n8nWorkerID = "n8n-e2e-worker"

// TestN8nVersionPinned: docker-compose.yml runs the n8n image of the version
// test/n8n-install installs and TestN8nEndToEnd runs.
func TestN8nVersionPinned(t *testing.T) {
	install, err := os.ReadFile(filepath.Join("..", "test", "n8n-install"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^N8N_VERSION=(\S+)$`).FindSubmatch(install)
	if m == nil {
		t.Fatal("test/n8n-install sets no N8N_VERSION=")
	}
	compose, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	img := regexp.MustCompile(`(?m)^\s+image:\s*"?(n8nio/n8n\S*?)"?\s*$`).FindSubmatch(compose)
	if img == nil {
		t.Fatal("docker-compose.yml has no n8nio/n8n image")
	}
	if want := "n8nio/n8n:" + string(m[1]); string(img[1]) != want {
		t.Errorf("docker-compose.yml runs %s, want %s (the version the test runs)", img[1], want)
	}
}

// webhookAnswer is what the caller of the Phase 1 webhook gets.
type webhookAnswer struct {
	status      int
	contentType string
	body        []byte
}

func (a webhookAnswer) String() string {
	return fmt.Sprintf("%d %s %s", a.status, a.contentType, a.body)
}

// n8nRig is TestN8nEndToEnd's fixture: flowgate on a real Redis and one
// n8n process with both workflows imported and Phase 1 active; the steps
// run on it in order.
type n8nRig struct {
	api     *flowgate
	p       *flowgatetest.Proc
	n8n     *n8ntest.Instance
	run     string // this run's suffix for encounter ids
	hookURL string // Phase 1's webhook
	client  *http.Client
	start   time.Time
}

// TestN8nEndToEnd runs n8n (test/n8n-install's version) with both workflows
// of n8n/ against the flowgate binary on a real Redis, as the guide sets it
// up: import (twice: the ids keep one copy of each), activate Phase 1,
// start. Then it creates tasks through Phase 1's webhook and runs the worker
// example headless (`n8n execute`), and checks every state through
// flowgate's signed API. One n8n process serves every subtest; each n8n
// command boots n8n (15–25 s on 2 cores), so the test takes 2–4 minutes.
func TestN8nEndToEnd(t *testing.T) {
	rig := startN8n(t)
	t.Run("one task", rig.oneTask)
	t.Run("batch", rig.batch)
	t.Run("same task twice in one second", rig.sameTaskTwice)
	t.Run("invalid input gets flowgate's 400 and reason", rig.invalidInput)
	t.Run("worker: claim, ACK", rig.workerAck)
	t.Run("worker: claim, FAIL, requeue, dead letter", rig.workerFail)
	t.Run("flowgate down: 502 in flowgate's shape", rig.flowgateDown)
	t.Logf("TestN8nEndToEnd: %v in all", time.Since(rig.start).Round(time.Second))
}

// startN8n starts flowgate and n8n as the guide sets them up: import
// (twice: the ids keep one copy of each), activate Phase 1, start.
func startN8n(t *testing.T) *n8nRig {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skips n8n and the flowgate binary")
	}
	n8ntest.Dir(t) // installs once; skips, saying why, without npm
	start := time.Now()
	db := redistest.New(t)
	p := flowgatetest.Start(t, map[string]string{
		"REDIS_URL": db.URL(), "HMAC_SECRET": testSecret, "BOOKING_AUTH_SECRET": "flows-test-booking-secret-0123456789",
		// A FAILed task is back within seconds, so the worker can fail it again.
		"REQUEUE_BACKOFF_BASE": "1s", "REQUEUE_BACKOFF_MAX": "1s",
	})
	api := &flowgate{t: t, base: p.Base, client: &http.Client{Timeout: 30 * time.Second}}

	n8n := n8ntest.New(t, map[string]string{
		"FLOWGATE_URL": p.Base, "HMAC_SECRET": testSecret, "WORKER_ID": n8nWorkerID,
		// What the guide and docker-compose.yml give n8n.
		"NODE_FUNCTION_ALLOW_BUILTIN": "crypto", "N8N_BLOCK_ENV_ACCESS_IN_NODE": "false",
	})
	files := []string{"flows/n8n/phase1-create-task.json", "flows/n8n/vm-worker-example.json"}
	for range 2 {
		if out := n8n.Import(t, files...); !strings.Contains(out, "Successfully imported 2 workflows") {
			t.Fatalf("n8n import:workflow:\n%s", out)
		}
	}
	list, err := n8n.CLI(t, 3*time.Minute, "list:workflow")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^(\w+)\|flowgate · `).FindAllStringSubmatch(list, -1)
	if len(listed) != 2 || listed[0][1] == listed[1][1] {
		t.Fatalf("after importing both files twice, n8n list:workflow shows %d flowgate workflows, want 2 (stable ids):\n%s", len(listed), list)
	}
	for _, l := range listed {
		if l[1] != workflowIDs["phase1-create-task.json"] && l[1] != workflowIDs["vm-worker-example.json"] {
			t.Errorf("n8n list:workflow shows id %s, not one of the workflows' own ids", l[1])
		}
	}
	if out, err := n8n.CLI(t, 3*time.Minute, "update:workflow", "--id="+workflowIDs["phase1-create-task.json"], "--active=true"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("n8n update:workflow: %s", lastLine(out))
	}
	n8n.Start(t)
	t.Logf("n8n %s up %v after the test's start (install check, flowgate, 2 imports, list, activate, start)", n8n.Base, time.Since(start).Round(time.Second))

	return &n8nRig{api: api, p: p, n8n: n8n, run: strconv.FormatInt(time.Now().UnixNano(), 36),
		hookURL: n8n.Base + "/webhook/flowgate-phase1-create-task", client: &http.Client{Timeout: 60 * time.Second}, start: start}
}

// fg is flowgate's API for a step (its failures are the step's).
func (rig *n8nRig) fg(t *testing.T) *flowgate { c := *rig.api; c.t = t; return &c }

// hook posts body to Phase 1's webhook and returns what its caller gets.
func (rig *n8nRig) hook(t *testing.T, body string) webhookAnswer {
	t.Helper()
	resp, err := rig.client.Post(rig.hookURL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", rig.hookURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return webhookAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

// created checks a webhook answer for a created (or duplicate) task and returns it.
func (rig *n8nRig) created(t *testing.T, a webhookAnswer, wantStatus int, wantDup bool) contracts.Task {
	t.Helper()
	var res contracts.CreateResponse
	if err := json.Unmarshal(a.body, &res); err != nil || a.status != wantStatus || !res.Success || res.Duplicate != wantDup || !strings.HasPrefix(a.contentType, "application/json") {
		t.Fatalf("webhook answer %v, want %d application/json with success and duplicate %v", a, wantStatus, wantDup)
	}
	return res.Task
}

// execute runs the worker example once, headless.
func (rig *n8nRig) execute(t *testing.T) {
	t.Helper()
	began := time.Now()
	out, err := rig.n8n.Execute(t, workflowIDs["vm-worker-example.json"])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("n8n execute --id=%s: %v", workflowIDs["vm-worker-example.json"], time.Since(began).Round(100*time.Millisecond))
	if !strings.Contains(out, `"POST /ack or /fail"`) {
		t.Fatalf("the worker's run did not reach POST /ack or /fail (no task claimed?):\n%s", out)
	}
}

// oneTask: a task created through Phase 1's webhook is PENDING in flowgate.
func (rig *n8nRig) oneTask(t *testing.T) {
	run := rig.run
	enc := "n8n-one-" + run
	a := rig.hook(t, `{"encounter_id":"`+enc+`","payload":{"name":"Zoë 🚑","n":1}}`)
	task := rig.created(t, a, http.StatusCreated, false)
	got := rig.fg(t).task(task.QueueID)
	if got.EncounterID != enc || got.Status != contracts.StatusPending || got.Priority != contracts.PriorityNormal || !jsonEqual(string(got.Payload), `{"name":"Zoë 🚑","n":1}`) {
		t.Errorf("flowgate has %+v, want the webhook's task PENDING", got)
	}
}

// batch: a batch through the webhook creates each task.
func (rig *n8nRig) batch(t *testing.T) {
	run := rig.run
	a := rig.hook(t, `{"tasks":[{"encounter_id":"n8n-b1-`+run+`","payload":{}},{"encounter_id":"n8n-b2-`+run+`","payload":{"x":1},"priority":"LOW"}]}`)
	var res contracts.BatchCreateResponse
	if err := json.Unmarshal(a.body, &res); err != nil || a.status != http.StatusCreated || res.Created != 2 || len(res.Results) != 2 {
		t.Fatalf("batch answer %v, want 201 with 2 created", a)
	}
	for i, r := range res.Results {
		got := rig.fg(t).task(r.Task.QueueID)
		if want := fmt.Sprintf("n8n-b%d-%s", i+1, run); got.EncounterID != want || got.Status != contracts.StatusPending {
			t.Errorf("batch task %d: %s %s, want %s PENDING", i, got.EncounterID, got.Status, want)
		}
	}
}

// sameTaskTwice: two callers send the same task at the same moment, right
// after a second begins, so both are signed within that second: one creates
// it, the other gets it as a duplicate (before version 2 with a nonce, the
// second was refused as a replay and its caller got n8n's bare 500). A
// third right after is a duplicate too.
func (rig *n8nRig) sameTaskTwice(t *testing.T) {
	run, client, hookURL := rig.run, rig.client, rig.hookURL
	for try := 1; ; try++ {
		enc := fmt.Sprintf("n8n-twice-%s-%d", run, try)
		body := `{"encounter_id":"` + enc + `","payload":{"same":true}}`
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		began := time.Now()
		answers := make([]webhookAnswer, 2)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(hookURL, "application/json", strings.NewReader(body))
				if err != nil {
					answers[i] = webhookAnswer{body: []byte(err.Error())}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				answers[i] = webhookAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), b}
			}()
		}
		wg.Wait()
		sameSecond := time.Now().Unix() == began.Unix()
		if answers[0].status == http.StatusOK {
			answers[0], answers[1] = answers[1], answers[0]
		}
		first := rig.created(t, answers[0], http.StatusCreated, false)
		second := rig.created(t, answers[1], http.StatusOK, true)
		if second.QueueID != first.QueueID {
			t.Errorf("the duplicate answered task %s, want %s", second.QueueID, first.QueueID)
		}
		third := rig.created(t, rig.hook(t, body), http.StatusOK, true)
		if third.QueueID != first.QueueID {
			t.Errorf("the third request answered task %s, want %s", third.QueueID, first.QueueID)
		}
		if sameSecond {
			return
		}
		if try == 3 {
			t.Fatalf("3 tries: the two webhook calls never both finished within one second (n8n too slow?)")
		}
		t.Logf("try %d: the two calls spanned a second boundary; again", try)
	}
}

// invalidInput: invalid input gets flowgate's 400 and reason; an empty
// body creates no demo task.
func (rig *n8nRig) invalidInput(t *testing.T) {
	run := rig.run
	cases := []struct {
		name, body, field, message string
	}{
		{"encounter_id a number", `{"encounter_id":42,"payload":{}}`, "encounter_id", `field "encounter_id" must be string, got number`},
		{"empty body, no demo task", ``, "encounter_id", "encounter_id"},
		{"bad priority", `{"encounter_id":"n8n-bad-` + run + `","payload":{},"priority":"URGENT"}`, "priority", "URGENT"},
	}
	for _, c := range cases {
		a := rig.hook(t, c.body)
		var e contracts.ErrorResponse
		if err := json.Unmarshal(a.body, &e); err != nil || a.status != http.StatusBadRequest || e.Success || e.Error.Code != contracts.CodeInvalid ||
			!strings.Contains(e.Error.Message, c.message) || e.Error.Details["field"] != c.field || !strings.HasPrefix(a.contentType, "application/json") {
			t.Errorf("%s: the caller got %v, want 400 invalid naming %s (%q)", c.name, a, c.field, c.message)
		}
	}
	// No demo task came out of the empty body.
	status, out := rig.fg(t).do(http.MethodGet, "/queue?limit=1000", nil, nil)
	var list contracts.ListResponse
	if err := json.Unmarshal(out, &list); err != nil || status != http.StatusOK {
		t.Fatalf("GET /queue: %d %s", status, out)
	}
	for _, task := range list.Tasks {
		if strings.HasPrefix(task.EncounterID, "demo-") {
			t.Errorf("a webhook call created the demo task %s", task.EncounterID)
		}
	}
}

// workerAck: the worker example claims a task and ACKs it.
func (rig *n8nRig) workerAck(t *testing.T) {
	run := rig.run
	enc := "n8n-ack-" + run
	task := rig.created(t, rig.hook(t, `{"encounter_id":"`+enc+`","priority":"HIGH","payload":{"work":"ok"}}`), http.StatusCreated, false)
	rig.execute(t)
	got := rig.fg(t).task(task.QueueID)
	var pp struct {
		ExperityActions struct {
			ProcessedBy string `json:"processed_by"`
		} `json:"experityActions"`
	}
	_ = json.Unmarshal(got.ParsedPayload, &pp)
	if got.Status != contracts.StatusDone || got.WorkerID != n8nWorkerID || pp.ExperityActions.ProcessedBy != n8nWorkerID || got.ClaimedAt == nil {
		t.Errorf("after the worker's run: status %s worker %q parsed_payload %s claimed_at %v; want DONE by %s",
			got.Status, got.WorkerID, got.ParsedPayload, got.ClaimedAt, n8nWorkerID)
	}
}

// workerFail: the worker example FAILs a task, which is requeued, then
// dead-lettered on its second FAIL.
func (rig *n8nRig) workerFail(t *testing.T) {
	run := rig.run
	enc := "n8n-fail-" + run
	task := rig.created(t, rig.hook(t, `{"encounter_id":"`+enc+`","priority":"HIGH","max_attempts":2,"payload":{"simulate_failure":"disk full on /dev/sdz"}}`),
		http.StatusCreated, false)
	rig.execute(t)
	got := rig.fg(t).task(task.QueueID)
	if got.Status != contracts.StatusError || got.Attempts != 1 || got.InDLQ() || got.ErrorMessage != "disk full on /dev/sdz" {
		t.Fatalf("after the first FAIL: status %s attempts %d dlq %v error %q; want ERROR, 1 attempt, requeued, the worker's message",
			got.Status, got.Attempts, got.InDLQ(), got.ErrorMessage)
	}
	deadline := time.Now().Add(60 * time.Second)
	for got.Status != contracts.StatusPending {
		if time.Now().After(deadline) {
			t.Fatalf("the FAILed task is not PENDING again after 60 s (REQUEUE_BACKOFF_BASE=1s): %s", got.Status)
		}
		// A signed GET is accepted once per second (the same signature
		// again is a replay), so poll no faster.
		time.Sleep(1100 * time.Millisecond)
		got = rig.fg(t).task(task.QueueID)
	}
	if got.Priority != contracts.PriorityHigh {
		t.Errorf("requeued with priority %s, want HIGH", got.Priority)
	}
	rig.execute(t)
	got = rig.fg(t).task(task.QueueID)
	if got.Status != contracts.StatusError || got.Attempts != 2 || !got.InDLQ() || got.ErrorMessage != contracts.DLQErrorMessage {
		t.Fatalf("after the second FAIL: status %s attempts %d dlq %v error %q; want ERROR, 2 attempts, a dead letter",
			got.Status, got.Attempts, got.InDLQ(), got.ErrorMessage)
	}
	status, out := rig.fg(t).do(http.MethodGet, "/queue?dlq=true&encounter_id="+enc, nil, nil)
	var list contracts.ListResponse
	if err := json.Unmarshal(out, &list); err != nil || status != http.StatusOK || len(list.Tasks) != 1 || list.Tasks[0].QueueID != task.QueueID {
		t.Errorf("GET /queue?dlq=true: %d %s, want the task", status, out)
	}
}

// flowgateDown: with flowgate stopped the caller gets a 502 in flowgate's
// shape.
func (rig *n8nRig) flowgateDown(t *testing.T) {
	run, p := rig.run, rig.p
	if code, took := p.Stop(); code != 0 {
		t.Logf("flowgate stopped with %d after %v", code, took)
	}
	a := rig.hook(t, `{"encounter_id":"n8n-down-`+run+`","payload":{}}`)
	var e contracts.ErrorResponse
	if err := json.Unmarshal(a.body, &e); err != nil || a.status != http.StatusBadGateway || e.Error.Code != "unavailable" || !strings.Contains(e.Error.Message, "ECONNREFUSED") {
		t.Errorf("the caller got %v, want 502 unavailable naming ECONNREFUSED", a)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
