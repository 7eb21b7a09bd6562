//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Size of the buffer drill: keyed enqueues and the clients sending them.
const (
	bufferDrillKeys    = 5000
	bufferDrillClients = 16
	bufferDrillPause   = 10 * time.Second
)

// deliveries records what the buffer's webhook.forward target received:
// per message id how often, and per idempotency key (carried in the
// payload) which message ids.
type deliveries struct {
	mu    sync.Mutex
	byID  map[string]int
	byKey map[string]map[string]bool
}

func (d *deliveries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Key string `json:"key"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &p)
	id := r.Header.Get("X-Buffer-Message-Id")
	d.mu.Lock()
	d.byID[id]++
	if d.byKey[p.Key] == nil {
		d.byKey[p.Key] = map[string]bool{}
	}
	d.byKey[p.Key][id] = true
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// bufferResult is what the client finally learned of one key.
type bufferResult struct {
	id     string // the messageId of the 2xx, or the one the 409 named
	status int
	sends  int
}

// TestDrillBufferKeyedEnqueues: 5,000 enqueues, each with its own
// idempotency key, by 16 clients into webhook.forward while flowgate is
// SIGKILLed (at a third) and restarted on the same Redis, and Redis is
// SIGSTOPped for 10 s (at two thirds). Every client resends the same key
// and payload on any answer but 2xx and 409 (transport errors, 503), as a
// careful client would. At the end every key is exactly one message: the
// id the client was told (201/202, or the one a 409 named) exists and
// completed, the target received that id and no other for the key, and
// Redis holds exactly one buffer task per key — 0 lost, 0 doubled; a
// message is delivered twice only when it was in flight at the SIGKILL
// (at-least-once, under the same X-Buffer-Message-Id). A resend after an
// uncertain enqueue never gets a 409 naming a message that does not exist
// (CHANGELOG.md, 2026-11-26).
func TestDrillBufferKeyedEnqueues(t *testing.T) {
	d := startBufferDrill(t)
	d.sendThroughFaults(t)
	d.waitCompleted()
	d.checkDeliveries()
	d.countRedisTasks(t)
	d.report(t)
}

// bufferDrill is TestDrillBufferKeyedEnqueues' fixture: Redis with
// persistence, the webhook.forward target, the flowgates started on it (the
// last one live) and what each step found.
type bufferDrill struct {
	srv   *rediscluster.Server
	recv  *deliveries
	env   map[string]string
	procs []*flowgatetest.Proc
	tl    *tally
	c     *client

	// sendThroughFaults
	results            []bufferResult
	killedAt, pausedAt int64 // keys answered when each fault began
	sent               time.Duration
	// waitCompleted
	lost, notCompleted []string
	// checkDeliveries
	doubled, undelivered []string
	redelivered          int
	// countRedisTasks
	tasks int
}

func startBufferDrill(t *testing.T) *bufferDrill {
	t.Helper()
	d := &bufferDrill{srv: rediscluster.StartServer(t, rediscluster.WithPersistence()),
		recv: &deliveries{byID: map[string]int{}, byKey: map[string]map[string]bool{}}}
	target := httptest.NewServer(d.recv)
	t.Cleanup(target.Close)
	d.env = flowgateEnv(d.srv.URL(), map[string]string{
		"BUFFER_WEBHOOK_URL":    target.URL,
		"BUFFER_MAX_QUEUE_SIZE": "100000",
		"BUFFER_API_TOKEN":      bearerToken,
		"LOG_LEVEL":             "info",
	})
	d.procs = []*flowgatetest.Proc{startFlowgate(t, d.env)}
	d.tl = newTally(3 * time.Second)
	d.c = newClient(d.procs[0].Base, 10*time.Second, d.tl)
	return d
}

// sendThroughFaults: the clients enqueue every key while flowgate is
// SIGKILLed and restarted (at a third) and Redis SIGSTOPped (at two thirds).
func (d *bufferDrill) sendThroughFaults(t *testing.T) {
	c, tl := d.c, d.tl
	results := make([]bufferResult, bufferDrillKeys)
	var answered atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range bufferDrillClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= bufferDrillKeys || ctx.Err() != nil {
					return
				}
				results[i] = enqueueUntilAnswered(ctx, c, i)
				answered.Add(1)
			}
		}()
	}

	waitAnswered := func(n int64) {
		for answered.Load() < n && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAnswered(bufferDrillKeys / 3)
	end := tl.outage("flowgate SIGKILL")
	d.killedAt = answered.Load()
	d.procs[len(d.procs)-1].Kill()
	d.procs = append(d.procs, startFlowgate(t, d.env))
	c.setBase(d.procs[len(d.procs)-1].Base)
	end()

	waitAnswered(2 * bufferDrillKeys / 3)
	end = tl.outage("redis SIGSTOP")
	d.pausedAt = answered.Load()
	resume := d.srv.Pause()
	time.Sleep(bufferDrillPause)
	resume()
	end()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the clients did not finish in time: %d of %d keys answered", answered.Load(), bufferDrillKeys)
	}
	d.sent = time.Since(began)
	d.results = results
}

// waitCompleted: every key answered; its message exists and completes.
func (d *bufferDrill) waitCompleted() {
	states := map[string]int{}
	deadline := time.Now().Add(2 * time.Minute)
	for i, r := range d.results {
		key := drillKey(i)
		if r.id == "" {
			d.lost = append(d.lost, key+": no messageId in the answer")
			continue
		}
		st := waitCompleted(d.c, r.id, deadline)
		states[st]++
		if st != string(contracts.BufferCompleted) {
			d.notCompleted = append(d.notCompleted, fmt.Sprintf("%s: message %s %s", key, r.id, st))
		}
	}
}

// checkDeliveries: the target got each key delivered under exactly its
// answered id.
func (d *bufferDrill) checkDeliveries() {
	recv := d.recv
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for i, r := range d.results {
		key := drillKey(i)
		ids := recv.byKey[key]
		switch {
		case len(ids) > 1:
			d.doubled = append(d.doubled, fmt.Sprintf("%s delivered as %d messages", key, len(ids)))
		case len(ids) == 0 || !ids[r.id]:
			d.undelivered = append(d.undelivered, fmt.Sprintf("%s (answered %s)", key, r.id))
		}
		if recv.byID[r.id] > 1 {
			d.redelivered++
		}
	}
}

// countRedisTasks counts the buffer tasks in Redis: one per key.
func (d *bufferDrill) countRedisTasks(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: d.srv.Addr()})
	defer rdb.Close()
	for _, q := range []string{"buffer.critical", "buffer.high", "buffer.default", "buffer.low"} {
		iter := rdb.Scan(context.Background(), 0, "asynq:{"+q+"}:t:*", 1000).Iterator()
		for iter.Next(context.Background()) {
			d.tasks++
		}
		if err := iter.Err(); err != nil {
			t.Fatalf("scan %s: %v", q, err)
		}
	}
}

// report logs the drill's summary and fails on any lost, doubled, not
// completed or undelivered key, a redelivery beyond the messages in flight
// at the kill, a task count other than the keys', and a 5xx outside the
// faults.
func (d *bufferDrill) report(t *testing.T) {
	tl, p := d.tl, d.procs[len(d.procs)-1]
	byStatus := map[int]int{}
	resends := 0
	for _, r := range d.results {
		byStatus[r.status]++
		resends += r.sends - 1
	}
	resumed := 0
	for _, pr := range d.procs {
		resumed += len(pr.LogLines("buffer: resuming an unfinished enqueue"))
	}
	in503, wrong := tl.fiveXX()
	p50, p99, worst := tl.latencies()
	summary(t, "buffer-keyed-enqueues",
		"injected: flowgate SIGKILL at %d answered keys, restarted (ready in %s); Redis SIGSTOP %s at %d | "+
			"%d keys: final answers %s, %d resends (%d × 503 inside the faults), %d claims resumed | "+
			"lost %d, doubled %d, not completed %d, undelivered %d, redelivered after the kill %d | "+
			"buffer tasks in Redis %d | all answers %s; p50 %s p99 %s max %s; sent in %s",
		d.killedAt, p.ReadyIn.Round(time.Millisecond), bufferDrillPause, d.pausedAt,
		bufferDrillKeys, statusLine(byStatus), resends, in503, resumed,
		len(d.lost), len(d.doubled), len(d.notCompleted), len(d.undelivered), d.redelivered,
		d.tasks, tl.statuses(), ms(p50), ms(p99), ms(worst), d.sent.Round(time.Millisecond))

	for _, list := range []struct {
		what  string
		items []string
	}{{"lost", d.lost}, {"doubled", d.doubled}, {"not completed", d.notCompleted}, {"undelivered", d.undelivered}} {
		if len(list.items) > 0 {
			t.Errorf("%s: %d, e.g. %s", list.what, len(list.items), strings.Join(list.items[:min(5, len(list.items))], "; "))
		}
	}
	// At-least-once: a message whose POST reached the target just before
	// the SIGKILL, unacknowledged to Asynq, is delivered again after its
	// lease (same X-Buffer-Message-Id, so the target can tell). Only the
	// messages in flight at the kill can be: BUFFER_SERVERS × BUFFER_CONCURRENCY.
	if inFlight := buffer.DefaultServers * buffer.DefaultConcurrency; d.redelivered > inFlight {
		t.Errorf("%d messages delivered more than once; at most the %d in flight at the kill may be", d.redelivered, inFlight)
	}
	if d.tasks != bufferDrillKeys {
		t.Errorf("Redis holds %d buffer tasks for %d keys", d.tasks, bufferDrillKeys)
	}
	for _, a := range wrong {
		t.Errorf("5xx outside the faults: %s", a)
	}
}

func drillKey(i int) string { return fmt.Sprintf("drill-key-%05d", i) }

// enqueueUntilAnswered sends key i's message until flowgate answers 2xx or
// 409, resending the same key and payload after anything else.
func enqueueUntilAnswered(ctx context.Context, c *client, i int) bufferResult {
	body, _ := json.Marshal(map[string]any{
		"type": "webhook.forward", "idempotencyKey": drillKey(i),
		"payload": map[string]any{"key": drillKey(i), "n": i},
	})
	hdr := http.Header{"Authorization": {"Bearer " + bearerToken}}
	var r bufferResult
	for ctx.Err() == nil {
		r.sends++
		a := c.send(http.MethodPost, "/api/buffer/enqueue", body, hdr, false)
		r.status = a.Status
		switch {
		case a.Status >= 200 && a.Status < 300:
			var ok contracts.BufferEnqueueResponse
			_ = json.Unmarshal(a.Body, &ok)
			r.id = ok.MessageID
			return r
		case a.Status == http.StatusConflict:
			var e struct {
				Error struct {
					Code    string         `json:"code"`
					Details map[string]any `json:"details"`
				} `json:"error"`
			}
			_ = json.Unmarshal(a.Body, &e)
			r.id, _ = e.Error.Details["messageId"].(string)
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	return r
}

// waitCompleted polls a message until it is completed or dead, or the
// deadline passes; it returns the last state ("404" when not found).
func waitCompleted(c *client, id string, deadline time.Time) string {
	hdr := http.Header{"Authorization": {"Bearer " + bearerToken}}
	last := ""
	for {
		a := c.send(http.MethodGet, "/api/buffer/messages/"+id, nil, hdr, false)
		var m contracts.BufferMessage
		switch {
		case a.Status == http.StatusOK && json.Unmarshal(a.Body, &m) == nil:
			last = string(m.State)
			if m.State == contracts.BufferCompleted || m.State == contracts.BufferDLQ {
				return last
			}
		default:
			last = fmt.Sprint(a.Status)
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}
