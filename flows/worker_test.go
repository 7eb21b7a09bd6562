package flows_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
)

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
		err = fmt.Errorf("%w: %s", err, stderr.String())
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

// TestWorkerPausesOnEmptyQueue: with WAIT_MS=0 a claim that finds nothing is
// answered at once; the worker then pauses IDLE_PAUSE seconds instead of
// claiming again in a tight loop. A fake flowgate answers every claim 204.
func TestWorkerPausesOnEmptyQueue(t *testing.T) {
	bash := bashPath(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; worker.sh cannot run")
	}
	var claims atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/queue/claim" {
			claims.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cmd := exec.Command(bash, workerScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "FLOWGATE_URL=" + srv.URL,
		"HMAC_SECRET=" + testSecret, "WORKER_ID=idle-1", "WAIT_MS=0", "IDLE_PAUSE=1", "WORK_CMD=true"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker.sh after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("worker.sh did not stop after SIGTERM:\n%s", out.String())
	}
	// One claim at once, then one per second: 3 or 4 in 3 s (a tight loop
	// made hundreds).
	if n := claims.Load(); n < 2 || n > 5 {
		t.Errorf("%d claims in 3 s with WAIT_MS=0 and IDLE_PAUSE=1, want 3 or 4\n%s", n, out.String())
	}
}

// ---- worker.sh against the flowgate binary: stopping jobs, refused ACKs -------

// pidsAlive returns those of the pids listed in file (one a line) that still
// run: present in /proc and not a zombie (an init that does not reap leaves
// those behind). Each pid still running is KILLed when the test ends.
func pidsAlive(t *testing.T, file string) (listed, alive []int) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the job's pid file: %v", err)
	}
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q: %v", raw, err)
		}
		listed = append(listed, pid)
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// "pid (comm) S …": the state follows the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		alive = append(alive, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return listed, alive
}

// spawnJob is a WORK_CMD that records its pid and its children's in $PIDS:
// a child in the background, one that ignores TERM (only KILL ends it), and
// a grandchild behind a subshell; then it sleeps 300 s or, with LEAVE set,
// exits 0 at once printing its actions and leaving the children running.
const spawnJob = `cat >/dev/null
echo $$ >>"$PIDS"
sleep 300 & echo $! >>"$PIDS"
bash -c 'trap "" TERM; echo $$ >>"$PIDS"; exec sleep 300' &
( sleep 300 & echo $! >>"$PIDS"; wait ) &
while [ "$(wc -l <"$PIDS")" -lt 4 ]; do sleep 0.05; done
echo 'working hard' >&2
if [ -n "$LEAVE" ]; then echo '{"left":"children"}'; exit 0; fi
sleep 300`

// TestWorkerStopsWholeJob: the job runs in a process group of its own, and
// the worker stops all of it — children, a child that ignores TERM, a
// grandchild — when JOB_TIMEOUT passes, when a heartbeat is refused (the
// task is no longer ours), and when the job exits leaving children behind.
// Before, only the `bash -c` was killed and the rest ran on, reparented to
// init, while the task was retried elsewhere: the same work twice at once.
func TestWorkerStopsWholeJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building and running flowgate")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to see the job's processes in")
	}
	fg := startFlowgate(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	t.Run("JOB_TIMEOUT", func(t *testing.T) {
		id := fg.create("enc-group-timeout-" + run)
		pids := filepath.Join(t.TempDir(), "pids")
		start := time.Now()
		log := runWorker(t, fg, "WORKER_ID=group-timeout", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=jq",
			"HEARTBEAT_INTERVAL=1", "JOB_TIMEOUT=2", "KILL_GRACE=1", "PIDS="+pids, "WORK_CMD="+spawnJob)
		took := time.Since(start)
		t.Logf("worker log (%s):\n%s", took.Round(time.Millisecond), log)
		listed, alive := pidsAlive(t, pids)
		if len(listed) != 4 || len(alive) != 0 {
			t.Errorf("job pids %v, still running after the worker ended: %v; want 4 listed, none running", listed, alive)
		}
		if !strings.Contains(log, "sending KILL") {
			t.Errorf("the child ignoring TERM was not KILLed after KILL_GRACE")
		}
		task := fg.task(id)
		if task.Status != contracts.StatusError || task.Attempts != 1 ||
			!strings.Contains(task.ErrorMessage, "timed out after 2 s") || !strings.Contains(task.ErrorMessage, "working hard") {
			t.Errorf("after JOB_TIMEOUT: status %s attempts %d error_message %q; want ERROR, 1 attempt, timed out with stderr",
				task.Status, task.Attempts, task.ErrorMessage)
		}
		if took > 30*time.Second {
			t.Errorf("the worker took %s for a 2 s JOB_TIMEOUT and a 1 s KILL_GRACE", took)
		}
	})

	t.Run("heartbeat refused", func(t *testing.T) {
		id := fg.create("enc-group-taken-" + run)
		pids := filepath.Join(t.TempDir(), "pids")
		// Once the job has started, the task is taken from the worker (an
		// operator marks it ERROR): the next heartbeat is refused 409.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if raw, _ := os.ReadFile(pids); strings.Count(string(raw), "\n") >= 4 {
					body := []byte(`{"status":"ERROR","error_message":"taken back by the test"}`)
					if status, out := fg.do(http.MethodPatch, "/queue/"+id+"/status", body, nil); status != http.StatusOK {
						t.Errorf("PATCH status: %d %s", status, out)
					}
					return
				}
			}
			t.Errorf("the job did not start within 30 s")
		}()
		log := runWorker(t, fg, "WORKER_ID=group-taken", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=jq",
			"HEARTBEAT_INTERVAL=1", "JOB_TIMEOUT=60", "KILL_GRACE=1", "PIDS="+pids, "WORK_CMD="+spawnJob)
		<-done
		t.Logf("worker log:\n%s", log)
		if !strings.Contains(log, "heartbeat refused") {
			t.Errorf("no heartbeat was refused")
		}
		if listed, alive := pidsAlive(t, pids); len(listed) != 4 || len(alive) != 0 {
			t.Errorf("job pids %v, still running after the worker ended: %v; want 4 listed, none running", listed, alive)
		}
	})

	t.Run("worker hung up", func(t *testing.T) {
		fg.create("enc-group-hup-" + run)
		pids := filepath.Join(t.TempDir(), "pids")
		cmd := exec.Command("bash", workerScript)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "FLOWGATE_URL=" + fg.base,
			"HMAC_SECRET=" + testSecret, "WORKER_ID=group-hup", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=jq",
			"HEARTBEAT_INTERVAL=1", "JOB_TIMEOUT=60", "KILL_GRACE=1", "PIDS=" + pids, "WORK_CMD=" + spawnJob}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if raw, _ := os.ReadFile(pids); strings.Count(string(raw), "\n") >= 4 {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("the job did not start within 30 s:\n%s", out.String())
			}
		}
		_ = cmd.Process.Signal(syscall.SIGHUP)
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 129 {
				t.Errorf("worker.sh after SIGHUP: %v, want exit 129", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("worker.sh did not exit after SIGHUP:\n%s", out.String())
		}
		t.Logf("worker log:\n%s", out.String())
		if listed, alive := pidsAlive(t, pids); len(listed) != 4 || len(alive) != 0 {
			t.Errorf("job pids %v, still running after the worker exited: %v; want 4 listed, none running", listed, alive)
		}
	})

	t.Run("children left behind", func(t *testing.T) {
		id := fg.create("enc-group-left-" + run)
		pids := filepath.Join(t.TempDir(), "pids")
		log := runWorker(t, fg, "WORKER_ID=group-left", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL=python3",
			"KILL_GRACE=1", "LEAVE=1", "PIDS="+pids, "WORK_CMD="+spawnJob)
		t.Logf("worker log:\n%s", log)
		if listed, alive := pidsAlive(t, pids); len(listed) != 4 || len(alive) != 0 {
			t.Errorf("job pids %v, still running after the worker ended: %v; want 4 listed, none running", listed, alive)
		}
		if task := fg.task(id); task.Status != contracts.StatusDone {
			t.Errorf("status %s, want DONE: the job exited 0 with its actions", task.Status)
		}
	})
}

// TestWorkerFailsRefusedAck: an ACK flowgate refuses for good — here 413
// too_large, the work command's output being over HTTP_BODY_LIMIT (1 MiB by
// default) — is sent once and followed by a FAIL saying why, so the task
// leaves PROCESSING (ERROR, requeued) at once. Before, the ACK was retried
// six times over about a minute and the task left PROCESSING until the
// heartbeat monitor recovered it and the work ran again.
func TestWorkerFailsRefusedAck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building and running flowgate")
	}
	fg := startFlowgate(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, tool := range []string{"jq", "python3"} {
		t.Run(tool, func(t *testing.T) {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s is not installed", tool)
			}
			id := fg.create("enc-too-large-" + tool + "-" + run)
			start := time.Now()
			log := runWorker(t, fg, "WORKER_ID=too-large", "MAX_TASKS=1", "WAIT_MS=2000", "JSON_TOOL="+tool,
				`WORK_CMD=cat >/dev/null; printf '{"blob":"'; head -c 1200000 /dev/zero | tr '\0' a; printf '"}'`)
			took := time.Since(start)
			t.Logf("worker log (%s):\n%s", took.Round(time.Millisecond), log)
			if n := strings.Count(log, "/ack"); n != 1 {
				t.Errorf("%d log lines about /ack, want 1: one ACK, not retried", n)
			}
			if strings.Contains(log, "(try ") || strings.Contains(log, "giving up") {
				t.Errorf("the refused ACK was retried")
			}
			task := fg.task(id)
			if task.Status != contracts.StatusError || task.Attempts != 1 || task.InDLQ() ||
				!strings.Contains(task.ErrorMessage, "ACK refused: 413 too_large") {
				t.Errorf("after a refused ACK: status %s attempts %d dlq %v error_message %q; want ERROR, 1 attempt, requeued, saying the ACK was refused 413",
					task.Status, task.Attempts, task.InDLQ(), task.ErrorMessage)
			}
			if len(task.ErrorMessage) > 2000 {
				t.Errorf("error_message of %d bytes; the FAIL should say why in a few hundred", len(task.ErrorMessage))
			}
			if !strings.Contains(log, "requeued true") {
				t.Errorf("the worker did not log the FAIL's requeued answer")
			}
			if took > 20*time.Second {
				t.Errorf("the worker took %s for one task whose ACK was refused", took)
			}
		})
	}
}
