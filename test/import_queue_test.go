package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/oldqueuetest"
	"github.com/flowgate/flowgate/test/redistest"
)

const oldAPISecret = "old-queue-api-secret-0123456789"

// importQueue runs `flowgate import-queue args...` with flowgate's
// configuration for redisURL ("" = none) plus env, and returns its stdout,
// stderr and exit code.
func importQueue(t *testing.T, redisURL string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(flowgatetest.Binary(t), append([]string{"import-queue"}, args...)...)
	cmd.Env = append(flowgatetest.Env(), "MONITORING_AUTH=none")
	if redisURL != "" {
		cmd.Env = append(cmd.Env, "REDIS_URL="+redisURL, "CLOUD9_SIMULATOR=true")
		for k, v := range testSecrets {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func oldID(n int) string { return fmt.Sprintf("10000000-0000-4000-8000-%012d", n) }

func oldQueueTask(n int, status string, extra map[string]any) map[string]any {
	t := map[string]any{"queue_id": oldID(n), "encounter_id": fmt.Sprintf("old-enc-%d", n), "status": status,
		"priority": "NORMAL", "attempts": 0, "max_attempts": 3, "payload": map[string]any{"visit": n, "codes": []any{}},
		"parsed_payload": nil, "error_message": nil, "created_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"updated_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

// The binary against the seed's API: dry run, a page failing midway,
// resuming, a rerun that changes nothing, a conflict, the configuration
// checks; then flowgate serves the imported tasks to a worker.
func TestImportQueueThroughTheBinary(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ledger, err := tasks.New(db.Client, tasks.Config{})
	require.NoError(t, err)
	total := func() int {
		st, err := ledger.Stats(context.Background())
		require.NoError(t, err)
		return st.Total
	}
	src := oldqueuetest.New(t, oldAPISecret)
	src.Add(t, oldQueueTask(1, "PENDING", nil), oldQueueTask(2, "PENDING", map[string]any{"priority": "LOW"}),
		oldQueueTask(3, "PROCESSING", map[string]any{"worker_id": "vm-old", "attempts": 1}),
		oldQueueTask(4, "ERROR", map[string]any{"attempts": 1, "error_message": "portal timeout"}),
		oldQueueTask(5, "ERROR", map[string]any{"attempts": 3, "error_message": contracts.DLQErrorMessage, "parsed_payload": map[string]any{"dlq": true}}),
		oldQueueTask(6, "DONE", map[string]any{"parsed_payload": map[string]any{"experityActions": map[string]any{"ok": true}}}))
	secretEnv := []string{"IMPORT_HMAC_SECRET=" + oldAPISecret}

	out, errs, code := importQueue(t, db.URL(), secretEnv, "--from", src.URL, "--dry-run")
	require.Equal(t, 0, code, out+errs)
	require.Contains(t, out, "would-import "+oldID(3)+" PROCESSING -> PENDING HIGH")
	require.Contains(t, out, "TOTAL       5        5         0          0         0        0")
	require.Zero(t, total(), "a dry run writes nothing")

	src.FailPage("ERROR", 1, -1)
	out, errs, code = importQueue(t, db.URL(), secretEnv, "--from", src.URL, "--page-size", "1")
	require.Equal(t, 1, code, out+errs)
	require.Contains(t, errs, "stopped at page 1 of status ERROR")
	require.Contains(t, errs, "HTTP 500")
	require.Contains(t, errs, "3 tasks were imported before it; run the same command again to resume")
	require.Contains(t, out, "TOTAL       3        3 ")
	require.Equal(t, 3, total())

	src.ClearFailures()
	out, errs, code = importQueue(t, db.URL(), secretEnv, "--from", src.URL, "--page-size", "1", "--include-done", "--signature-version", "2")
	require.Equal(t, 0, code, out+errs)
	require.Contains(t, out, "unchanged    "+oldID(1))
	require.Contains(t, out, "imported     "+oldID(5)+" ERROR      -> ERROR (dead letter)")
	require.Contains(t, out, "TOTAL       6        3         3          0         0        0")
	require.Equal(t, 6, total())

	out, errs, code = importQueue(t, db.URL(), secretEnv, "--from", src.URL, "--include-done", "--signature-version", "2")
	require.Equal(t, 0, code, out+errs)
	require.Contains(t, out, "TOTAL       6        0         6          0         0        0", "a rerun changes nothing")

	src.Replace(t, oldID(2), oldQueueTask(2, "PENDING", map[string]any{"priority": "HIGH"}))
	out, errs, code = importQueue(t, db.URL(), secretEnv, "--from", src.URL, "--status", "pending")
	require.Equal(t, 3, code, out+errs)
	require.Contains(t, out, "conflict     "+oldID(2)+" PENDING    queue_id was imported before from different content")
	require.Contains(t, errs, "1 conflicts and 0 invalid tasks were not imported")

	// Another REDIS_SHARDS than the data's is refused before anything is
	// written, as a start refuses it: its tasks would be where no server
	// looks.
	_, errs, code = importQueue(t, db.URL(), append(secretEnv, "REDIS_SHARDS=2"), "--from", src.URL)
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "REDIS_SHARDS: is 2, but this Redis holds data written with REDIS_SHARDS=1")
	require.Equal(t, 6, total())

	_, errs, code = importQueue(t, db.URL(), []string{"IMPORT_HMAC_SECRET=wrong"}, "--from", src.URL)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "HTTP 401")
	_, errs, code = importQueue(t, "", secretEnv, "--from", src.URL)
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "no Redis configured")
	_, errs, code = importQueue(t, db.URL(), secretEnv)
	require.Equal(t, 2, code, errs)
	require.Contains(t, errs, "--from is required")
	out, _, code = importQueue(t, "", nil, "-help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Usage: flowgate import-queue --from URL")

	// flowgate serves what was imported: the requeued PROCESSING task
	// first (HIGH), to a worker that ACKs it.
	p := startFlowgate(t, taskEnv(db.URL(), nil))
	c := newAPI(t, p, newSigner())
	claimed := c.claim("vm-new", oldID(3))
	require.Equal(t, 1, claimed.Attempts)
	ack := c.hook("/ack", fmt.Sprintf(`{"queue_id":%q,"encounter_id":"old-enc-3","experityActions":{"done":true},"worker_id":"vm-new"}`, oldID(3)))
	require.Equal(t, contracts.StatusDone, ack.Status)
	hist := c.get(oldID(3)).History
	require.Equal(t, "import", hist[0].By)
	require.Contains(t, hist[0].Reason, "imported from "+src.URL)
	c.claim("vm-new", oldID(1))
}

// flowgate's own GET /queue is the seed's shape: one flowgate's tasks
// import into another's Redis (version 2 signatures, which flowgate
// requires off the seed's routes).
func TestImportQueueFromAnotherFlowgate(t *testing.T) {
	t.Parallel()
	from, to := redistest.New(t), redistest.New(t)
	p := startFlowgate(t, taskEnv(from.URL(), nil))
	c := newAPI(t, p, newSigner())
	a := c.create("fg-enc-a", `{"big":12345678901234567890,"list":[]}`)
	b := c.create("fg-enc-b", `{"n":2}`)
	c.claim("vm-1", a.QueueID)

	out, errs, code := importQueue(t, to.URL(), []string{"IMPORT_HMAC_SECRET=" + testSecrets["HMAC_SECRET"]},
		"--from", p.Base, "--signature-version", "2")
	require.Equal(t, 0, code, out+errs)
	require.Contains(t, out, "TOTAL       2        2")

	ledger, err := tasks.New(to.Client, tasks.Config{})
	require.NoError(t, err)
	got, err := ledger.Get(context.Background(), a.QueueID)
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Equal(t, `{"big":12345678901234567890,"list":[]}`, string(got.Payload))
	require.True(t, got.CreatedAt.Equal(a.CreatedAt))
	require.Equal(t, []string{">PENDING", "PENDING>PROCESSING", ">PENDING"}, historyOf(got))
	require.True(t, strings.HasPrefix(got.History[2].Reason, "imported from "+p.Base))
	other, err := ledger.Get(context.Background(), b.QueueID)
	require.NoError(t, err)
	require.Equal(t, contracts.PriorityNormal, other.Priority)
}

func historyOf(t contracts.Task) []string {
	out := make([]string, len(t.History))
	for i, e := range t.History {
		out[i] = string(e.From) + ">" + string(e.To)
	}
	return out
}
