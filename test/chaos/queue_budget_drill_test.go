//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// Sizes of the queue budget drill. QUEUE_REQUEST_TIMEOUT is 1 s here
// rather than its 2 s default so that 1,100 requests, each waiting its
// budget out, fit in about 40 s at budgetParallel; the claims long-poll
// budgetClaimWait on top.
const (
	budgetTimeout   = time.Second // QUEUE_REQUEST_TIMEOUT of the drill
	budgetClaimWait = time.Second // wait_ms of every claim
	budgetPerRoute  = 100
	budgetParallel  = 32
)

// budgetRequest builds the i-th request of one route: a fresh body, query
// or task id each time, so every signature is new.
type budgetRequest func(i int) (path string, body []byte)

// budgetRoutes are the drill's requests, keyed like the binary's route
// table: every queue API route, and the primary ACK and FAIL webhooks
// (their /webhook/… aliases run the same chain).
var budgetRoutes = map[string]budgetRequest{
	"POST /queue": func(i int) (string, []byte) {
		return "/queue", fmt.Appendf(nil, `{"encounter_id":"budget-%d","payload":{"n":%d}}`, i, i)
	},
	"GET /queue":       func(i int) (string, []byte) { return fmt.Sprintf("/queue?limit=%d", i+1), nil },
	"GET /queue/stats": func(i int) (string, []byte) { return fmt.Sprintf("/queue/stats?probe=%d", i), nil },
	"POST /queue/claim": func(i int) (string, []byte) {
		return "/queue/claim", fmt.Appendf(nil, `{"worker_id":"vm-budget-%d","wait_ms":%d}`, i, budgetClaimWait.Milliseconds())
	},
	"GET /queue/:queue_id": func(int) (string, []byte) { return "/queue/" + uuid.NewString(), nil },
	"PATCH /queue/:queue_id/status": func(int) (string, []byte) {
		return "/queue/" + uuid.NewString() + "/status", []byte(`{"status":"PENDING"}`)
	},
	"PATCH /queue/:queue_id/requeue": func(int) (string, []byte) { return "/queue/" + uuid.NewString() + "/requeue", nil },
	"POST /queue/:queue_id/replay":   func(int) (string, []byte) { return "/queue/" + uuid.NewString() + "/replay", nil },
	"POST /queue/:queue_id/heartbeat": func(i int) (string, []byte) {
		return "/queue/" + uuid.NewString() + "/heartbeat", fmt.Appendf(nil, `{"worker_id":"vm-budget-%d"}`, i)
	},
	"POST /ack": func(i int) (string, []byte) {
		return "/ack", fmt.Appendf(nil, `{"queue_id":"%s","encounter_id":"budget-%d","experityActions":{}}`, uuid.NewString(), i)
	},
	"POST /fail": func(i int) (string, []byte) {
		return "/fail", fmt.Appendf(nil, `{"queue_id":"%s","encounter_id":"budget-%d","error_message":"drill"}`, uuid.NewString(), i)
	},
}

// budgetOf is what a route may take: QUEUE_REQUEST_TIMEOUT, a claim its
// wait_ms more, each budgetSlack more.
func budgetOf(route string) time.Duration {
	if route == "POST /queue/claim" {
		return budgetTimeout + budgetClaimWait + budgetSlack
	}
	return budgetTimeout + budgetSlack
}

// TestDrillQueueBudgetRedisPaused: with Redis stopped (SIGSTOP), 100
// requests to every queue API route (read from the binary's route table:
// a new /queue route without a request here fails the drill) and to the
// ACK and FAIL webhooks, signed with fresh version-2 signatures, 32 at a
// time, each answer 503 (the signature's replay check fails closed) within
// QUEUE_REQUEST_TIMEOUT (+ a claim's wait_ms) + 0.5 s: the replay check
// runs inside the request's budget on every route, the claim's included.
func TestDrillQueueBudgetRedisPaused(t *testing.T) {
	srv := rediscluster.StartServer(t)
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{
		"LOG_LEVEL": "debug", "QUEUE_REQUEST_TIMEOUT": budgetTimeout.String(),
	}))
	var routes []string
	table := map[string]bool{}
	for _, r := range routesOf(t, p) {
		table[r] = true
		_, path, _ := strings.Cut(r, " ")
		if path == "/queue" || strings.HasPrefix(path, "/queue/") {
			if budgetRoutes[r] == nil {
				t.Fatalf("queue route %q has no request in this drill: add one to budgetRoutes", r)
			}
			routes = append(routes, r)
		}
	}
	for _, r := range []string{"POST /ack", "POST /fail"} {
		if !table[r] {
			t.Fatalf("webhook route %q not in the route table", r)
		}
		routes = append(routes, r)
	}
	c := newClient(p.Base, 30*time.Second, nil)
	if a := c.signed("GET", "/queue/stats", nil); a.Status != http.StatusOK {
		t.Fatalf("before the pause: %s", a)
	}

	type job struct {
		route string
		i     int
	}
	jobs := make([]job, 0, len(routes)*budgetPerRoute)
	for _, r := range routes {
		for i := range budgetPerRoute {
			jobs = append(jobs, job{r, i})
		}
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })

	resume := srv.Pause()
	defer resume()
	began := time.Now()
	answers := make([]answer, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range budgetParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				method, _, _ := strings.Cut(jobs[k].route, " ")
				path, body := budgetRoutes[jobs[k].route](jobs[k].i)
				answers[k] = c.signed(method, path, body)
			}
		}()
	}
	for k := range jobs {
		next <- k
	}
	close(next)
	wg.Wait()
	held := time.Since(began)
	resume()

	type routeStats struct {
		n, over, wrong int
		worst          time.Duration
		lat            []time.Duration
	}
	per := map[string]*routeStats{}
	byStatus, reasons := map[int]int{}, map[string]int{}
	reported := 0
	report := func(format string, args ...any) {
		if reported < 10 {
			t.Errorf(format, args...)
		}
		reported++
	}
	for k, a := range answers {
		r := jobs[k].route
		st := per[r]
		if st == nil {
			st = &routeStats{}
			per[r] = st
		}
		st.n++
		st.worst = max(st.worst, a.Took)
		st.lat = append(st.lat, a.Took)
		byStatus[a.Status]++
		var env struct {
			Error struct {
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(a.Body, &env) == nil {
			reasons[fmt.Sprint(env.Error.Details["reason"])]++
		}
		if a.Took > budgetOf(r) {
			st.over++
			report("%s: answered after %s, budget %s: %s", r, a.Took.Round(time.Millisecond), budgetOf(r), a)
		}
		if why := closed503(a); why != "" {
			st.wrong++
			report("%s: %s: %s", r, why, a)
		}
	}
	if reported > 10 {
		t.Errorf("… and %d more", reported-10)
	}

	var over, wrong int
	var worst time.Duration
	maxes := make([]string, 0, len(routes))
	for _, r := range routes {
		st := per[r]
		p50, p99, _ := percentiles(st.lat)
		over += st.over
		wrong += st.wrong
		worst = max(worst, st.worst)
		maxes = append(maxes, fmt.Sprintf("%s %s", r, ms(st.worst)))
		t.Logf("%-34s n=%d p50 %9s p99 %9s max %9s (budget %s) over %d wrong %d",
			r, st.n, ms(p50), ms(p99), ms(st.worst), budgetOf(r), st.over, st.wrong)
	}
	summary(t, "queue-budget-redis-paused",
		"injected: Redis SIGSTOP for %s, QUEUE_REQUEST_TIMEOUT %s | %d signed v2 requests (%d per route × %d routes, %d at a time, claims wait_ms %d): %s, reasons %v, over budget %d, wrong answer %d, slowest %s | max per route: %s",
		held.Round(time.Millisecond), budgetTimeout, len(jobs), budgetPerRoute, len(routes), budgetParallel,
		budgetClaimWait.Milliseconds(), statusLine(byStatus), reasons, over, wrong, ms(worst), strings.Join(maxes, ", "))
	if up := waitReady(t, p, http.StatusOK, 30*time.Second); up > 0 {
		t.Logf("ready again %s after SIGCONT", up.Round(time.Millisecond))
	}
}
