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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

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
		"REDIS_URL": db.URL(), "HMAC_SECRET": testSecret, "BOOKING_AUTH_SECRET": "flows-test-booking-secret-0123456789", "BUFFER_API_TOKEN": "flows-test-buffer-token-0123456789",
		// A FAILed task comes back after 5 min, not during the test.
		"REQUEUE_BACKOFF_BASE": "5m", "REQUEUE_BACKOFF_MAX": "5m",
	})
	return &flowgate{t: t, base: p.Base, client: &http.Client{Timeout: 30 * time.Second}}
}

// do sends body to path with headers as given (nil: signed here, version 1
// for POST /queue, version 2 elsewhere) and returns the status and answer.
func (fg *flowgate) do(method, path string, body []byte, headers map[string]string) (int, []byte) {
	fg.t.Helper()
	req, err := http.NewRequest(method, fg.base+path, bytes.NewReader(body))
	if err != nil {
		fg.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if headers == nil && method == http.MethodPost && path == "/queue" {
		signature.SignRequest(req, []byte(testSecret), time.Now(), body) // the seed's route keeps version 1
	} else if headers == nil {
		signature.SignRequestV2(req, []byte(testSecret), time.Now(), body) // the others require version 2
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

// e2eRig is TestEndToEnd's fixture: the flowgate binary on a leased Redis
// database; the steps run on it in order.
type e2eRig struct {
	fg  *flowgate
	run string // this run's suffix for encounter ids
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building and running flowgate")
	}
	rig := &e2eRig{fg: startFlowgate(t), run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	t.Run("worker.sh ACKs three tasks", rig.workerAcks)
	t.Run("n8n Code nodes against flowgate", rig.codeNodes)
	t.Run("worker.sh with the wrong secret exits 1", rig.wrongSecret)
	t.Run("worker.sh FAILs a task", rig.workerFails)
	t.Run("worker.sh kills a job past JOB_TIMEOUT", rig.jobTimeout)
}

// workerAcks: worker.sh claims three tasks, heartbeats while working and
// ACKs each with its work command's output.
func (rig *e2eRig) workerAcks(t *testing.T) {
	fg, run := rig.fg, rig.run
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
}

// codeNodes: the n8n workflows' Code nodes sign requests flowgate accepts:
// Phase 1 creates (a repeat within the second is a duplicate, a resend a
// replay), the example worker claims and ACKs, an empty claim long-polls.
func (rig *e2eRig) codeNodes(t *testing.T) {
	fg, run := rig.fg, rig.run
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
	send := func(r request) (int, []byte) { return fg.do(r.Method, r.Target, []byte(r.Body), r.Headers) }

	// Phase 1: create two tasks; the second is sent twice more, signed
	// anew each time within the same second: a duplicate, not a replay.
	var created []string
	for i := range 2 {
		task := []any{map[string]any{
			"body": map[string]any{"encounter_id": fmt.Sprintf("enc-n8n-%s-%d", run, i), "payload": map[string]any{"via": "n8n", "name": "Zoë 🚑"}},
		}}
		reqs, err := runCode(t, codes["Build & sign POST /queue"], env, task, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		status, out := send(reqs[0])
		if status != http.StatusCreated {
			t.Fatalf("Phase 1 task %d: %d %s", i, status, out)
		}
		var res contracts.CreateResponse
		_ = json.Unmarshal(out, &res)
		created = append(created, res.Task.QueueID)
		// The HTTP node retrying the same request is a replay.
		if status, out := send(reqs[0]); status != http.StatusUnauthorized || !strings.Contains(string(out), signature.ReasonReplayed) {
			t.Errorf("the same signed request again: %d %s, want 401 %s", status, out, signature.ReasonReplayed)
		}
		if i == 1 {
			now := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
			for range 2 {
				again, err := runCode(t, codes["Build & sign POST /queue"], env, task, now)
				if err != nil {
					t.Fatal(err)
				}
				status, out := send(again[0])
				_ = json.Unmarshal(out, &res)
				if status != http.StatusOK || !res.Duplicate || res.Task.QueueID != created[1] {
					t.Errorf("the same task signed again in the same second: %d %s, want 200 duplicate of %s", status, out, created[1])
				}
			}
		}
	}

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
}

// wrongSecret: worker.sh with the wrong secret exits 1.
func (rig *e2eRig) wrongSecret(t *testing.T) {
	fg := rig.fg
	cmd := exec.Command("bash", workerScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "FLOWGATE_URL=" + fg.base,
		"HMAC_SECRET=not-the-secret-0123456789", "WORKER_ID=e2e-wrong", "WAIT_MS=0", "WORK_CMD=true"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "bad_signature") {
		t.Errorf("wrong secret: %v\n%s\nwant exit 1 naming bad_signature", err, out)
	}
}

// workerFails: worker.sh FAILs a task; this worker signs version 2 and
// reads JSON with python3.
func (rig *e2eRig) workerFails(t *testing.T) {
	fg, run := rig.fg, rig.run
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
}

// jobTimeout: a job that hangs is killed at JOB_TIMEOUT and its task FAILed.
func (rig *e2eRig) jobTimeout(t *testing.T) {
	fg, run := rig.fg, rig.run
	id := fg.create("enc-hang-" + run)
	start := time.Now()
	log := runWorker(t, fg, "WORKER_ID=e2e-hang", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=jq",
		"HEARTBEAT_INTERVAL=1", "JOB_TIMEOUT=2", "WORK_CMD=cat >/dev/null; echo 'stuck on a modal' >&2; sleep 60")
	took := time.Since(start)
	t.Logf("worker log (%s):\n%s", took.Round(time.Millisecond), log)
	task := fg.task(id)
	if task.Status != contracts.StatusError || task.Attempts != 1 ||
		!strings.Contains(task.ErrorMessage, "timed out after 2 s") || !strings.Contains(task.ErrorMessage, "stuck on a modal") {
		t.Errorf("after JOB_TIMEOUT: status %s attempts %d error_message %q; want ERROR, 1 attempt, timed out with stderr",
			task.Status, task.Attempts, task.ErrorMessage)
	}
	if took > 30*time.Second {
		t.Errorf("the worker took %s for a 2 s JOB_TIMEOUT", took)
	}
}
