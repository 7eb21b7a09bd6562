//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Size and pace of the slot migration drill.
const (
	migShards        = 6                      // REDIS_SHARDS of the drill's flowgate
	migTasks         = 1200                   // tasks created, claimed, FAILed per plan and ACKed
	migTaskInterval  = 400 * time.Millisecond // one batch of 50 tasks per interval
	migBufferClients = 4                      // keyed enqueuers, each pausing migBufferPace
	migBufferPace    = 40 * time.Millisecond
	migHolders       = 4 // hold create/release loops, one client each, on migHoldSlots shared slots
	migHoldSlots     = 8
	migHoldTTL       = 3 * time.Second
	migBatch         = 5 // keys per MIGRATE
	migPause         = 40 * time.Millisecond
	migMinWindow     = 3 * time.Second // least time a slot stays MIGRATING / IMPORTING
	migSettle        = 3 * time.Second // load kept running after the last migration
)

// TestDrillSlotMigrationUnderLoad: a 3-master Redis Cluster, flowgate with
// REDIS_SHARDS=6, and a steady load — signed workers creating, claiming,
// FAILing (per plan) and ACKing 1,200 tasks; 4 holders taking and
// releasing holds on 8 shared slots; 4 clients enqueueing buffer messages
// with idempotency keys. While it runs the slot of the busiest tasks hash
// tag moves to another master (CLUSTER SETSLOT MIGRATING/IMPORTING, MIGRATE
// 5 keys at a time with 40 ms pauses and for at least 3 s, so requests
// meet ASK and TRYAGAIN), then the busiest buffer slot, then the busiest
// holds slot; the load goes
// on for 3 s after. Every request that meets a 5xx or a transport error is
// sent again (same queue_id, same idempotency key; a hold's DELETE until
// it is answered). At the end:
//
//   - tasks: each created task is DONE after exactly its planned FAILs with
//     one DONE event (or a dead letter after 3 FAILs); none missing, none
//     left open, /queue/stats agrees;
//   - buffer: every key is one message, completed, delivered under that id
//     (a resend is answered 409 naming the same id: a reported duplicate);
//   - holds: no two holders ever held one slot at once, every hold created
//     was released (200 on its first DELETE, or 404 after an uncertain
//     one), and after HOLD_TTL every slot can be held again.
//
// The 5xx answers met inside the migration windows are counted and logged
// (DRILL line); 5xx outside them fail the drill.
func TestDrillSlotMigrationUnderLoad(t *testing.T) {
	c := rediscluster.Start(t)
	recv := &deliveries{byID: map[string]int{}, byKey: map[string]map[string]bool{}}
	target := httptest.NewServer(recv)
	t.Cleanup(target.Close)
	schedule, err := filepath.Abs("../../orchestrator/holds/availability/testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	env := taskDrillEnv(flowgatetest.ClusterURL(c.Addrs(), migShards))
	env["BUFFER_WEBHOOK_URL"] = target.URL
	env["BUFFER_API_TOKEN"] = bearerToken
	env["BUFFER_MAX_QUEUE_SIZE"] = "100000"
	env["HOLDS_SCHEDULE_FILE"] = schedule
	env["HOLD_TTL"] = migHoldTTL.String()
	p := startFlowgate(t, env)
	tl := newTally(2 * time.Second)
	cl := newClient(p.Base, 30*time.Second, tl)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()

	l := newTaskLoad(cl, migTasks, maxAttempts)
	l.any5xx = true
	waitTasks := runLoad(ctx, l, migTaskInterval)
	stop := make(chan struct{})
	bl := startBufferLoad(ctx, cl, stop)
	hl := startHoldLoad(ctx, t, cl, stop)

	// Migrate once a quarter of the tasks exist and the other loads have
	// written keys.
	waitCreated(l, migTasks/4, 60*time.Second)
	var reports []string
	for _, m := range []struct{ what, pattern string }{
		{"tasks", "flowgate:{tasks*"},
		{"buffer", "flowgate:buffer:{buffer*"},
		{"holds", "{holds*"},
	} {
		reports = append(reports, migrateBusiest(ctx, t, c, tl, m.what, m.pattern))
	}
	time.Sleep(migSettle)
	close(stop)
	bl.wg.Wait()
	hl.wg.Wait()
	st := waitTasks()
	elapsed := time.Since(began)

	// Tasks.
	lc := l.verify(t)
	ackNew, ackDup, failNew, ackedTwice := l.sums()
	// Buffer.
	bufLost, bufDoubled, bufNotDone, bufDup := bl.check(t, cl, recv)
	// Holds.
	holdProblems := hl.check(t, cl)
	// 5xx.
	inMig, outside := migration5xx(tl)

	summary(t, "slot-migration", "REDIS_SHARDS=%d on 3 masters | migrated: %s | "+
		"tasks %d: DONE %d, dead letters %d, PROCESSING %d, PENDING %d, missing %d, wrong end %d; DONE events %d (twice: %d); ACK applied %d + duplicate %d, FAIL applied %d (plan %d), 409 on resend %d | "+
		"buffer: %d keys, lost %d, doubled %d, not completed %d, resends answered 409 (reported duplicates) %d, deliveries %d | "+
		"holds: %d created, %d released, refused (409 taken, 429 quota) %d, uncertain creates (5xx) %d, double holds %d | "+
		"5xx in migration windows %s, outside %d | answers %s | %s",
		migShards, strings.Join(reports, "; "),
		l.n, lc.byStatus[contracts.StatusDone], lc.dlq, lc.byStatus[contracts.StatusProcessing], lc.byStatus[contracts.StatusPending],
		lc.missing, lc.wrong, lc.doneEvents, lc.ackedTwice, ackNew, ackDup, failNew, l.wantFails(), l.conflict,
		bl.keys(), bufLost, bufDoubled, bufNotDone, bufDup, recv.total(),
		hl.created.Load(), hl.released.Load(), hl.contended.Load(), hl.uncertain.Load(), hl.doubles.Load(),
		inMig, len(outside), tl.statuses(), elapsed.Round(time.Millisecond))

	if !l.done.Load() || lc.wrong > 0 {
		t.Errorf("tasks: %d of %d did not reach their planned end (%d missing from the ledger; stats %+v):\n  %s",
			lc.wrong, l.n, lc.missing, st, joinLines(lc.wrongFate))
	}
	if lc.ackedTwice > 0 || ackedTwice > 0 {
		t.Errorf("tasks: ACKs applied twice: %d tasks with two DONE events, %d with two fresh ACK answers", lc.ackedTwice, ackedTwice)
	}
	if lc.unknownSeen > 0 {
		t.Errorf("tasks: %d in the ledger that the drill never created", lc.unknownSeen)
	}
	if st.Total != l.n || st.ByStatus[contracts.StatusDone]+st.DLQ != l.n {
		t.Errorf("tasks: /queue/stats %+v, want total %d = DONE + dead letters", st, l.n)
	}
	// The ledger's indexes (what /queue/stats counts and claims take from)
	// against its task hashes (what the listing and GET /queue/{id} read).
	var disagree []string
	for _, s := range []contracts.Status{contracts.StatusPending, contracts.StatusProcessing, contracts.StatusDone, contracts.StatusError} {
		if st.ByStatus[s] != lc.byStatus[s] {
			disagree = append(disagree, fmt.Sprintf("%s %d by index, %d by task", s, st.ByStatus[s], lc.byStatus[s]))
		}
	}
	pendingIndexed := 0
	for _, n := range st.PendingByPriority {
		pendingIndexed += n
	}
	if pendingIndexed != lc.byStatus[contracts.StatusPending] {
		disagree = append(disagree, fmt.Sprintf("claimable (pending indexes) %d, PENDING by task %d", pendingIndexed, lc.byStatus[contracts.StatusPending]))
	}
	if len(disagree) > 0 {
		t.Errorf("tasks: after the migration the ledger's indexes disagree with its task hashes: %s; total %d by index, %d tasks listed. "+
			"Likely cause: the ledger's scripts declare only KEYS[1] and build their other keys from ARGV; while the slot migrates, "+
			"Redis aborts such a script at the first key already moved and keeps the writes it made before "+
			"(flowgate logged %d \"Script attempted to access a non local key\")",
			strings.Join(disagree, "; "), st.Total, l.n-lc.missing, len(p.LogLines("non local key")))
	}
	if len(l.problems) > 0 {
		t.Errorf("tasks: unexpected answers:\n  %s", joinLines(l.problems))
	}
	if bufLost+bufDoubled+bufNotDone > 0 {
		t.Errorf("buffer: %d keys lost, %d doubled, %d not completed (details above)", bufLost, bufDoubled, bufNotDone)
	}
	if len(holdProblems) > 0 {
		t.Errorf("holds:\n  %s", joinLines(holdProblems))
	}
	for i, a := range outside {
		if i == 10 {
			t.Errorf("… and %d more", len(outside)-10)
			break
		}
		t.Errorf("5xx outside the migration windows: %s", a)
	}
}

// migrateBusiest moves the slot of the hash tag of pattern's keys that has
// the most keys now to another master, MIGRATE migBatch keys at a time with
// migPause between, and reports what it moved. The window is an outage of
// tl, so the 5xx answers within it are told apart.
func migrateBusiest(ctx context.Context, t *testing.T, c *rediscluster.Cluster, tl *tally, what, pattern string) string {
	t.Helper()
	var tag string
	var keys int
	for try := 0; tag == "" && try < 40; try++ { // holds' keys live only while a hold does
		tag, keys = busiestTag(ctx, t, c, pattern)
		if tag == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if tag == "" {
		t.Fatalf("migrate %s: no key matches %s", what, pattern)
	}
	slot := shard.Slot(tag)
	owner, err := c.MasterOf(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.Addrs()
	to := 0
	for i, a := range addrs {
		if a == owner {
			to = (i + 1) % len(addrs)
		}
	}
	end := tl.outage("migrate " + what)
	began := time.Now()
	m, err := c.BeginMigration(ctx, slot, to)
	if err != nil {
		t.Fatalf("migrate %s: %v", what, err)
	}
	// A slot of few keys (a holds shard) would move in milliseconds: keep
	// it half-way for migMinWindow, so the load meets ASK on the keys it
	// creates meanwhile (they go to the new master).
	for time.Since(began) < migMinWindow {
		if _, err := m.Step(ctx, migBatch); err != nil {
			t.Fatalf("migrate %s slot %d: %v", what, slot, err)
		}
		time.Sleep(migPause)
	}
	if err := m.Finish(ctx, migBatch, migPause); err != nil {
		t.Fatalf("migrate %s slot %d: %v", what, slot, err)
	}
	took := time.Since(began)
	end()
	return fmt.Sprintf("%s %s (slot %d, %d keys, %d moved) %s → %s in %s",
		what, tag, slot, keys, m.Moved, owner, addrs[to], took.Round(time.Millisecond))
}

// busiestTag is the hash tag ("{…}") with the most keys matching pattern
// over all masters, and its key count.
func busiestTag(ctx context.Context, t *testing.T, c *rediscluster.Cluster, pattern string) (string, int) {
	t.Helper()
	count := map[string]int{}
	for _, addr := range c.Addrs() {
		cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		iter := cl.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}'); i >= 0 && j > i+1 {
				count[k[i:j+1]]++
			}
		}
		err := iter.Err()
		_ = cl.Close()
		if err != nil {
			t.Fatalf("SCAN %s on %s: %v", pattern, addr, err)
		}
	}
	best, n := "", 0
	for tag, k := range count {
		if k > n || (k == n && tag < best) {
			best, n = tag, k
		}
	}
	return best, n
}

// migration5xx counts the 5xx answers inside the migration windows (by
// status and route) and returns those outside them.
func migration5xx(tl *tally) (inside string, outside []answer) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	by := map[string]int{}
	n := 0
	for _, a := range tl.fivexx {
		if tl.during(a) {
			n++
			by[fmt.Sprintf("%d %s %s", a.Status, a.Method, routeOfPath(a.Path))]++
			continue
		}
		outside = append(outside, a)
	}
	parts := make([]string, 0, len(by))
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(parts)
	if n == 0 {
		return "0", outside
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", ")), outside
}

// routeOfPath drops ids from a path, so 5xx answers group by route.
func routeOfPath(path string) string {
	path, _, _ = strings.Cut(path, "?")
	parts := strings.Split(path, "/")
	for i, s := range parts {
		if len(s) > 20 {
			parts[i] = ":id"
		}
	}
	return strings.Join(parts, "/")
}

func (d *deliveries) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, v := range d.byID {
		n += v
	}
	return n
}

// bufferLoad is the drill's keyed enqueuers.
type bufferLoad struct {
	wg      sync.WaitGroup
	next    atomic.Int64
	mu      sync.Mutex
	results map[int]bufferResult
}

func startBufferLoad(ctx context.Context, c *client, stop <-chan struct{}) *bufferLoad {
	b := &bufferLoad{results: map[int]bufferResult{}}
	for range migBufferClients {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-time.After(migBufferPace):
				}
				i := int(b.next.Add(1) - 1)
				r := enqueueUntilAnswered(ctx, c, i)
				b.mu.Lock()
				b.results[i] = r
				b.mu.Unlock()
			}
		}()
	}
	return b
}

func (b *bufferLoad) keys() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.results)
}

// check waits for every key's message to complete and compares what the
// clients were told with what the target received.
func (b *bufferLoad) check(t *testing.T, c *client, recv *deliveries) (lost, doubled, notDone, dup409 int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var bad []string
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, r := range b.results {
		if r.status == http.StatusConflict {
			dup409++
		}
		if r.id == "" {
			lost++
			bad = append(bad, fmt.Sprintf("key %s: no message id (last status %d after %d sends)", drillKey(i), r.status, r.sends))
			continue
		}
		if st := waitCompleted(c, r.id, deadline); st != string(contracts.BufferCompleted) {
			notDone++
			bad = append(bad, fmt.Sprintf("key %s: message %s is %s", drillKey(i), r.id, st))
		}
	}
	recv.mu.Lock()
	for i, r := range b.results {
		ids := recv.byKey[drillKey(i)]
		switch {
		case r.id != "" && !ids[r.id]:
			lost++
			bad = append(bad, fmt.Sprintf("key %s: message %s never delivered (delivered ids %v)", drillKey(i), r.id, ids))
		case len(ids) > 1:
			doubled++
			bad = append(bad, fmt.Sprintf("key %s: delivered as %d messages %v", drillKey(i), len(ids), ids))
		}
	}
	recv.mu.Unlock()
	if len(bad) > 20 {
		bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
	}
	if len(bad) > 0 {
		t.Logf("buffer problems:\n  %s", joinLines(bad))
	}
	return lost, doubled, notDone, dup409
}

// holdSlot is one (specialist, start) the holders compete for.
type holdSlot struct {
	specialist string
	start      time.Time
}

// holdLoad is the drill's holders.
type holdLoad struct {
	wg                                               sync.WaitGroup
	slots                                            []holdSlot
	mu                                               sync.Mutex
	live                                             map[int]string // slot index → holder
	problems                                         []string
	created, released, contended, uncertain, doubles atomic.Int64
}

func startHoldLoad(ctx context.Context, t *testing.T, c *client, stop <-chan struct{}) *holdLoad {
	t.Helper()
	h := &holdLoad{live: map[int]string{}, slots: freeHoldSlots(t, c, migHoldSlots)}
	for w := range migHolders {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			client := fmt.Sprintf("drill-holder-%d", w)
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				h.once(ctx, c, client, rand.IntN(len(h.slots)))
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	return h
}

func (h *holdLoad) problem(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.problems) < 30 {
		h.problems = append(h.problems, fmt.Sprintf(format, args...))
	}
}

// once takes slot i for client, keeps it 10 ms and releases it.
func (h *holdLoad) once(ctx context.Context, c *client, client string, i int) {
	s := h.slots[i]
	body, _ := json.Marshal(map[string]string{"appointmentTypeId": holdType, "clientId": client,
		"slotStartDate": s.start.UTC().Format(time.RFC3339), "specialistId": s.specialist})
	a := c.send(http.MethodPost, "/v1/holds", body, nil, false)
	switch {
	case a.Status == http.StatusCreated:
	case a.Status == http.StatusConflict || a.Status == http.StatusTooManyRequests:
		h.contended.Add(1)
		return
	case a.Err != nil || a.Status >= 500:
		h.uncertain.Add(1) // it may exist: it expires after HOLD_TTL
		return
	default:
		h.problem("hold %s %s by %s: %s", s.specialist, s.start.Format(time.RFC3339), client, a)
		return
	}
	var resp struct {
		HoldID string `json:"holdId"`
	}
	if err := json.Unmarshal(a.Body, &resp); err != nil || resp.HoldID == "" {
		h.problem("hold answer: %s", a)
		return
	}
	h.created.Add(1)
	h.mu.Lock()
	if other, taken := h.live[i]; taken {
		h.doubles.Add(1)
		if len(h.problems) < 30 {
			h.problems = append(h.problems, fmt.Sprintf("slot %s %s held by %s and %s at once",
				s.specialist, s.start.Format(time.RFC3339), other, client))
		}
	}
	h.live[i] = client
	h.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	h.mu.Lock()
	if h.live[i] == client {
		delete(h.live, i)
	}
	h.mu.Unlock()
	for first := true; ctx.Err() == nil; first = false {
		r := c.send(http.MethodDelete, "/v1/holds/"+resp.HoldID+"?clientId="+client, nil, nil, false)
		switch {
		case r.Status == http.StatusOK:
			h.released.Add(1)
			return
		case r.Status == http.StatusNotFound && !first:
			h.released.Add(1) // an uncertain DELETE before it was applied
			return
		case r.Err != nil || r.Status >= 500:
			time.Sleep(50 * time.Millisecond)
			continue
		default:
			h.problem("release %s by %s: %s", resp.HoldID, client, r)
			return
		}
	}
}

// check: every created hold was released, no double holds, and after
// HOLD_TTL each slot can be held (and is released) by a fresh client.
func (h *holdLoad) check(t *testing.T, c *client) []string {
	t.Helper()
	if h.created.Load() != h.released.Load() {
		h.problem("%d holds created, %d released", h.created.Load(), h.released.Load())
	}
	time.Sleep(migHoldTTL + time.Second)
	for i, s := range h.slots {
		body, _ := json.Marshal(map[string]string{"appointmentTypeId": holdType, "clientId": fmt.Sprintf("drill-after-%d", i),
			"slotStartDate": s.start.UTC().Format(time.RFC3339), "specialistId": s.specialist})
		a := c.send(http.MethodPost, "/v1/holds", body, nil, false)
		var resp struct {
			HoldID string `json:"holdId"`
		}
		if a.Status != http.StatusCreated || json.Unmarshal(a.Body, &resp) != nil {
			h.problem("after the drill, slot %s %s cannot be held: %s", s.specialist, s.start.Format(time.RFC3339), a)
			continue
		}
		if r := c.send(http.MethodDelete, "/v1/holds/"+resp.HoldID+fmt.Sprintf("?clientId=drill-after-%d", i), nil, nil, false); r.Status != http.StatusOK {
			h.problem("after the drill, release of %s: %s", resp.HoldID, r)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.problems
}

// holdType is the schedule file's appointment type.
const holdType = "consultation"

// freeHoldSlots finds n free (specialist, start) pairs in the schedule
// file's catalogue, from tomorrow on.
func freeHoldSlots(t *testing.T, c *client, n int) []holdSlot {
	t.Helper()
	var out []holdSlot
	for d := 1; len(out) < n && d < 30; d++ {
		day := time.Now().AddDate(0, 0, d).Format(time.DateOnly)
		a := c.send(http.MethodGet, "/v1/appointment-types/"+holdType+"/timeslots?from="+day+"&days=1", nil, nil, false)
		var resp struct {
			Slots []struct {
				Start time.Time `json:"slotStartDate"`
				Free  []string  `json:"specialistIds"`
			} `json:"slots"`
		}
		if a.Status != http.StatusOK || json.NewDecoder(bytes.NewReader(a.Body)).Decode(&resp) != nil {
			t.Fatalf("timeslots: %s", a)
		}
		for _, s := range resp.Slots {
			for _, sp := range s.Free {
				if len(out) < n {
					out = append(out, holdSlot{specialist: sp, start: s.Start})
				}
			}
		}
	}
	if len(out) < n {
		t.Fatalf("only %d free slots in the schedule file", len(out))
	}
	return out
}
