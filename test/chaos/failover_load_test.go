//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// The failover drill's load (failover_drill_test.go) and the look-up of
// every effect flowgate acknowledged to it.

// failoverLoad is the drill's clients and what flowgate acknowledged to them.
type failoverLoad struct {
	c     *client
	wg    sync.WaitGroup
	slots []holdSlot

	seq, nonce, key, hold atomic.Int64
	claimLost             atomic.Int64

	mu        sync.Mutex
	created   map[string]time.Time // queue_id → when its 201 came
	acked     map[string]bool
	failed    map[string]int // queue_id → attempts the FAIL answer reported
	messages  map[string]bool
	holds     map[string]string // holdId → clientId
	problems  []string
	createdAt []time.Time
}

func newFailoverLoad(t *testing.T, c *client) *failoverLoad {
	return &failoverLoad{c: c, slots: freeHoldSlots(t, c, 120),
		created: map[string]time.Time{}, acked: map[string]bool{}, failed: map[string]int{},
		messages: map[string]bool{}, holds: map[string]string{}}
}

func (l *failoverLoad) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 30 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

func (l *failoverLoad) start(ctx context.Context, stop <-chan struct{}) {
	loop := func(n int, pace time.Duration, f func(ctx context.Context, i int)) {
		for i := range n {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-ctx.Done():
						return
					default:
					}
					f(ctx, i)
					time.Sleep(pace)
				}
			}()
		}
	}
	loop(foCreators, 100*time.Millisecond, l.create)
	loop(foWorkers, 20*time.Millisecond, l.work)
	loop(foBuffer, 30*time.Millisecond, l.enqueue)
	loop(1, foHoldPace, l.takeHold)
}

// until sends until the answer is certain (not a transport error or 5xx);
// resent says whether an uncertain answer came first.
func (l *failoverLoad) until(ctx context.Context, send func() answer) (a answer, ok bool) {
	a, _, ok = l.untilResent(ctx, send)
	return a, ok
}

func (l *failoverLoad) untilResent(ctx context.Context, send func() answer) (a answer, resent, ok bool) {
	for {
		a = send()
		if a.Err == nil && a.Status < 500 {
			return a, resent, true
		}
		resent = true
		select {
		case <-ctx.Done():
			return a, resent, false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l *failoverLoad) create(ctx context.Context, _ int) {
	items := make([]contracts.CreateTaskRequest, 10)
	for i := range items {
		n := l.seq.Add(1)
		items[i] = contracts.CreateTaskRequest{QueueID: fmt.Sprintf("f0f0f0f0-0000-4000-8000-%012x", n),
			EncounterID: fmt.Sprintf("failover-%d", n), Payload: json.RawMessage(`{}`)}
	}
	raw, _ := json.Marshal(contracts.BatchCreateRequest{Tasks: items})
	a, ok := l.until(ctx, func() answer { return l.c.signed(http.MethodPost, "/queue", raw) })
	if !ok {
		return
	}
	if a.Status != http.StatusCreated && a.Status != http.StatusOK {
		l.problem("create: %s", a)
		return
	}
	now := time.Now()
	l.mu.Lock()
	for _, it := range items {
		l.created[it.QueueID] = now
	}
	l.createdAt = append(l.createdAt, a.Start) // when the attempt that succeeded was sent
	l.mu.Unlock()
}

func (l *failoverLoad) work(ctx context.Context, w int) {
	worker := fmt.Sprintf("vm-failover-%d", w)
	body, _ := json.Marshal(map[string]any{"worker_id": worker, "limit": 5, "wait_ms": 200, "nonce": l.nonce.Add(1)})
	a := l.c.signed(http.MethodPost, "/queue/claim", body)
	if a.Status != http.StatusOK {
		return // 204, 503, transport errors: claim again
	}
	var resp contracts.ClaimResponse
	if json.Unmarshal(a.Body, &resp) != nil {
		l.problem("claim answer: %s", a)
		return
	}
	for _, tk := range resp.Tasks {
		fail := tk.Attempts == 0 && tk.QueueID[len(tk.QueueID)-1]%5 == 0
		path, payload := "/ack", map[string]any{"queue_id": tk.QueueID, "encounter_id": tk.EncounterID, "worker_id": worker}
		if fail {
			path, payload = "/fail", map[string]any{"queue_id": tk.QueueID, "encounter_id": tk.EncounterID, "worker_id": worker,
				"error_message": "failover drill"}
		}
		raw, _ := json.Marshal(payload)
		r, resent, ok := l.untilResent(ctx, func() answer { return l.c.signed(http.MethodPost, path, raw) })
		if !ok {
			return
		}
		var wr contracts.WebhookResponse
		switch {
		case (r.Status == http.StatusConflict || r.Status == http.StatusNotFound) && resent:
			// A resend after an uncertain answer found the task moved on
			// (the first FAIL was applied and the task claimed again).
		case r.Status == http.StatusConflict || r.Status == http.StatusNotFound:
			l.claimLost.Add(1) // the claim that gave us the task is gone
		case r.Status != http.StatusOK || json.Unmarshal(r.Body, &wr) != nil:
			l.problem("%s %s: %s", path, tk.QueueID, r)
		case fail:
			l.mu.Lock()
			l.failed[tk.QueueID] = max(l.failed[tk.QueueID], wr.Attempts)
			l.mu.Unlock()
		default:
			l.mu.Lock()
			l.acked[tk.QueueID] = true
			l.mu.Unlock()
		}
	}
}

func (l *failoverLoad) enqueue(ctx context.Context, _ int) {
	i := int(l.key.Add(1))
	body, _ := json.Marshal(map[string]any{"type": "webhook.forward", "idempotencyKey": fmt.Sprintf("failover-%d", i),
		"payload": map[string]any{"key": fmt.Sprintf("failover-%d", i)}})
	hdr := http.Header{"Authorization": {"Bearer " + bearerToken}}
	a, ok := l.until(ctx, func() answer { return l.c.send(http.MethodPost, "/api/buffer/enqueue", body, hdr, false) })
	if !ok {
		return
	}
	var resp contracts.BufferEnqueueResponse
	switch {
	case a.Status == http.StatusConflict: // a resend after an uncertain 5xx: the first was applied
	case a.Status/100 != 2 || json.Unmarshal(a.Body, &resp) != nil || resp.MessageID == "":
		l.problem("enqueue: %s", a)
	default:
		l.mu.Lock()
		l.messages[resp.MessageID] = true
		l.mu.Unlock()
	}
}

func (l *failoverLoad) takeHold(ctx context.Context, _ int) {
	i := int(l.hold.Add(1)) - 1
	if i >= len(l.slots) {
		return
	}
	s := l.slots[i]
	client := fmt.Sprintf("failover-holder-%d", i)
	body, _ := json.Marshal(map[string]string{"appointmentTypeId": holdType, "clientId": client,
		"slotStartDate": s.start.UTC().Format(time.RFC3339), "specialistId": s.specialist})
	a, ok := l.until(ctx, func() answer { return l.c.send(http.MethodPost, "/v1/holds", body, nil, false) })
	if !ok || a.Status == http.StatusConflict { // 409 after an uncertain create: ours, unanswered
		return
	}
	var resp struct {
		HoldID string `json:"holdId"`
	}
	if a.Status != http.StatusCreated || json.Unmarshal(a.Body, &resp) != nil || resp.HoldID == "" {
		l.problem("hold: %s", a)
		return
	}
	l.mu.Lock()
	l.holds[resp.HoldID] = client
	l.mu.Unlock()
}

func (l *failoverLoad) createdAfter(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.createdAt {
		if at.After(t) {
			n++
		}
	}
	return n
}

// foResult counts what was acknowledged and what is missing, per kind.
type foResult struct {
	creates, acks, fails, buffer, holds                     int
	lostCreates, lostAcks, lostFails, lostBuffer, lostHolds int
	details                                                 []string
}

func (r *foResult) lost() int {
	return r.lostCreates + r.lostAcks + r.lostFails + r.lostBuffer + r.lostHolds
}

func (r *foResult) note(format string, args ...any) {
	if len(r.details) < 20 {
		r.details = append(r.details, fmt.Sprintf(format, args...))
	}
}

// verify looks up every acknowledged effect.
func (l *failoverLoad) verify(t *testing.T, c *client, recv *deliveries) foResult {
	t.Helper()
	tasks := map[string]contracts.Task{}
	cursor := ""
	for page := 0; page < 100; page++ {
		path := "/queue?limit=1000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a := c.signed(http.MethodGet, path, nil)
		var resp contracts.ListResponse
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &resp) != nil {
			t.Fatalf("list tasks: %s", a)
		}
		for _, tk := range resp.Tasks {
			tasks[tk.QueueID] = tk
		}
		if cursor = resp.NextCursor; cursor == "" {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var r foResult
	for id := range l.created {
		r.creates++
		if _, ok := tasks[id]; !ok {
			r.lostCreates++
			r.note("task %s: created (201) but missing", id)
		}
	}
	for id := range l.acked {
		r.acks++
		if tk, ok := tasks[id]; !ok || tk.Status != contracts.StatusDone {
			r.lostAcks++
			r.note("task %s: ACK answered 200 but it is %s", id, tk.Status)
		}
	}
	for id, attempts := range l.failed {
		r.fails++
		if tk, ok := tasks[id]; !ok || tk.Attempts < attempts {
			r.lostFails++
			r.note("task %s: FAIL answered attempts %d but it has %d", id, attempts, tk.Attempts)
		}
	}
	hdr := http.Header{"Authorization": {"Bearer " + bearerToken}}
	recv.mu.Lock()
	delivered := map[string]bool{}
	for id, n := range recv.byID {
		delivered[id] = n > 0
	}
	recv.mu.Unlock()
	for id := range l.messages {
		r.buffer++
		if delivered[id] {
			continue
		}
		if a := c.send(http.MethodGet, "/api/buffer/messages/"+id, nil, hdr, false); a.Status == http.StatusNotFound {
			r.lostBuffer++
			r.note("buffer message %s: enqueue answered 2xx, never delivered, now 404", id)
		}
	}
	for id, client := range l.holds {
		r.holds++
		body, _ := json.Marshal(map[string]string{"holdId": id, "clientId": client})
		a := c.send(http.MethodPatch, "/v1/holds", body, nil, false)
		var hb struct {
			OK bool `json:"ok"`
		}
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &hb) != nil || !hb.OK {
			r.lostHolds++
			r.note("hold of %s: created (201) but a heartbeat answers %s", client, a)
		}
	}
	return r
}
