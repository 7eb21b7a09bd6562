package test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// Crash windows of the FAIL → requeue path, against the built binary: the
// retry a FAIL scheduled is Asynq's scheduled task in Redis, so it outlives
// the process that scheduled it (and a Redis restart, with the AOF on); a
// requeue lost before it was enqueued is caught by the retry-overdue sweep.

// failedTask creates a task, has vm-a claim it and FAIL it once, and checks
// the answer: requeued, retry at about backoff from now. It returns the
// task id and the retry time the answer gave.
func failedTask(t *testing.T, c *api, encounter string, backoff time.Duration) (string, time.Time) {
	t.Helper()
	task := c.create(encounter, `{"crash":true}`)
	c.claim("vm-a", task.QueueID)
	sent := time.Now()
	resp := c.hook("/fail", fmt.Sprintf(`{"queue_id":%q,"encounter_id":%q,"error_message":"VM lost the portal session","worker_id":"vm-a"}`,
		task.QueueID, encounter))
	require.True(t, resp.Requeued, "%+v", resp)
	require.Equal(t, 1, resp.Attempts)
	_, at, ok := strings.Cut(resp.Message, "retry at ")
	require.True(t, ok, "no retry time in %q", resp.Message)
	retryAt, err := time.Parse(time.RFC3339, at)
	require.NoError(t, err, resp.Message)
	// RFC 3339 in whole seconds: within a second of sent + backoff.
	require.WithinDuration(t, sent.Add(backoff), retryAt, 1500*time.Millisecond, resp.Message)
	return task.QueueID, retryAt
}

// requeuedBy waits until the task is PENDING HIGH again and checks who did
// it (history "by") and that it can be claimed.
func requeuedBy(t *testing.T, c *api, id, by string, timeout time.Duration) {
	t.Helper()
	got := c.waitTask(id, timeout, "requeued (PENDING HIGH)", isPendingHigh)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, "VM lost the portal session", got.ErrorMessage)
	ev := lastEvent(t, got)
	require.Equal(t, contracts.StatusError, ev.From)
	require.Equal(t, contracts.StatusPending, ev.To)
	require.Equal(t, by, ev.By, "%+v", got.History)
	c.claim("vm-b", id)
}

func TestRequeueSurvivesSIGKILL(t *testing.T) {
	t.Parallel()

	// SIGKILL right after the FAIL was answered, with the requeue 3 s
	// away: a new process on the same database runs it when it is due.
	t.Run("killed before the requeue is due", func(t *testing.T) {
		t.Parallel()
		db := redistest.New(t)
		env := taskEnv(db.URL(), map[string]string{"REQUEUE_BACKOFF_BASE": "3s"})
		s := newSigner()
		p1 := startFlowgate(t, env)
		id, retryAt := failedTask(t, newAPI(t, p1, s), "enc-crash-early", 3*time.Second)
		p1.Kill()
		require.Empty(t, p1.LogLines("task requeued after its backoff"))

		p2 := startFlowgate(t, env)
		c := newAPI(t, p2, s)
		require.True(t, time.Now().Before(retryAt), "restart took too long to see the task before its retry")
		got := c.get(id)
		require.Equal(t, contracts.StatusError, got.Status, "requeued before it was due")
		require.Equal(t, 1, c.stats().RetryWaiting)

		requeuedBy(t, c, id, "requeue", 12*time.Second)
		require.NotEmpty(t, p2.LogLines(id), "the new process did not log the requeue")
		requireMetrics(t, p2, map[string]float64{
			`flowgate_tasks_requeued_total{via="asynq"}`:         1,
			`flowgate_tasks_requeued_total{via="retry_overdue"}`: 0,
		})
	})

	// The requeue falls due while no flowgate runs; the next process
	// runs it.
	t.Run("requeue due while down", func(t *testing.T) {
		t.Parallel()
		db := redistest.New(t)
		env := taskEnv(db.URL(), map[string]string{"REQUEUE_BACKOFF_BASE": "1s"})
		s := newSigner()
		p1 := startFlowgate(t, env)
		id, retryAt := failedTask(t, newAPI(t, p1, s), "enc-crash-due", time.Second)
		p1.Kill()
		require.Empty(t, p1.LogLines("task requeued after its backoff"))
		time.Sleep(time.Until(retryAt.Add(1500 * time.Millisecond)))

		p2 := startFlowgate(t, env)
		c := newAPI(t, p2, s)
		requeuedBy(t, c, id, "requeue", 10*time.Second)
		require.Len(t, p2.LogLines("task requeued after its backoff"), 1)
		requireMetrics(t, p2, map[string]float64{`flowgate_tasks_requeued_total{via="asynq"}`: 1})
	})

	// A crash between the ledger's FAIL and the enqueue leaves no Asynq
	// requeue: simulated by deleting the scheduled task in Asynqmon before
	// the SIGKILL. The retry-overdue sweep of the next process requeues
	// the task once RETRY_OVERDUE_AFTER has passed since the FAIL.
	t.Run("requeue lost before it was enqueued", func(t *testing.T) {
		t.Parallel()
		db := redistest.New(t)
		env := taskEnv(db.URL(), map[string]string{
			"REQUEUE_BACKOFF_BASE":   "1s",
			"REQUEUE_BACKOFF_MAX":    "1s",
			"RETRY_OVERDUE_SCHEDULE": "@every 1s",
			"RETRY_OVERDUE_AFTER":    "6500ms", // the least accepted above 1s + the 5s margin
		})
		s := newSigner()
		p1 := startFlowgate(t, env)
		id, _ := failedTask(t, newAPI(t, p1, s), "enc-crash-lost", time.Second)
		failed := time.Now()
		scheduled, ok := findAsynqTask(asynqTasks(t, p1, "high", "scheduled"), "requeue:"+id+":")
		require.True(t, ok, "no scheduled requeue for %s", id)
		status, body := deleteAsynqTask(t, p1, "high", "scheduled", scheduled.ID)
		require.Equal(t, 204, status, body)
		p1.Kill()

		p2 := startFlowgate(t, env)
		c := newAPI(t, p2, s)
		requeuedBy(t, c, id, "retry-sweep", 15*time.Second)
		require.GreaterOrEqual(t, time.Since(failed), 6500*time.Millisecond, "requeued before RETRY_OVERDUE_AFTER")
		requireMetrics(t, p2, map[string]float64{
			`flowgate_tasks_requeued_total{via="retry_overdue"}`: 1,
			`flowgate_tasks_requeued_total{via="asynq"}`:         0,
		})
	})

	// Redis (AOF, fsync always) is killed after the FAIL while flowgate
	// runs, and stays down past the retry time: readiness and the API
	// answer 503; once Redis is back, readiness is 200 again and the
	// requeue still happens.
	t.Run("redis killed and restarted", func(t *testing.T) {
		t.Parallel()
		srv := rediscluster.StartServer(t, rediscluster.WithPersistence())
		p := startFlowgate(t, taskEnv(srv.URL(), map[string]string{"REQUEUE_BACKOFF_BASE": "2s"}))
		c := newAPI(t, p, newSigner())
		id, retryAt := failedTask(t, c, "enc-redis-restart", 2*time.Second)

		srv.Kill()
		waitReady(t, p, 503, 10*time.Second)
		env := errorOf(t, c.do("GET", "/queue/"+id, nil), 503, contracts.CodeUnavailable)
		require.Equal(t, "replay_unavailable", env.Error.Details["reason"], "the signature check fails closed")
		time.Sleep(time.Until(retryAt.Add(time.Second)))

		srv.Start()
		waitReady(t, p, 200, 15*time.Second)
		requeuedBy(t, c, id, "requeue", 12*time.Second)
	})
}

// waitReady polls /readyz until it answers status.
func waitReady(t *testing.T, p *proc, status int, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		got, body := p.Get("/readyz")
		if got == status {
			t.Logf("/readyz %d after %s: %s", status, time.Since(start).Round(10*time.Millisecond), strings.TrimSpace(body))
			return
		}
		if time.Since(start) > timeout {
			t.Fatalf("/readyz still %d %s after %s, want %d", got, body, timeout, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deleteAsynqTask deletes a task through Asynqmon's API.
func deleteAsynqTask(t *testing.T, p *proc, queue, state, id string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, p.Base+"/monitoring/api/queues/"+queue+"/"+state+"_tasks/"+url.PathEscape(id), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
