//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// taskLoad is the signed worker traffic of the task drills: a producer
// creates n tasks in batches (each batch retried with the same queue_ids
// until it is answered), workers claim them and, per task, FAIL it as often
// as its plan says and then ACK it — a plan of maxAttempts FAILs makes a
// dead letter. Every request whose outcome is uncertain (503, transport
// error) is sent again, freshly signed, as a careful worker would.
type taskLoad struct {
	c           *client
	n           int
	maxAttempts int
	tag         string
	// recoveries allows the heartbeat monitor and the visibility sweep to
	// recover tasks (a crashed flowgate's claims that never reached their
	// worker); each recovery counts in the task's recoveries, not its
	// attempts. Without it any recovery is a failure: the task was stranded.
	recoveries bool
	// any5xx resends after any 5xx, not only 503 (the slot migration
	// drill: a 5xx there is counted and reported, and the outcome of the
	// request is open).
	any5xx bool
	pace   time.Duration // a worker's pause after each claim answered with tasks
	stall  time.Duration // watch gives up when nothing settles for this long after the last task was created

	ids   []string
	index map[string]int

	created  atomic.Int64 // tasks whose batch was answered
	claimed  atomic.Int64 // tasks received in claim answers
	done     atomic.Bool  // every task is DONE or a dead letter
	nonce    atomic.Int64
	mu       sync.Mutex
	ackNew   []int // ACK answers with duplicate:false, per task
	ackDup   []int // ACK answers with duplicate:true
	failNew  []int // FAIL answers with duplicate:false
	conflict int   // 409 answers to a resent ACK/FAIL (the task had moved on)
	problems []string
}

func newTaskLoad(c *client, n, maxAttempts int) *taskLoad {
	tag := rand.Uint32()
	l := &taskLoad{c: c, n: n, maxAttempts: maxAttempts, tag: fmt.Sprintf("%08x", tag),
		pace: 100 * time.Millisecond, stall: 20 * time.Second,
		ids: make([]string, n), index: make(map[string]int, n),
		ackNew: make([]int, n), ackDup: make([]int, n), failNew: make([]int, n)}
	for i := range l.ids {
		l.ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", tag, i)
		l.index[l.ids[i]] = i
	}
	return l
}

// plan is how many times task i is FAILed before it is ACKed: 60 % never,
// 20 % once, 10 % twice, 10 % maxAttempts times (dead letter).
func (l *taskLoad) plan(i int) int {
	switch i % 10 {
	case 6, 7:
		return 1
	case 8:
		return 2
	case 9:
		return l.maxAttempts
	}
	return 0
}

func (l *taskLoad) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 50 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// uncertain reports whether an answer leaves the outcome open (send again).
func uncertain(a answer) bool { return a.Err != nil || a.Status == http.StatusServiceUnavailable }

// uncertain is uncertain, and any 5xx when l.any5xx.
func (l *taskLoad) uncertain(a answer) bool { return uncertain(a) || (l.any5xx && a.Status >= 500) }

// retry sends the request built by body until the answer is certain or ctx
// ends; each attempt is signed anew.
func (l *taskLoad) retry(ctx context.Context, method, path string, body func() []byte) (answer, bool) {
	for {
		a := l.c.signed(method, path, body())
		if !l.uncertain(a) {
			return a, true
		}
		select {
		case <-ctx.Done():
			return a, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// produce creates the tasks in batches of 50, one batch every interval.
func (l *taskLoad) produce(ctx context.Context, interval time.Duration) {
	for start := 0; start < l.n; start += 50 {
		items := make([]contracts.CreateTaskRequest, 0, 50)
		for i := start; i < start+50 && i < l.n; i++ {
			items = append(items, contracts.CreateTaskRequest{QueueID: l.ids[i],
				EncounterID: fmt.Sprintf("drill-%s-%d", l.tag, i), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
		raw, _ := json.Marshal(contracts.BatchCreateRequest{Tasks: items})
		a, ok := l.retry(ctx, "POST", "/queue", func() []byte { return raw })
		if !ok {
			return
		}
		var resp contracts.BatchCreateResponse
		if (a.Status != 200 && a.Status != 201) || json.Unmarshal(a.Body, &resp) != nil || resp.Created+resp.Duplicates != len(items) {
			l.problem("create batch at %d: %s", start, a)
			return
		}
		l.created.Add(int64(len(items)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// work is one worker: claim, then FAIL or ACK each task per its plan.
func (l *taskLoad) work(ctx context.Context, worker string) {
	for ctx.Err() == nil && !l.done.Load() {
		body, _ := json.Marshal(map[string]any{"worker_id": worker, "limit": 2, "wait_ms": 500, "nonce": l.nonce.Add(1)})
		a := l.c.signed("POST", "/queue/claim", body)
		switch {
		case l.uncertain(a):
			time.Sleep(100 * time.Millisecond)
			continue
		case a.Status == http.StatusNoContent:
			continue
		case a.Status != http.StatusOK:
			l.problem("claim: %s", a)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var resp contracts.ClaimResponse
		if err := json.Unmarshal(a.Body, &resp); err != nil {
			l.problem("claim answer: %v: %s", err, a)
			continue
		}
		l.claimed.Add(int64(len(resp.Tasks)))
		for _, tk := range resp.Tasks {
			l.finish(ctx, worker, tk)
		}
		// Workers take their time (a VM works on each task), so pending
		// tasks pile up and a fault finds claims with work to take.
		time.Sleep(l.pace)
	}
}

// finish sends FAIL (attempts below plan) or ACK for a claimed task.
func (l *taskLoad) finish(ctx context.Context, worker string, tk contracts.Task) {
	i, ok := l.index[tk.QueueID]
	if !ok || tk.Status != contracts.StatusProcessing || tk.WorkerID != worker {
		l.problem("claimed a task not ours or not PROCESSING by %s: %+v", worker, tk)
		return
	}
	enc := fmt.Sprintf("drill-%s-%d", l.tag, i)
	fail := tk.Attempts < l.plan(i)
	path, payload := "/ack", map[string]any{"queue_id": tk.QueueID, "encounter_id": enc, "worker_id": worker,
		"experityActions": map[string]any{"task": i}}
	if fail {
		path, payload = "/fail", map[string]any{"queue_id": tk.QueueID, "encounter_id": enc, "worker_id": worker,
			"error_message": fmt.Sprintf("drill failure %d", tk.Attempts+1)}
	}
	raw, _ := json.Marshal(payload)
	a, ok := l.retry(ctx, "POST", path, func() []byte { return raw })
	if !ok {
		return
	}
	var resp contracts.WebhookResponse
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case a.Status == http.StatusConflict:
		l.conflict++ // a resent request found the task moved on: the first one was applied
	case a.Status != http.StatusOK || json.Unmarshal(a.Body, &resp) != nil:
		if len(l.problems) < 50 {
			l.problems = append(l.problems, fmt.Sprintf("%s task %d: %s", path, i, a))
		}
	case fail && !resp.Duplicate:
		l.failNew[i]++
	case !fail && resp.Duplicate:
		l.ackDup[i]++
	case !fail:
		l.ackNew[i]++
	}
}

// watch polls /queue/stats until every task is DONE or a dead letter (then
// sets done), ctx ends, or nothing settled for l.stall after the last task
// was created (stranded tasks: the verification says which).
func (l *taskLoad) watch(ctx context.Context) contracts.StatsResponse {
	var last contracts.StatsResponse
	settled, since := -1, time.Now()
	for ctx.Err() == nil {
		a := l.c.signed("GET", "/queue/stats", nil)
		var st contracts.StatsResponse
		if a.Status == http.StatusOK && json.Unmarshal(a.Body, &st) == nil {
			last = st
			n := st.ByStatus[contracts.StatusDone] + st.DLQ
			if l.created.Load() == int64(l.n) && n == l.n && st.Total == l.n {
				l.done.Store(true)
				return st
			}
			if n != settled || l.created.Load() < int64(l.n) {
				settled, since = n, time.Now()
			}
			if l.stall > 0 && time.Since(since) > l.stall {
				return st
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return last
}

// ledgerCount is what the ledger holds at the end of a drill.
type ledgerCount struct {
	byStatus    map[contracts.Status]int
	dlq         int
	doneEvents  int // PROCESSING → DONE events over all tasks
	ackedTwice  int // tasks with more than one DONE event
	recovered   int // sweep recoveries (counted in recoveries, not attempts) over all tasks
	stranded    int // tasks left PROCESSING or recovered by a sweep although no process crashed
	wrong       int // tasks whose end does not match their plan
	wrongFate   []string
	missing     int
	unknownSeen int
}

// verify lists every task with its history and checks each against its
// plan: DONE with attempts = plan and exactly one DONE event, or (plan =
// maxAttempts) a dead letter with attempts = maxAttempts; recoveries equal
// to the sweeps' events in its history.
func (l *taskLoad) verify(t *testing.T) ledgerCount {
	t.Helper()
	lc := ledgerCount{byStatus: map[contracts.Status]int{}}
	seen := make([]bool, l.n)
	cursor := ""
	for page := 0; page < 100; page++ {
		path := "/queue?limit=1000&history=true"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a := l.c.signed("GET", path, nil)
		var resp contracts.ListResponse
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &resp) != nil {
			t.Fatalf("list tasks: %s", a)
		}
		for _, tk := range resp.Tasks {
			l.check(tk, seen, &lc)
		}
		if cursor = resp.NextCursor; cursor == "" {
			break
		}
	}
	for i, ok := range seen {
		if !ok {
			lc.missing++
			lc.wrong++
			if len(lc.wrongFate) < 20 {
				lc.wrongFate = append(lc.wrongFate, fmt.Sprintf("task %d (%s) missing from the ledger", i, l.ids[i]))
			}
		}
	}
	return lc
}

func (l *taskLoad) check(tk contracts.Task, seen []bool, lc *ledgerCount) {
	i, ok := l.index[tk.QueueID]
	if !ok {
		lc.unknownSeen++
		return
	}
	seen[i] = true
	lc.byStatus[tk.Status]++
	dones := 0
	for _, ev := range tk.History {
		if ev.To == contracts.StatusDone {
			dones++
		}
	}
	lc.doneEvents += dones
	if dones > 1 {
		lc.ackedTwice++
	}
	recov := 0
	for _, ev := range tk.History {
		if ev.By == "heartbeat-monitor" || ev.By == "vt-sweep" {
			recov++
		}
	}
	lc.recovered += recov
	if wrong := l.fate(i, tk, dones, recov); wrong != "" {
		lc.wrong++
		if !l.recoveries && (recov > 0 || tk.Status == contracts.StatusProcessing) {
			lc.stranded++
		}
		if len(lc.wrongFate) < 20 {
			lc.wrongFate = append(lc.wrongFate, fmt.Sprintf("task %d: %s; got %s attempts=%d worker=%s history=%s",
				i, wrong, tk.Status, tk.Attempts, tk.WorkerID, historyLine(tk.History)))
		}
	}
	if tk.InDLQ() {
		lc.dlq++
	}
}

// fate checks task i's end against its plan; recov is how many times a
// sweep recovered it (counted in recoveries, never in attempts). It returns
// what is wrong, or "".
func (l *taskLoad) fate(i int, tk contracts.Task, dones, recov int) string {
	want := l.plan(i)
	switch {
	case recov > 0 && !l.recoveries:
		return fmt.Sprintf("recovered %d times by a sweep: stranded PROCESSING under a worker that never got it", recov)
	case tk.Recoveries != recov:
		return fmt.Sprintf("recoveries %d, but %d sweep recoveries in its history", tk.Recoveries, recov)
	case tk.Status == contracts.StatusDone:
		// ACKed once its attempts (FAILs only) reached the plan.
		if dones != 1 || tk.Attempts != want || tk.Attempts >= l.maxAttempts {
			return fmt.Sprintf("want DONE after %d FAILs (+%d recoveries, no attempt each), one DONE event (has %d)", want, recov, dones)
		}
	case tk.InDLQ():
		byFails := want == l.maxAttempts && tk.Attempts == l.maxAttempts
		byRecoveries := tk.Recoveries == tasks.DefaultMaxRecoveries && tk.Attempts < l.maxAttempts
		if tk.Status != contracts.StatusError || dones != 0 || (!byFails && !byRecoveries) {
			return fmt.Sprintf("a dead letter must have %d attempts (planned: %d FAILs) or %d recoveries (has %d)",
				l.maxAttempts, want, tasks.DefaultMaxRecoveries, recov)
		}
	default:
		return fmt.Sprintf("want DONE after %d FAILs or a dead letter; it is still open", want)
	}
	return ""
}

func historyLine(h []contracts.TaskEvent) string {
	parts := make([]string, 0, len(h))
	for _, ev := range h {
		parts = append(parts, fmt.Sprintf("%s→%s(%s,%s)", ev.From, ev.To, ev.By, ev.Reason))
	}
	return strings.Join(parts, " ")
}

// sums adds up the per-task answer counters.
func (l *taskLoad) sums() (ackNew, ackDup, failNew, ackedTwiceByClient int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.ackNew {
		ackNew += l.ackNew[i]
		ackDup += l.ackDup[i]
		failNew += l.failNew[i]
		if l.ackNew[i] > 1 {
			ackedTwiceByClient++
		}
	}
	return
}

// wantFails is the number of FAILs the plan sends in all.
func (l *taskLoad) wantFails() int {
	n := 0
	for i := 0; i < l.n; i++ {
		n += l.plan(i)
	}
	return n
}
