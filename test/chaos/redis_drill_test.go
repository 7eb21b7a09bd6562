//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Drill sizes (the operator drill).
const (
	drillTasks   = 2000
	drillWorkers = 8
	maxAttempts  = 3
)

// taskDrillEnv is the flowgate environment of the task drills: the seed's
// 3 attempts, short requeue backoffs so a FAILed task comes back within
// the drill, and the retry-overdue repair sweep every second (it requeues
// a FAILed task whose Asynq requeue was lost in the outage).
func taskDrillEnv(redisURL string) map[string]string {
	return flowgateEnv(redisURL, map[string]string{
		"MAX_RETRY_ATTEMPTS":     fmt.Sprint(maxAttempts),
		"REQUEUE_BACKOFF_BASE":   "500ms",
		"REQUEUE_BACKOFF_MAX":    "1s",
		"RETRY_OVERDUE_SCHEDULE": "@every 1s",
		"RETRY_OVERDUE_AFTER":    "6500ms",
	})
}

// runLoad starts the producer (a batch of 50 every interval), the workers
// and the watcher; wait blocks until every task is settled or ctx ends and
// returns the last stats.
func runLoad(ctx context.Context, l *taskLoad, interval time.Duration) (wait func() contracts.StatsResponse) {
	var wg sync.WaitGroup
	wg.Add(1 + drillWorkers)
	go func() { defer wg.Done(); l.produce(ctx, interval) }()
	for w := 0; w < drillWorkers; w++ {
		go func() { defer wg.Done(); l.work(ctx, fmt.Sprintf("vm-drill-%d", w)) }()
	}
	stats := make(chan contracts.StatsResponse, 1)
	go func() { stats <- l.watch(ctx) }()
	return func() contracts.StatsResponse {
		st := <-stats
		l.done.Store(true)
		wg.Wait()
		return st
	}
}

// waitCreated blocks until at least n tasks were created (or timeout).
func waitCreated(l *taskLoad, n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for l.created.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrillRedisOutage: Redis (AOF, fsync always) is paused with SIGSTOP
// for FLOWGATE_DRILL_PAUSE (30 s) and later SIGKILLed and restarted from
// its AOF, while a producer creates 2,000 tasks and 8 signed workers claim,
// FAIL and ACK them. Afterwards every task is DONE after exactly its
// planned FAILs (one DONE event: each ACK applied once) or a dead letter
// after 3, nothing is left PROCESSING, and the queue and webhook routes
// answered no 5xx but 503 while Redis was down.
func TestDrillRedisOutage(t *testing.T) {
	pauseFor := drillPause(t)
	srv := rediscluster.StartServer(t, rediscluster.WithPersistence())
	p := startFlowgate(t, taskDrillEnv(srv.URL()))
	tl := newTally(3 * time.Second)
	c := newClient(p.Base, pauseFor+60*time.Second, tl)
	l := newTaskLoad(c, drillTasks, maxAttempts)

	ctx, cancel := context.WithTimeout(context.Background(), pauseFor+120*time.Second)
	defer cancel()
	began := time.Now()
	wait := runLoad(ctx, l, 250*time.Millisecond)

	// 1. SIGSTOP once a quarter of the tasks exist.
	pausePhase(t, srv, p, l, tl, began, pauseFor)

	// 2. SIGKILL and an AOF restart once half of them exist.
	waitCreated(l, drillTasks/2, 30*time.Second)
	time.Sleep(time.Second)
	created, claimed := l.created.Load(), l.claimed.Load()
	endKill := tl.outage("SIGKILL")
	killedAt := time.Now()
	srv.Kill()
	time.Sleep(2 * time.Second)
	srv.Start()
	endKill()
	back := waitReady(t, p, http.StatusOK, 30*time.Second)
	t.Logf("SIGKILL + AOF restart at %s (created %d, claimed %d): Redis down %s, flowgate ready %s after the restart",
		killedAt.Sub(began).Round(time.Millisecond), created, claimed, (2 * time.Second), back.Round(time.Millisecond))

	st := wait()
	elapsed := time.Since(began)
	checkTaskDrill(t, "redis-outage", l, tl, st, elapsed,
		fmt.Sprintf("Redis SIGSTOP %s, then SIGKILL + AOF restart (down 2s)", pauseFor))
}

// pausePhase waits until a quarter of the tasks exist, then keeps Redis
// stopped for pauseFor and waits for flowgate to be ready again.
func pausePhase(t *testing.T, srv *rediscluster.Server, p *flowgatetest.Proc, l *taskLoad, tl *tally, began time.Time, pauseFor time.Duration) {
	t.Helper()
	waitCreated(l, drillTasks/4, 30*time.Second)
	created, claimed := l.created.Load(), l.claimed.Load()
	pausedAt := time.Since(began)
	endPause := tl.outage("SIGSTOP")
	resume := srv.Pause()
	readyz := probeReadyz(p, pauseFor)
	time.Sleep(pauseFor)
	resume()
	endPause()
	t.Logf("SIGSTOP %s at %s (created %d, claimed %d); /readyz while paused: %s", pauseFor,
		pausedAt.Round(time.Millisecond), created, claimed, readyz())
	waitReady(t, p, http.StatusOK, 30*time.Second)
}

// TestDrillRedisPauseBearer is the pause of TestDrillRedisOutage (at most
// 10 s, no kill) with WEBHOOK_AUTH=token: no replay check stands before
// the ledger, so every claim sent while Redis is stopped reaches it, times
// out (503) and runs when Redis continues — the case of issue #8 defect 3.
// No task may be left PROCESSING under a worker that was told 503.
func TestDrillRedisPauseBearer(t *testing.T) {
	pauseFor := min(drillPause(t), 10*time.Second)
	srv := rediscluster.StartServer(t, rediscluster.WithPersistence())
	env := taskDrillEnv(srv.URL())
	env["WEBHOOK_AUTH"], env["WEBHOOK_TOKEN"] = "token", bearerToken
	p := startFlowgate(t, env)
	tl := newTally(3 * time.Second)
	c := newClient(p.Base, pauseFor+60*time.Second, tl)
	c.bearer = bearerToken
	l := newTaskLoad(c, drillTasks, maxAttempts)

	ctx, cancel := context.WithTimeout(context.Background(), pauseFor+120*time.Second)
	defer cancel()
	began := time.Now()
	wait := runLoad(ctx, l, 150*time.Millisecond)
	pausePhase(t, srv, p, l, tl, began, pauseFor)
	st := wait()
	checkTaskDrill(t, "redis-pause-bearer", l, tl, st, time.Since(began),
		fmt.Sprintf("Redis SIGSTOP %s under bearer-token workers (claims reach the ledger while it is stopped)", pauseFor))
}

// probeReadyz asks /readyz once a second for span (each probe bounded by
// the client's 5 s) and returns a function that waits for the last probe
// and reports the answers and the slowest one.
func probeReadyz(p *flowgatetest.Proc, span time.Duration) (report func() string) {
	codes := map[int]int{}
	var worst time.Duration
	done := make(chan struct{})
	stop := time.Now().Add(span)
	go func() {
		defer close(done)
		for time.Now().Before(stop) {
			t0 := time.Now()
			code, _ := p.Get("/readyz")
			codes[code]++
			worst = max(worst, time.Since(t0))
			time.Sleep(time.Second)
		}
	}()
	return func() string {
		<-done
		return fmt.Sprintf("%s, slowest %s", statusLine(codes), ms(worst))
	}
}

// checkTaskDrill asserts the end state of a task drill and logs its
// summary.
func checkTaskDrill(t *testing.T, name string, l *taskLoad, tl *tally, st contracts.StatsResponse, elapsed time.Duration, injected string) {
	t.Helper()
	lc := l.verify(t)
	ackNew, ackDup, failNew, ackedTwice := l.sums()
	in503, wrong := tl.fiveXX()
	p50, p99, worst := tl.latencies()
	summary(t, name, "injected: %s | tasks %d: DONE %d, dead letters %d, PROCESSING %d, PENDING %d, ERROR (retrying) %d, missing %d, wrong end %d, sweep recoveries %d | "+
		"DONE events %d (tasks ACKed twice: ledger %d, answers %d) | ACK answers applied %d + duplicate %d, FAIL answers applied %d (plan %d), 409 on resend %d | "+
		"503 in outage %d, other 5xx %d | answers %s | latency p50 %s p99 %s max %s | %s",
		injected, l.n, lc.byStatus[contracts.StatusDone], lc.dlq, lc.byStatus[contracts.StatusProcessing], lc.byStatus[contracts.StatusPending],
		lc.byStatus[contracts.StatusError]-lc.dlq, lc.missing, lc.wrong, lc.recovered, lc.doneEvents, lc.ackedTwice, ackedTwice, ackNew, ackDup, failNew, l.wantFails(),
		l.conflict, in503, len(wrong), tl.statuses(), ms(p50), ms(p99), ms(worst), elapsed.Round(time.Millisecond))
	if !l.done.Load() || lc.wrong > 0 {
		t.Errorf("%d tasks did not reach their planned end, %d of them stranded (stats %+v):\n  %s",
			lc.wrong, lc.stranded, st, joinLines(lc.wrongFate))
	}
	if lc.ackedTwice > 0 || ackedTwice > 0 {
		t.Errorf("ACKs applied twice: %d tasks with two DONE events, %d with two fresh ACK answers", lc.ackedTwice, ackedTwice)
	}
	if lc.unknownSeen > 0 {
		t.Errorf("%d tasks in the ledger that the drill never created", lc.unknownSeen)
	}
	for i, a := range wrong {
		if i == 10 {
			t.Errorf("… and %d more", len(wrong)-10)
			break
		}
		t.Errorf("5xx outside a Redis outage or other than 503: %s", a)
	}
	if len(l.problems) > 0 {
		t.Errorf("unexpected answers:\n  %s", joinLines(l.problems))
	}
}

func joinLines(s []string) string { return strings.Join(s, "\n  ") }
