//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/holdattack"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Pace of the failover drills.
const (
	foBefore   = 4 * time.Second // load before the kill
	foAfter    = 4 * time.Second // load after flowgate answers again
	foCreators = 2               // task creators, a batch of 10 each round
	foWorkers  = 4
	foBuffer   = 2 // keyed enqueuers
	foHoldPace = 150 * time.Millisecond
	foLag      = 1500 * time.Millisecond // the replica is stopped this long before the master dies
)

// TestDrillFailover: Redis with replicas — a master, one replica and three
// Sentinels; a Cluster of three masters with a replica each — under a mixed
// load (tasks created in batches, claimed, ACKed or FAILed; buffer messages
// enqueued with keys; web holds taken). After foBefore the master (on the
// Cluster: one master) is killed with SIGKILL; Sentinel or the Cluster
// promotes its replica, flowgate follows it without a restart, the killed
// server comes back as a replica, and the load goes on for foAfter. Then
// every effect flowgate acknowledged is looked up: a task whose creation was
// answered 201, an ACK answered 200 (the task must be DONE), a FAIL answered
// 200 (its attempt must be counted), a buffer message answered 202 (it must
// exist or have been delivered), a hold answered 201 (a heartbeat must find
// it). The missing ones are counted per kind (DRILL lines).
//
// Each topology runs twice: with the defaults (REDIS_MIN_REPLICAS_ACK=0: a
// failover may lose the writes the replica had not received; the figures
// are reported, not asserted) and with REDIS_MIN_REPLICAS_ACK=1, where the
// drill fails on any loss. docs/reliability.md ("Failover") has the figures.
func TestDrillFailover(t *testing.T) {
	for _, topo := range []string{"sentinel", "cluster"} {
		for _, acks := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/replicas-ack-%d", topo, acks), func(t *testing.T) {
				runFailover(t, topo, acks)
			})
		}
	}
}

// topology is a Redis with replicas that the drill can fail over.
type topology struct {
	env      map[string]string // flowgate's Redis settings
	lag      func() func()     // make the replica that will be promoted fall behind; returns the undo
	lagWhat  string            // what lag does
	kill     func() string     // SIGKILL the (a) master; returns what was killed
	promoted func() bool       // a replica now serves the killed master's data
	rejoin   func()            // start the killed server again (it becomes a replica)
}

func runFailover(t *testing.T, topo string, acks int) {
	var tp topology
	if topo == "sentinel" {
		tp = sentinelTopology(t)
	} else {
		tp = clusterTopology(t)
	}
	recv := &deliveries{byID: map[string]int{}, byKey: map[string]map[string]bool{}}
	target := httptest.NewServer(recv)
	t.Cleanup(target.Close)
	schedule, err := filepath.Abs("../../orchestrator/holds/availability/testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	env := taskDrillEnv("")
	delete(env, "REDIS_URL")
	for k, v := range tp.env {
		env[k] = v
	}
	env["BUFFER_WEBHOOK_URL"] = target.URL
	env["BUFFER_API_TOKEN"] = bearerToken
	env["HOLDS_SCHEDULE_FILE"] = schedule
	env["HOLD_TTL"] = "5m"
	env["HOLDS_MAX_PER_CLIENT"] = "100"
	env["REDIS_MIN_REPLICAS_ACK"] = strconv.Itoa(acks)
	env["REDIS_REPLICA_ACK_TIMEOUT"] = "500ms"
	p := startFlowgate(t, env)
	tl := newTally(2 * time.Second)
	cl := newClient(p.Base, 10*time.Second, tl)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	ld := newFailoverLoad(t, cl)
	// A hold stream open across the failover: its Redis pub/sub must
	// follow the new master (or end, for the client to reconnect).
	stream, err := holdattack.New(p.Base).Open(ctx, holdType, "failover-watcher")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	ld.start(ctx, stop)

	time.Sleep(foBefore)
	readyz := probeReadyzEvery(p, 250*time.Millisecond)
	// The replica falls behind (SIGSTOP) for foLag, and the master dies
	// before it catches up: what the master acknowledged meanwhile exists
	// nowhere else — unless flowgate waited for the replica.
	end := tl.outage("replica behind, then failover")
	resume := tp.lag()
	time.Sleep(foLag)
	killedAt := time.Now()
	what := tp.kill()
	resume()
	for !tp.promoted() {
		if time.Since(killedAt) > 60*time.Second {
			t.Fatalf("no replica promoted within 60 s of killing %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	promoted := time.Since(killedAt)
	tp.rejoin()
	// Recovered: a task batch sent after the kill was answered 201.
	for ld.createdAfter(killedAt) == 0 {
		if time.Since(killedAt) > 90*time.Second {
			t.Fatalf("flowgate answered no task creation within 90 s of the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(killedAt) // an upper bound: polled every 50 ms
	end()
	readyzLine := readyz()
	recoveredAt, eventsAtRecovery := time.Now(), len(stream.Events())
	time.Sleep(foAfter)
	close(stop)
	ld.wg.Wait()
	time.Sleep(time.Second)

	r := ld.verify(t, cl, recv)
	p50, p99, worst := tl.latencies()
	streamLine, cronLine := afterFailover(t, p, stream, eventsAtRecovery, recoveredAt)
	summary(t, "failover-"+topo, "REDIS_MIN_REPLICAS_ACK=%d | %s for %s, then killed %s; replica promoted after %s; a task batch sent after the kill created within %s | "+
		"acknowledged and missing after the failover: task creates %d of %d, ACKs %d of %d, FAILs %d of %d, buffer messages %d of %d, holds %d of %d; "+
		"ACKs refused after a claim answered 200 (the claim lost) %d | /readyz from the kill: %s | hold stream: %s | cron: %s | answers %s | latency p50 %s p99 %s max %s",
		acks, tp.lagWhat, foLag, what, promoted.Round(time.Millisecond), recovered.Round(time.Millisecond),
		r.lostCreates, r.creates, r.lostAcks, r.acks, r.lostFails, r.fails, r.lostBuffer, r.buffer, r.lostHolds, r.holds,
		ld.claimLost.Load(), readyzLine, streamLine, cronLine, tl.statuses(), ms(p50), ms(p99), ms(worst))
	if r.creates == 0 || r.acks == 0 || r.buffer == 0 || r.holds == 0 {
		t.Errorf("the load did too little to measure: %+v", r)
	}
	if acks > 0 && r.lost() > 0 {
		t.Errorf("REDIS_MIN_REPLICAS_ACK=%d: %d acknowledged writes lost in the failover:\n  %s", acks, r.lost(), joinLines(r.details))
	}
	if len(ld.problems) > 0 {
		t.Errorf("unexpected answers:\n  %s", joinLines(ld.problems))
	}
}

// afterFailover checks what has no request of its own: the hold stream
// opened before the kill still delivers the holds taken after flowgate
// recovered (or ended, so its client reconnects: never silent), and the
// holds_expiry cron job (every second) ran after the recovery.
func afterFailover(t *testing.T, p *flowgatetest.Proc, s *holdattack.Stream, before int, recoveredAt time.Time) (streamLine, cronLine string) {
	t.Helper()
	after := 0
	for _, ev := range s.Events()[before:] {
		if ev["type"] == "hold" {
			after++
		}
	}
	switch ended := s.Ended(); {
	case after > 0:
		streamLine = fmt.Sprintf("%d hold events after the recovery on the stream opened before the kill", after)
	case ended != "":
		streamLine = "ended (" + ended + "): the client reconnects"
	default:
		t.Errorf("the hold stream opened before the kill delivered no hold event after the recovery and did not end")
		streamLine = "silent"
	}
	_, body := p.Get("/metrics")
	const metric = `flowgate_cron_last_run_timestamp_seconds{job="holds_expiry"} `
	i := strings.Index(body, metric)
	if i < 0 {
		t.Errorf("/metrics has no %s", metric)
		return streamLine, "no metric"
	}
	line := body[i+len(metric):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	last, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil {
		t.Errorf("%s%q: %v", metric, line, err)
		return streamLine, "unreadable"
	}
	lastRun := time.Unix(0, int64(last*float64(time.Second)))
	if !lastRun.After(recoveredAt) {
		t.Errorf("holds_expiry last ran at %s, before the recovery at %s", lastRun.Format(time.TimeOnly), recoveredAt.Format(time.TimeOnly))
	}
	return streamLine, fmt.Sprintf("holds_expiry last ran %s after the recovery", lastRun.Sub(recoveredAt).Round(time.Millisecond))
}

// probeReadyzEvery asks /readyz every interval until the returned function
// is called, which reports the answers in order of change ("200×3 503×9 200").
func probeReadyzEvery(p *flowgatetest.Proc, every time.Duration) (report func() string) {
	var seq []string
	var last, n int
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			code, _ := p.Get("/readyz")
			if code != last && n > 0 {
				seq = append(seq, fmt.Sprintf("%d×%d", last, n))
				n = 0
			}
			last = code
			n++
			select {
			case <-done:
				seq = append(seq, fmt.Sprintf("%d×%d", last, n))
				return
			case <-time.After(every):
			}
		}
	}()
	return func() string {
		close(done)
		<-finished
		return strings.Join(seq, " ") + fmt.Sprintf(" (every %s)", every)
	}
}

// --- topologies ----------------------------------------------------------

func sentinelTopology(t *testing.T) topology {
	t.Helper()
	master := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0"))
	// The replica reaches its master through a proxy that can cut the link
	// (a partition: the master's stream is dropped, not delayed).
	link := startLinkProxy(t, master.Addr())
	replica := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0",
		"--replicaof", "127.0.0.1", portOf(link.addr)))
	waitLinked(t, replica.Addr())
	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, startSentinel(t, master.Port()))
	}
	return topology{
		env:     map[string]string{"REDIS_SENTINEL_ADDRS": strings.Join(sentinels, ","), "REDIS_SENTINEL_MASTER": "drill"},
		lag:     func() func() { link.cut.Store(true); return func() {} },
		lagWhat: "the replica's link cut (its master's stream dropped)",
		kill: func() string {
			master.Kill()
			link.close()
			return "the Sentinel-managed master " + master.Addr()
		},
		promoted: func() bool {
			out, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", portOf(sentinels[0]),
				"sentinel", "get-master-addr-by-name", "drill").Output()
			return strings.Contains(string(out), strconv.Itoa(replica.Port()))
		},
		// Back as a master with an empty data set; the Sentinels turn it
		// into a replica of the promoted one within a second or two.
		rejoin: master.Start,
	}
}

func clusterTopology(t *testing.T) topology {
	t.Helper()
	c := rediscluster.StartWithReplicas(t, 1)
	ctx := context.Background()
	victim, err := c.MasterOf(ctx, "{tasks}")
	if err != nil {
		t.Fatal(err)
	}
	// A node other than the victim answers who owns the victim's slots.
	var other string
	for _, a := range c.Addrs() {
		if a != victim {
			other = a
			break
		}
	}
	replica, err := c.ReplicaOf(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	probe := redis.NewClient(&redis.Options{Addr: other, MaxRetries: -1})
	t.Cleanup(func() { _ = probe.Close() })
	return topology{
		env:     map[string]string{"REDIS_URL": flowgatetest.ClusterURL(c.Addrs(), 3)},
		lag:     func() func() { return c.Pause(replica) },
		lagWhat: "the replica stopped (SIGSTOP; resumed at the kill)",
		kill: func() string {
			c.Kill(victim)
			return "cluster master " + victim
		},
		promoted: func() bool {
			shards, err := probe.ClusterShards(ctx).Result()
			if err != nil {
				return false
			}
			// No shard that serves slots has the victim as its master (once
			// its replica is promoted, the victim is a slot-less shard of
			// its own, health "fail").
			for _, sh := range shards {
				for _, n := range sh.Nodes {
					if len(sh.Slots) > 0 && n.Role == "master" && net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) == victim {
						return false
					}
				}
			}
			info, err := probe.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		},
		rejoin: func() { c.Restart(victim) },
	}
}

// startSentinel runs a redis-sentinel monitoring the master on port as
// "drill" (quorum 2, down after 1 s).
func startSentinel(t *testing.T, masterPort int) string {
	t.Helper()
	bin := os.Getenv("FLOWGATE_TEST_REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor drill 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds drill 1000\nsentinel failover-timeout drill 10000\n", portOf(addr), dir, masterPort)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Skipf("redis-sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("redis-cli", "-p", portOf(addr), "sentinel", "get-master-addr-by-name", "drill").Output()
		if strings.Contains(string(out), strconv.Itoa(masterPort)) {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel on %s never reported the master: %q", addr, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// linkProxy forwards TCP to a Redis master; while cut is set, what the
// master sends is read and dropped (the replica's acknowledgements still
// reach the master, so WAIT sees them stall).
type linkProxy struct {
	addr  string
	cut   atomic.Bool
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, down) }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 && !p.cut.Load() {
						if _, werr := down.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						_ = down.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *linkProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func portOf(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// waitLinked waits until the replica at addr has its master link up.
func waitLinked(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s never linked: %v %s", addr, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- the load ------------------------------------------------------------

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
