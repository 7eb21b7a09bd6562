package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// End-to-end tests of the VM task orchestration (docs/tasks.md, the n8n
// "Phase 2" workflow) against the built binary on a real Redis, every
// request signed over real HTTP. Crash and restart cases are in
// crash_tasks_test.go; the signed client in signed_test.go.

// asynqTask is a task as Asynqmon's API lists it.
type asynqTask struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Payload string `json:"payload"`
	Queue   string `json:"queue"`
}

// asynqTasks lists the tasks of queue in state (archived, scheduled, …)
// through Asynqmon's API (asynqmon v0.7.2 handler.go:
// GET {root}/api/queues/{qname}/{state}_tasks), with the booking tests'
// monitoring credentials (bookingEnv; ignored where /monitoring is open).
func asynqTasks(t *testing.T, p *proc, queue, state string) []asynqTask {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Base+"/monitoring/api/queues/"+queue+"/"+state+"_tasks?size=100", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", e2eMonitorAuth())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	status, body := resp.StatusCode, string(raw)
	require.Equal(t, 200, status, body)
	var out struct {
		Tasks []asynqTask `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	return out.Tasks
}

// findAsynqTask returns the task whose id starts with prefix.
func findAsynqTask(ts []asynqTask, prefix string) (asynqTask, bool) {
	for _, at := range ts {
		if strings.HasPrefix(at.ID, prefix) {
			return at, true
		}
	}
	return asynqTask{}, false
}

// TestTaskLifecycleOverHTTP walks the seed's state diagram through the
// binary:
//
//	PENDING → PROCESSING → ERROR → (backoff) PENDING HIGH → PROCESSING → ERROR
//	  → PENDING HIGH → PROCESSING → ERROR + dlq (archived in Asynq, low queue)
//	  → replay → PENDING (attempts 0) → PROCESSING → DONE; duplicate ACK; conflicting ACK
//
// then checks GET /queue/stats and the flowgate_tasks / webhook series.
func TestTaskLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	// The retry-overdue sweep keeps its defaults (every minute, 10 min),
	// so every requeue here is Asynq's scheduled one.
	p := startFlowgate(t, taskEnv(db.URL(), map[string]string{
		"REQUEUE_BACKOFF_BASE": "300ms",
		"REQUEUE_BACKOFF_MAX":  "1s",
	}))
	c := newAPI(t, p, newSigner())

	// Phase 1: POST /queue.
	task := c.create("enc-lifecycle", `{"patient":{"first":"Ada","last":"Lovelace"},"visit":{"id":42,"codes":[]}}`)
	require.Equal(t, contracts.PriorityNormal, task.Priority)
	require.Equal(t, 0, task.Attempts)
	require.Equal(t, 3, task.MaxAttempts)
	require.JSONEq(t, `{"patient":{"first":"Ada","last":"Lovelace"},"visit":{"id":42,"codes":[]}}`, string(task.Payload))
	id := task.QueueID

	// Three attempts, each claimed by worker A and failed; the first two
	// are requeued HIGH after the backoff, the third is a dead letter.
	failPaths := []string{"/fail", "/webhook/fail", "/fail"}
	for attempt := 1; attempt <= 3; attempt++ {
		claimed := c.claim("vm-a", id)
		require.Equal(t, attempt-1, claimed.Attempts)
		fail := fmt.Sprintf(`{"queue_id":%q,"encounter_id":"enc-lifecycle","error_message":"Experity portal timeout %d","worker_id":"vm-a"}`, id, attempt)
		sent := time.Now()
		resp := c.hook(failPaths[attempt-1], fail)
		require.Equal(t, id, resp.QueueID)
		require.Equal(t, contracts.StatusError, resp.Status)
		require.Equal(t, attempt, resp.Attempts)
		require.False(t, resp.Duplicate)
		if attempt == 3 {
			require.True(t, resp.DLQ, "%+v", resp)
			require.False(t, resp.Requeued)
			require.Equal(t, contracts.DLQErrorMessage, resp.Message)
			break
		}
		require.True(t, resp.Requeued, "%+v", resp)
		require.False(t, resp.DLQ)
		require.Contains(t, resp.Message, fmt.Sprintf("Attempt %d of 3 failed; requeued with HIGH priority", attempt))

		// Awaiting the retry: ERROR, counted as retry_waiting, nothing to claim.
		st := c.stats()
		require.Equal(t, 1, st.RetryWaiting)
		require.Equal(t, 1, st.ByStatus[contracts.StatusError])
		c.claimNone("vm-x")

		// Asynq's requeue comes after the backoff (300 ms, then 600 ms),
		// give or take Asynq's 5 s check for due scheduled tasks.
		got := c.waitTask(id, 10*time.Second, "PENDING HIGH", isPendingHigh)
		t.Logf("attempt %d: FAIL → PENDING HIGH in %s", attempt, time.Since(sent).Round(10*time.Millisecond))
		require.Equal(t, attempt, got.Attempts)
		require.Equal(t, fmt.Sprintf("Experity portal timeout %d", attempt), got.ErrorMessage)
		ev := lastEvent(t, got)
		require.Equal(t, "requeue", ev.By)
		require.Equal(t, contracts.StatusError, ev.From)
		require.Equal(t, contracts.StatusPending, ev.To)
	}

	// The dead letter, as the seed marks it.
	dead := c.get(id)
	require.Equal(t, contracts.StatusError, dead.Status)
	require.True(t, dead.InDLQ())
	require.JSONEq(t, `{"dlq":true}`, string(dead.ParsedPayload))
	require.Equal(t, contracts.DLQErrorMessage, dead.ErrorMessage)
	require.Equal(t, 3, dead.Attempts)
	st := c.stats()
	require.Equal(t, 1, st.DLQ)
	require.Equal(t, 0, st.RetryWaiting)
	require.Equal(t, 1, st.ByStatus[contracts.StatusError])
	c.claimNone("vm-x")

	// Its replay task is in Asynq's archive of the low queue, where
	// Asynqmon shows (and can run) it.
	archived, ok := findAsynqTask(asynqTasks(t, p, "low", "archived"), "dlq:"+id+":")
	require.True(t, ok, "no archived replay task for %s in %+v", id, asynqTasks(t, p, "low", "archived"))
	require.Equal(t, "tasks:replay", archived.Type)
	require.Contains(t, archived.Payload, id)
	requireMetrics(t, p, map[string]float64{
		`flowgate_tasks_dlq_size`:                            1,
		`flowgate_tasks{status="ERROR"}`:                     1,
		`flowgate_dlq_size{queue="low"}`:                     1,
		`flowgate_tasks_dead_lettered_total{via="fail"}`:     1,
		`flowgate_tasks_requeued_total{via="asynq"}`:         2,
		`flowgate_tasks_requeued_total{via="retry_overdue"}`: 0,
	})

	// Replay through the API: PENDING, attempts 0; the archived task and the
	// durable record are gone.
	resp := decodeReply[contracts.TaskResponse](t, c.do("POST", "/queue/"+id+"/replay", nil), 200)
	require.Equal(t, contracts.StatusPending, resp.Task.Status)
	require.Equal(t, 0, resp.Task.Attempts)
	require.Equal(t, contracts.PriorityHigh, resp.Task.Priority)
	require.False(t, resp.Task.InDLQ())
	_, ok = findAsynqTask(asynqTasks(t, p, "low", "archived"), "dlq:"+id+":")
	require.False(t, ok, "the archived replay task outlived the replay")

	// Worker B finishes it.
	c.claim("vm-b", id)
	ack := fmt.Sprintf(`{"queue_id":%q,"encounter_id":"enc-lifecycle","experityActions":{"visit":{"codes":["J06.9"]},"charges":[]},"worker_id":"vm-b"}`, id)
	ackResp := c.hook("/ack", ack)
	require.Equal(t, contracts.WebhookResponse{Success: true, QueueID: id, Status: contracts.StatusDone,
		Message: "Task acknowledged"}, ackResp)
	done := c.get(id)
	require.Equal(t, contracts.StatusDone, done.Status)
	require.JSONEq(t, `{"experityActions":{"visit":{"codes":["J06.9"]},"charges":[]}}`, string(done.ParsedPayload))

	// The same ACK again (other spacing and key order, n8n's path): 200 duplicate.
	again := fmt.Sprintf(`{"queue_id":%q, "experityActions":{"charges":[], "visit":{"codes":["J06.9"]}}}`, id)
	dup := c.hook("/webhook/ack", again)
	require.True(t, dup.Duplicate)
	require.Equal(t, contracts.StatusDone, dup.Status)
	// Other experityActions: 409.
	env := errorOf(t, c.do("POST", "/ack", []byte(fmt.Sprintf(`{"queue_id":%q,"experityActions":{"visit":null}}`, id))), 409, contracts.CodeConflict)
	require.Equal(t, "DONE", env.Error.Details["current_status"])
	require.Equal(t, "different_payload", env.Error.Details["reason"])
	require.Equal(t, done, c.get(id), "a refused ACK changed the task")

	// The ledger's size and the series, with the counts of this walk.
	st = c.stats()
	require.Equal(t, contracts.StatsResponse{Success: true,
		ByStatus:          map[contracts.Status]int{"PENDING": 0, "PROCESSING": 0, "DONE": 1, "ERROR": 0},
		PendingByPriority: map[contracts.Priority]int{"HIGH": 0, "NORMAL": 0, "LOW": 0},
		Total:             1}, st)
	requireMetrics(t, p, map[string]float64{
		`flowgate_tasks{status="DONE"}`:                                       1,
		`flowgate_tasks{status="ERROR"}`:                                      0,
		`flowgate_tasks{status="PENDING"}`:                                    0,
		`flowgate_tasks{status="PROCESSING"}`:                                 0,
		`flowgate_tasks_dlq_size`:                                             0,
		`flowgate_tasks_retry_waiting`:                                        0,
		`flowgate_dlq_size{queue="low"}`:                                      0,
		`flowgate_tasks_requeued_total{via="asynq"}`:                          2,
		`flowgate_tasks_dead_lettered_total{via="fail"}`:                      1,
		`flowgate_tasks_replayed_total{via="api"}`:                            1,
		`flowgate_webhook_requests_total{hook="fail",outcome="requeued"}`:     2,
		`flowgate_webhook_requests_total{hook="fail",outcome="dlq"}`:          1,
		`flowgate_webhook_requests_total{hook="fail",outcome="error"}`:        0,
		`flowgate_webhook_requests_total{hook="ack",outcome="done"}`:          1,
		`flowgate_webhook_requests_total{hook="ack",outcome="duplicate"}`:     1,
		`flowgate_webhook_requests_total{hook="ack",outcome="conflict"}`:      1,
		`flowgate_webhook_requests_total{hook="ack",outcome="unauthorized"}`:  0,
		`flowgate_webhook_requests_total{hook="fail",outcome="unauthorized"}`: 0,
	})
}

// TestDeadWorkerIsRecovered: a worker that claims and goes silent loses the
// task to the heartbeat monitor (HEARTBEAT_STALE_AFTER=2s, checked every
// second), and another worker finishes it; a worker that keeps sending
// heartbeats keeps its task over the same period.
func TestDeadWorkerIsRecovered(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	p := startFlowgate(t, taskEnv(db.URL(), map[string]string{
		"HEARTBEAT_MONITOR_SCHEDULE": "@every 1s",
		"HEARTBEAT_STALE_AFTER":      "2s",
	}))
	c := newAPI(t, p, newSigner())

	c.create("enc-dead-worker", `{"n":1}`)
	c.create("enc-live-worker", `{"n":2}`)
	claimedAt := time.Now() // before the claim: the server's claim time is later
	// Which worker gets which task is the ledger's claim order: FIFO on one
	// shard, round robin across shards (docs/scale-out.md, Tasks).
	dead := c.claimNext("vm-a")
	alive := c.claimNext("vm-c")

	// vm-c heartbeats every 500 ms until the dead task is recovered, and a
	// while longer.
	stop := make(chan struct{})
	beats := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-stop:
				beats <- nil
				return
			case <-tick.C:
			}
			r, err := c.roundTrip("POST", "/queue/"+alive.QueueID+"/heartbeat", []byte(`{"worker_id":"vm-c"}`))
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("heartbeat %d: %d %s", n, r.Status, r.Body)
			}
			if err != nil {
				beats <- err
				return
			}
			n++
		}
	}()
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt()

	got := c.waitTask(dead.QueueID, 8*time.Second, "recovered to PENDING", func(tk contracts.Task) bool {
		return tk.Status == contracts.StatusPending
	})
	took := time.Since(claimedAt)
	t.Logf("silent worker's task back to PENDING %s after the claim (stale after 2s, monitor every 1s)", took.Round(10*time.Millisecond))
	require.GreaterOrEqual(t, took, 2*time.Second, "recovered before HEARTBEAT_STALE_AFTER")
	require.Equal(t, contracts.PriorityHigh, got.Priority)
	require.Zero(t, got.Attempts, "a recovery is not an attempt")
	require.Equal(t, 1, got.Recoveries, "it is counted apart")
	require.Empty(t, got.WorkerID)
	require.Nil(t, got.ClaimedAt)
	ev := lastEvent(t, got)
	require.Equal(t, contracts.StatusProcessing, ev.From)
	require.Equal(t, contracts.StatusPending, ev.To)
	require.Equal(t, "heartbeat-monitor", ev.By)
	require.Contains(t, ev.Reason, "no heartbeat for more than 2s")
	require.Contains(t, ev.Reason, "vm-a")

	// The silent worker wakes up: its heartbeat no longer holds the task.
	env := errorOf(t, c.do("POST", "/queue/"+dead.QueueID+"/heartbeat", []byte(`{"worker_id":"vm-a"}`)), 409, contracts.CodeConflict)
	require.Equal(t, "PENDING", env.Error.Details["current_status"])

	// Worker B takes it over and finishes it.
	c.claim("vm-b", dead.QueueID)
	ack := c.hook("/ack", fmt.Sprintf(`{"queue_id":%q,"encounter_id":%q,"experityActions":{"ok":true},"worker_id":"vm-b"}`, dead.QueueID, dead.EncounterID))
	require.Equal(t, contracts.StatusDone, ack.Status)
	require.Equal(t, contracts.StatusDone, c.get(dead.QueueID).Status)

	// Keep the heartbeating worker going past another full stale period
	// after the recovery, then check it still holds its task.
	time.Sleep(2500 * time.Millisecond)
	live := c.get(alive.QueueID)
	require.Equal(t, contracts.StatusProcessing, live.Status, "history: %+v", live.History)
	require.Equal(t, "vm-c", live.WorkerID)
	require.Equal(t, 0, live.Attempts)
	require.Zero(t, live.Recoveries)
	require.NotNil(t, live.HeartbeatAt)
	require.WithinDuration(t, time.Now(), *live.HeartbeatAt, 2*time.Second)
	halt()
	require.NoError(t, <-beats)
	requireMetrics(t, p, map[string]float64{
		`flowgate_tasks_recovered_total{sweep="heartbeat"}`: 1,
		`flowgate_tasks{status="PROCESSING"}`:               1,
		`flowgate_tasks{status="DONE"}`:                     1,
	})
}

// TestWebhookBadInputLeavesLedgerUnchanged sends the binary each kind of bad
// request; each gets its status and JSON error code, and the ledger (stats
// and every task with its history) is the same afterwards.
func TestWebhookBadInputLeavesLedgerUnchanged(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	p := startFlowgate(t, taskEnv(db.URL(), map[string]string{"HTTP_BODY_LIMIT": "4096"}))
	c := newAPI(t, p, newSigner())

	// One DONE task (for the replayed duplicate ACK), one PROCESSING.
	doneTask := c.create("enc-done", `{}`)
	c.claim("vm-1", doneTask.QueueID)
	ack := fmt.Sprintf(`{"queue_id":%q,"encounter_id":"enc-done","experityActions":{"a":1}}`, doneTask.QueueID)
	c.hook("/ack", ack)
	task := c.create("enc-busy", `{}`)
	c.claim("vm-1", task.QueueID)

	snapshot := func() (contracts.StatsResponse, string) {
		list := decodeReply[contracts.ListResponse](t, c.do("GET", "/queue?history=true&limit=1000", nil), 200)
		b, err := json.Marshal(list.Tasks)
		require.NoError(t, err)
		return c.stats(), string(b)
	}
	statsBefore, tasksBefore := snapshot()
	metricsBefore := scrape(t, p)

	fail := []byte(fmt.Sprintf(`{"queue_id":%q,"encounter_id":"enc-busy","error_message":"boom"}`, task.QueueID))
	huge := []byte(fmt.Sprintf(`{"queue_id":%q,"error_message":%q}`, task.QueueID, strings.Repeat("x", 10<<10)))
	cases := []struct {
		name   string
		path   string
		body   []byte
		opts   []signOpt
		status int
		code   contracts.Code
		reason string // Details["reason"] of a 401
	}{
		{"forged signature", "/fail", fail, []signOpt{signingBody([]byte(`{"queue_id":"x"}`))}, 401, contracts.CodeUnauthorized, "bad_signature"},
		{"timestamp 301 s old", "/fail", fail, []signOpt{signedAt(time.Now().Add(-301 * time.Second))}, 401, contracts.CodeUnauthorized, "expired"},
		{"missing headers", "/webhook/fail", fail, []signOpt{unsigned()}, 401, contracts.CodeUnauthorized, "missing_headers"},
		{"malformed JSON", "/fail", []byte(fmt.Sprintf(`{"queue_id":%q,`, task.QueueID)), nil, 400, contracts.CodeInvalid, ""},
		{"unknown queue_id", "/fail", []byte(`{"queue_id":"6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10","error_message":"boom"}`), nil, 404, contracts.CodeNotFound, ""},
	}
	for _, tc := range cases {
		env := errorOf(t, c.do("POST", tc.path, tc.body, tc.opts...), tc.status, tc.code)
		if tc.reason != "" {
			require.Equal(t, tc.reason, env.Error.Details["reason"], tc.name)
		}
	}
	// 10 KB over HTTP_BODY_LIMIT=4096, refused before any handler.
	errorOf(t, c.doRaw("POST", "/fail", huge), 413, contracts.CodeTooLarge)

	// A replayed request: the first copy (a duplicate ACK, which changes
	// nothing) is answered, the identical second copy is refused.
	dupAck, err := c.sign("POST", "/ack", []byte(ack))
	require.NoError(t, err)
	first := decodeReply[contracts.WebhookResponse](t, c.mustSend(dupAck), 200)
	require.True(t, first.Duplicate)
	env := errorOf(t, c.mustSend(dupAck), 401, contracts.CodeUnauthorized)
	require.Equal(t, "replayed", env.Error.Details["reason"])

	statsAfter, tasksAfter := snapshot()
	require.Equal(t, statsBefore, statsAfter)
	require.Equal(t, tasksBefore, tasksAfter, "a refused request changed a task")

	// Each refusal counted under its outcome (the 413 never reaches the
	// webhook handlers).
	metricsAfter := scrape(t, p)
	for series, delta := range map[string]float64{
		`flowgate_webhook_requests_total{hook="fail",outcome="unauthorized"}`: 3,
		`flowgate_webhook_requests_total{hook="fail",outcome="invalid"}`:      1,
		`flowgate_webhook_requests_total{hook="fail",outcome="not_found"}`:    1,
		`flowgate_webhook_requests_total{hook="fail",outcome="requeued"}`:     0,
		`flowgate_webhook_requests_total{hook="fail",outcome="dlq"}`:          0,
		`flowgate_webhook_requests_total{hook="ack",outcome="duplicate"}`:     1,
		`flowgate_webhook_requests_total{hook="ack",outcome="unauthorized"}`:  1,
	} {
		b, _ := metricValue(metricsBefore, series)
		a, ok := metricValue(metricsAfter, series)
		require.True(t, ok, series)
		require.Equal(t, delta, a-b, series)
	}
}

// A body over HTTP_BODY_LIMIT is refused by the HTTP server before any
// middleware runs; the error handler still counts it in
// http_requests_total and writes its access-log line.
func TestBodyLimitRefusalCounted(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	p := startFlowgate(t, taskEnv(db.URL(), map[string]string{"HTTP_BODY_LIMIT": "4096"}))
	c := newAPI(t, p, newSigner())
	errorOf(t, c.doRaw("POST", "/fail", []byte(`{"error_message":"`+strings.Repeat("x", 10<<10)+`"}`)), 413, contracts.CodeTooLarge)
	require.Equal(t, 1.0, metricSum(scrape(t, p), "http_requests_total", `status="413"`), "413 not in http_requests_total")
	require.NotEmpty(t, p.LogLines(`"status":413`), "413 not access-logged")
}

// Healthy requeues are run by Asynq, not taken over by the retry-overdue
// repair sweep: Asynq checks for due tasks every second and the sweep's
// threshold must exceed the longest backoff by a margin (a threshold of 2 s
// with a 1 s backoff cap is refused at start).
func TestRetryOverdueDoesNotRaceScheduledRequeue(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	p := startFlowgate(t, taskEnv(db.URL(), map[string]string{
		"REQUEUE_BACKOFF_BASE": "300ms", "REQUEUE_BACKOFF_MAX": "1s",
		"RETRY_OVERDUE_SCHEDULE": "@every 1s", "RETRY_OVERDUE_AFTER": "6100ms", // the least accepted: > 1s + 5s
	}))
	c := newAPI(t, p, newSigner())
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, c.create(fmt.Sprintf("enc-race-%d", i), `{}`).QueueID)
	}
	claimed := decodeReply[contracts.ClaimResponse](t, c.do("POST", "/queue/claim", claimBody("vm-a", 5)), 200)
	require.Len(t, claimed.Tasks, 5)
	for _, id := range ids { // FAILs 1 s apart cover every phase of Asynq's 5 s check
		require.True(t, c.hook("/fail", fmt.Sprintf(`{"queue_id":%q,"error_message":"boom"}`, id)).Requeued)
		time.Sleep(time.Second)
	}
	var bySweep []string
	for _, id := range ids {
		got := c.waitTask(id, 10*time.Second, "PENDING HIGH", isPendingHigh)
		if ev := lastEvent(t, got); ev.By != "requeue" {
			bySweep = append(bySweep, id)
		}
	}
	require.Empty(t, bySweep, "healthy requeues taken over by the retry-overdue sweep; log: %v", p.LogLines("never came"))
}
