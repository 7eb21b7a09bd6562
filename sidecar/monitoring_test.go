package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
)

// asynqmonWriteRoutes is every route of Asynqmon's router that changes
// something (POST and DELETE, under /monitoring/api), as its handler.go
// declares them; TestAsynqmonWriteRoutesListed holds the list against the
// source of the version in go.mod.
var asynqmonWriteRoutes = []string{
	"DELETE /queues/{qname}",
	"POST /queues/{qname}:pause",
	"POST /queues/{qname}:resume",

	"POST /queues/{qname}/active_tasks/{task_id}:cancel",
	"POST /queues/{qname}/active_tasks:cancel_all",
	"POST /queues/{qname}/active_tasks:batch_cancel",

	"DELETE /queues/{qname}/pending_tasks/{task_id}",
	"DELETE /queues/{qname}/pending_tasks:delete_all",
	"POST /queues/{qname}/pending_tasks:batch_delete",
	"POST /queues/{qname}/pending_tasks/{task_id}:archive",
	"POST /queues/{qname}/pending_tasks:archive_all",
	"POST /queues/{qname}/pending_tasks:batch_archive",

	"DELETE /queues/{qname}/scheduled_tasks/{task_id}",
	"DELETE /queues/{qname}/scheduled_tasks:delete_all",
	"POST /queues/{qname}/scheduled_tasks:batch_delete",
	"POST /queues/{qname}/scheduled_tasks/{task_id}:run",
	"POST /queues/{qname}/scheduled_tasks:run_all",
	"POST /queues/{qname}/scheduled_tasks:batch_run",
	"POST /queues/{qname}/scheduled_tasks/{task_id}:archive",
	"POST /queues/{qname}/scheduled_tasks:archive_all",
	"POST /queues/{qname}/scheduled_tasks:batch_archive",

	"DELETE /queues/{qname}/retry_tasks/{task_id}",
	"DELETE /queues/{qname}/retry_tasks:delete_all",
	"POST /queues/{qname}/retry_tasks:batch_delete",
	"POST /queues/{qname}/retry_tasks/{task_id}:run",
	"POST /queues/{qname}/retry_tasks:run_all",
	"POST /queues/{qname}/retry_tasks:batch_run",
	"POST /queues/{qname}/retry_tasks/{task_id}:archive",
	"POST /queues/{qname}/retry_tasks:archive_all",
	"POST /queues/{qname}/retry_tasks:batch_archive",

	"DELETE /queues/{qname}/archived_tasks/{task_id}",
	"DELETE /queues/{qname}/archived_tasks:delete_all",
	"POST /queues/{qname}/archived_tasks:batch_delete",
	"POST /queues/{qname}/archived_tasks/{task_id}:run",
	"POST /queues/{qname}/archived_tasks:run_all",
	"POST /queues/{qname}/archived_tasks:batch_run",

	"DELETE /queues/{qname}/completed_tasks/{task_id}",
	"DELETE /queues/{qname}/completed_tasks:delete_all",
	"POST /queues/{qname}/completed_tasks:batch_delete",

	"DELETE /queues/{qname}/groups/{gname}/aggregating_tasks/{task_id}",
	"DELETE /queues/{qname}/groups/{gname}/aggregating_tasks:delete_all",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks:batch_delete",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks/{task_id}:run",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks:run_all",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks:batch_run",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks/{task_id}:archive",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks:archive_all",
	"POST /queues/{qname}/groups/{gname}/aggregating_tasks:batch_archive",
}

// The list above is Asynqmon's: every api.HandleFunc(…).Methods("POST" or
// "DELETE") of its handler.go, no more, no less — an upgrade that adds a
// write route fails here until the route is in the list (and so in the
// bad-name test).
func TestAsynqmonWriteRoutesListed(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hibiken/asynqmon").Output()
	require.NoError(t, err, "go list -m github.com/hibiken/asynqmon")
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "handler.go"))
	require.NoError(t, err)
	re := regexp.MustCompile(`api\.HandleFunc\("([^"]+)",.*\.Methods\("(POST|DELETE)"\)`)
	var declared []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		declared = append(declared, m[2]+" "+m[1])
	}
	require.Len(t, declared, 48, "Asynqmon's write routes as parsed from its handler.go")
	require.ElementsMatch(t, declared, asynqmonWriteRoutes)
}

// Issue 21, point 4: Asynqmon answered 503 "the queue store could not
// answer" and logged an ERROR for a client's mistakes. A queue name that
// cannot be a queue is refused 400 on every write route before Asynq sees
// it (no key is created for it); pausing a paused queue, resuming a
// running one, running a task already pending are 409, an unknown task
// 404; none of it logs above info.
func TestMonitoringClientMistakesAre4xx(t *testing.T) {
	db := redistest.New(t)
	logs := &logtest.Buffer{}
	_, base := startMainLogging(t, redisEnv(db), slog.New(slog.NewJSONHandler(logs, nil)))

	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+"/monitoring/api"+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return send(t, req)
	}

	// Bad names as sent on the wire: a path segment (plain and
	// percent-encoded), a blank, a hash tag, an Asynqmon action separator.
	badNames := []string{"..", "%2E%2E", "a%20b", "%7Blow%7D", "low%3Ax"}
	for _, route := range asynqmonWriteRoutes {
		method, tmpl, _ := strings.Cut(route, " ")
		body := ""
		if strings.Contains(tmpl, ":batch_") {
			body = `{"task_ids":["t1"]}`
		}
		for _, name := range badNames {
			path := strings.NewReplacer("{qname}", name, "{task_id}", "t1", "{gname}", "g1").Replace(tmpl)
			status, answer := do(method, path, body)
			require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", method, path, answer)
			require.Contains(t, answer, `"code":"invalid"`, "%s %s", method, path)
		}
	}
	keys, err := db.Client.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		require.False(t, strings.ContainsAny(k, " ") || strings.Contains(k, "{..}") || strings.Contains(k, "{{") ||
			strings.Contains(k, "{low:x}"), "a refused name reached Asynq: key %q", k)
	}

	// A real queue: a scheduled task in it, then the mistakes.
	client := asynq.NewClient(db.AsynqOpt())
	t.Cleanup(func() { _ = client.Close() })
	info, err := client.Enqueue(asynq.NewTask("test:monitoring", nil), asynq.Queue("low"), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)
	for _, step := range []struct {
		method, path string
		want         int
		code         string
	}{
		{"POST", "/queues/low:pause", 204, ""},
		{"POST", "/queues/low:pause", 409, "conflict"}, // already paused
		{"POST", "/queues/low/scheduled_tasks/" + info.ID + ":run", 204, ""},
		{"POST", "/queues/low/scheduled_tasks/" + info.ID + ":run", 409, "conflict"}, // already pending
		{"POST", "/queues/low/scheduled_tasks/nosuchtask:archive", 404, "not_found"},
		{"DELETE", "/queues/low/pending_tasks/" + info.ID, 204, ""},
		{"DELETE", "/queues/low/pending_tasks/" + info.ID, 404, "not_found"},
		{"POST", "/queues/low:resume", 204, ""},
		{"POST", "/queues/low:resume", 409, "conflict"}, // not paused
	} {
		status, answer := do(step.method, step.path, "")
		require.Equal(t, step.want, status, "%s %s: %s", step.method, step.path, answer)
		if step.code != "" {
			require.Contains(t, answer, `"code":"`+step.code+`"`, "%s %s", step.method, step.path)
			require.NotContains(t, answer, "asynq", "the cause stays in the log")
		}
	}

	require.Empty(t, logs.Lines(`"level":"ERROR"`), "a client's mistake is not an error")
	require.Empty(t, logs.Lines("dependency unavailable"))
	mistakes := logs.Lines(`"msg":"monitoring api error"`)
	require.Len(t, mistakes, 5, "each 409 and 404 logged once, with its cause")
	require.True(t, slices.IndexFunc(mistakes, func(l string) bool { return strings.Contains(l, "already paused") }) >= 0)
	for _, l := range mistakes {
		require.Contains(t, l, `"level":"INFO"`)
	}
}
