//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/holdattack"
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
