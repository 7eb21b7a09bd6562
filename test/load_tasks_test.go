package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/loadgen"
	"github.com/flowgate/flowgate/test/noderedtest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// loadSize is how many tasks a load test uses: FLOWGATE_LOAD_N, else
// 20,000 (2,000 under -race, where only correctness is checked).
func loadSize() int {
	if n, err := strconv.Atoi(os.Getenv("FLOWGATE_LOAD_N")); err == nil && n > 0 {
		return n
	}
	if raceEnabled {
		return 2000
	}
	return 20000
}

var loadSecret = []byte(testSecrets["HMAC_SECRET"])

// signedClient issues signed requests to one flowgate with fasthttp.
type signedClient struct {
	addr string
	hc   *fasthttp.HostClient
}

func newSignedClient(p *proc) *signedClient {
	addr := p.Base[len("http://"):]
	return &signedClient{addr: addr, hc: &fasthttp.HostClient{Addr: addr, MaxConns: 128}}
}

// sign fills req with a signed request.
func sign(req *fasthttp.Request, addr, method, path string, body []byte) {
	req.Header.SetMethod(method)
	req.SetRequestURI("http://" + addr + path)
	req.Header.SetContentType("application/json")
	ts, sig := signature.Sign(loadSecret, time.Now(), body)
	if !seedRoute(method, path) { // the queue API's own routes require version 2
		ts, sig = signature.SignV2(loadSecret, time.Now(), method, path, body)
		req.Header.Set(signature.HeaderSignatureVersion, "2")
	}
	req.Header.Set(signature.HeaderTimestamp, ts)
	req.Header.Set(signature.HeaderSignature, sig)
	req.SetBodyRaw(body)
}

// do sends one signed request and decodes a JSON answer into out. Safe
// to call from worker goroutines: it reports with t.Errorf and returns 0.
func (c *signedClient) do(t testing.TB, method, path string, body any, out any) int {
	t.Helper()
	raw := []byte(nil)
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Errorf("marshal: %v", err)
			return 0
		}
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	sign(req, c.addr, method, path, raw)
	if err := c.hc.DoTimeout(req, resp, 30*time.Second); err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0
	}
	if out != nil && len(resp.Body()) > 0 {
		if err := json.Unmarshal(resp.Body(), out); err != nil {
			t.Errorf("%s %s: %d %s", method, path, resp.StatusCode(), resp.Body())
			return 0
		}
	}
	return resp.StatusCode()
}

// nonceSeq makes repeated identical requests distinct: a signature covers
// only the second and the body, so the same body twice in one second is
// (rightly) refused as a replay. flowgate ignores unknown fields.
var nonceSeq atomic.Int64

// loadClaimBody is a claim request with a nonce.
func loadClaimBody(worker string, limit int) map[string]any {
	return map[string]any{"worker_id": worker, "limit": limit, "nonce": nonceSeq.Add(1)}
}

// createTasks makes n PENDING tasks through batch POST /queue.
func createTasks(t testing.TB, c *signedClient, n int, tag string) {
	t.Helper()
	for start := 0; start < n; start += contracts.MaxBatchCreate {
		batch := contracts.BatchCreateRequest{}
		for i := start; i < n && i < start+contracts.MaxBatchCreate; i++ {
			batch.Tasks = append(batch.Tasks, contracts.CreateTaskRequest{
				EncounterID: fmt.Sprintf("%s-enc-%d", tag, i), Payload: json.RawMessage(`{"n":1}`)})
		}
		var resp contracts.BatchCreateResponse
		if status := c.do(t, "POST", "/queue", batch, &resp); status != 201 || resp.Created != len(batch.Tasks) {
			t.Fatalf("create batch: %d %+v", status, resp.Created)
		}
	}
}

// claimAll claims every pending task with 8 workers and returns them.
func claimAll(t testing.TB, c *signedClient, n int) []contracts.Task {
	t.Helper()
	var mu sync.Mutex
	var out []contracts.Task
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var resp contracts.ClaimResponse
				status := c.do(t, "POST", "/queue/claim", loadClaimBody("loader", 50), &resp)
				if status != 200 {
					if status != 204 {
						t.Errorf("claim: %d", status)
					}
					return
				}
				mu.Lock()
				out = append(out, resp.Tasks...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(out) != n {
		t.Fatalf("claimed %d of %d", len(out), n)
	}
	return out
}

func loadFlowgate(t *testing.T) (*proc, *signedClient) {
	return loadFlowgateOn(t, redistest.New(t))
}

func loadFlowgateOn(t *testing.T, db *redistest.DB) (*proc, *signedClient) {
	env := withSecrets(map[string]string{
		"REDIS_URL": db.URL(), "LOG_LEVEL": "warn", // no access-log line per request: it is measured apart
	})
	if addr := os.Getenv("FLOWGATE_LOAD_PPROF"); addr != "" { // profile the binary under load
		env["PPROF_ADDR"] = addr
	}
	p := startFlowgate(t, env)
	return p, newSignedClient(p)
}

// Signed ACK throughput over HTTP at 64 connections, against /healthz over
// the same harness in the same run as the baseline, and against Node-RED 4
// (test/nodered-install) running an ACK-like flow (test/bench/nodered-ack:
// http in → function keeping the ACK in flow memory → http response) in
// alternating rounds with the same load generator: flowgate, Node-RED,
// flowgate, …, after a warm-up of each side that is not counted
// (FLOWGATE_LOAD_WARMUP ACKs, default 10,000). It logs both rates and their ratio, the Redis commands per
// ACK (INFO commandstats: one FCALL, no SET — the replay check rides in the
// ACK's script, docs/tasks.md "Authentication") and the CPU per ACK.
// Without node, or under -race, flowgate runs alone. Reproduce:
// go test -run TestLoadAck -v ./test/  (FLOWGATE_LOAD_N to scale,
// FLOWGATE_LOAD_PPROF=127.0.0.1:6061 to profile flowgate meanwhile).
func TestLoadAck(t *testing.T) {
	n := loadSize()
	db := redistest.New(t)
	p, c := loadFlowgateOn(t, db)
	addr := c.addr

	var peer *noderedtest.Proc
	if _, err := exec.LookPath("node"); err == nil && !raceEnabled {
		peer = noderedtest.Start(t, nil, "test/bench/nodered-ack/flows.json")
	}
	// Both sides are warmed before the clock starts, with ACKs not counted:
	// Node-RED's JIT (its first 5,000 ACKs cost 1.3–1.7 × the CPU of those
	// after 15,000) and flowgate's heap and Redis's tables. Without the
	// warm-up the ratio read 10–15 % above the steady state's.
	warm := 0
	if peer != nil {
		warm = loadWarmup()
	}
	createTasks(t, c, warm+n, "ack")
	claimed := claimAll(t, c, warm+n)
	base := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(_ int, req *fasthttp.Request) { req.SetRequestURI("http://" + addr + "/healthz") },
		Check: status(200)})
	bodies := make([][]byte, warm+n)
	for i, task := range claimed {
		bodies[i], _ = json.Marshal(contracts.AckRequest{QueueID: task.QueueID, EncounterID: task.EncounterID,
			ExperityActions: json.RawMessage(`{"actions":[{"type":"note","text":"done"}]}`)})
	}
	isDone := func(i int, resp *fasthttp.Response) error {
		if resp.StatusCode() != 200 || !bytes.Contains(resp.Body(), []byte(`"status":"DONE"`)) {
			return fmt.Errorf("ack %d: %d %s", i, resp.StatusCode(), resp.Body())
		}
		return nil
	}

	// ackOurs and ackTheirs send the ACKs of bodies[lo:hi] to flowgate and
	// to Node-RED.
	ackOurs := func(lo, hi int) loadgen.Result {
		return loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: hi - lo,
			Build: func(i int, req *fasthttp.Request) { sign(req, addr, "POST", "/ack", bodies[lo+i]) },
			Check: func(i int, resp *fasthttp.Response) error { return isDone(lo+i, resp) }})
	}
	ackTheirs := func(lo, hi int) loadgen.Result {
		paddr := peer.Base[len("http://"):]
		return loadgen.Run(loadgen.Config{Addr: paddr, Conns: 64, Requests: hi - lo,
			Build: func(i int, req *fasthttp.Request) {
				req.Header.SetMethod("POST")
				req.SetRequestURI("http://" + paddr + "/ack")
				req.Header.SetContentType("application/json")
				req.SetBodyRaw(bodies[lo+i])
			},
			Check: func(i int, resp *fasthttp.Response) error { return isDone(lo+i, resp) }})
	}
	if warm > 0 {
		w1, w2 := ackOurs(0, warm), ackTheirs(0, warm)
		t.Logf("warm-up, not counted: flowgate %s; Node-RED %s", w1, w2)
		if w1.Failures+w2.Failures > 0 {
			t.Fatalf("warm-up failures: flowgate %v, Node-RED %v", w1.FirstError, w2.FirstError)
		}
	}

	rounds := 4
	if peer == nil || n < 4*rounds {
		rounds = 1
	}
	per := n / rounds
	split := cpuSplitter(t, db.Client, p.PID())
	stats0 := commandStats(t, db.Client)
	var ours, theirs loadgen.Result
	var ourCPU cpuUse    // over flowgate's rounds
	var theirCPU float64 // Node-RED's CPU seconds over its rounds
	for r := range rounds {
		lo, hi := warm+r*per, warm+(r+1)*per
		if r == rounds-1 {
			hi = warm + n
		}
		c0 := split()
		ack := ackOurs(lo, hi)
		used := split().minus(c0)
		ourCPU = ourCPU.plus(used)
		t.Logf("round %d flowgate signed ACK, 64 conns: %s; CPU per ACK: %s", r+1, ack, used.per(hi-lo))
		ours = addRounds(ours, ack)
		if ack.Failures > 0 {
			t.Fatalf("failures: ack %v", ack.FirstError)
		}
		if peer == nil {
			continue
		}
		nodered := procCPU(peer.PID())
		c0 = split()
		red := ackTheirs(lo, hi)
		nodered = procCPU(peer.PID()) - nodered
		theirCPU += float64(nodered) / 100
		t.Logf("round %d Node-RED ACK flow, 64 conns:  %s; CPU per ACK: load generator %.0f µs, Node-RED %.0f µs", r+1, red,
			1e6*(split().minus(c0).client)/float64(hi-lo), 1e4*float64(nodered)/float64(hi-lo))
		theirs = addRounds(theirs, red)
		if red.Failures > 0 {
			t.Fatalf("failures: Node-RED %v", red.FirstError)
		}
	}
	cmds := commandStats(t, db.Client).minus(stats0)
	t.Logf("baseline GET /healthz, 64 conns: %s", base)
	t.Logf("signed ACK, 64 conns:          %s (%.2f × the /healthz baseline)", ours, ours.PerSecond()/base.PerSecond())
	if peer != nil {
		t.Logf("Node-RED ACK flow, 64 conns:   %s; Node-RED CPU %.0f µs per ACK", theirs, 1e6*theirCPU/float64(theirs.Requests))
		t.Logf("flowgate / Node-RED = %.2f×", ours.PerSecond()/theirs.PerSecond())
	}
	t.Logf("Redis per flowgate ACK: %s; CPU per ACK over flowgate's rounds: %s", cmds.per(n), ourCPU.per(n))
	if base.Failures > 0 {
		t.Fatalf("failures: baseline %v", base.FirstError)
	}
	// Commands a script runs count in commandstats too: the SET per ACK is
	// the replay key's, inside the FCALL (the client's one command per ACK
	// is webhooks' TestHookReplayCheckedInScript). A second round trip
	// would show as a SET beyond it.
	if fc, set := float64(cmds["fcall"].Calls)/float64(n), float64(cmds["set"].Calls)/float64(n); fc < 0.99 || set > fc+0.01 {
		t.Errorf("%.2f FCALL and %.2f SET per ACK: want one FCALL carrying the replay check", fc, set)
	}
	var stats contracts.StatsResponse
	c.do(t, "GET", "/queue/stats", nil, &stats)
	if stats.ByStatus[contracts.StatusDone] != warm+n {
		t.Fatalf("DONE %d of %d", stats.ByStatus[contracts.StatusDone], warm+n)
	}
}

// loadWarmup is how many ACKs TestLoadAck sends each side before it
// measures: FLOWGATE_LOAD_WARMUP, else 10,000.
func loadWarmup() int {
	if n, err := strconv.Atoi(os.Getenv("FLOWGATE_LOAD_WARMUP")); err == nil && n >= 0 {
		return n
	}
	return 10000
}

// addRounds sums two rounds' requests, failures and time; its percentiles
// are the worse round's.
func addRounds(a, b loadgen.Result) loadgen.Result {
	a.Requests += b.Requests
	a.Failures += b.Failures
	a.Elapsed += b.Elapsed
	if a.FirstError == nil {
		a.FirstError = b.FirstError
	}
	a.P50, a.P99, a.Max = max(a.P50, b.P50), max(a.P99, b.P99), max(a.Max, b.Max)
	return a
}

// cmdStats is INFO commandstats by command (redistest.CommandStats).
type cmdStats map[string]redistest.CommandStat

func commandStats(t *testing.T, rdb redis.UniversalClient) cmdStats {
	st, err := redistest.CommandStats(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// minus is what a counted since b (nil: since the server started or its
// CONFIG RESETSTAT), without the measurement's own INFO and RESETSTAT.
func (a cmdStats) minus(b cmdStats) cmdStats {
	out := cmdStats{}
	for k, v := range a {
		if d := v.Calls - b[k].Calls; d > 0 && k != "info" && k != "config|resetstat" {
			out[k] = redistest.CommandStat{Calls: d, Usec: v.Usec - b[k].Usec}
		}
	}
	return out
}

// callsPer renders the calls per unit (n of them) of the commands above
// 0.01 each, largest first.
func (a cmdStats) callsPer(n int, unit string) string {
	keys := make([]string, 0, len(a))
	var total int64
	for k, v := range a {
		keys = append(keys, k)
		total += v.Calls
	}
	sort.Slice(keys, func(i, j int) bool { return a[keys[i]].Calls > a[keys[j]].Calls })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.2f commands per %s:", float64(total)/float64(n), unit)
	for _, k := range keys {
		if float64(a[k].Calls)/float64(n) >= 0.01 {
			fmt.Fprintf(&sb, " %s %.2f", k, float64(a[k].Calls)/float64(n))
		}
	}
	return sb.String()
}

// per renders the calls per ACK, and the time Redis spent in the FCALLs
// (which includes the commands their scripts ran) and in those commands
// themselves: the rest of the FCALL's time is the script's own (Lua,
// argument handling).
func (a cmdStats) per(n int) string {
	var all float64
	for _, v := range a {
		all += v.Usec
	}
	return fmt.Sprintf("%s; Redis time per ACK (commandstats): FCALL %.1f µs, the commands its scripts ran %.1f µs",
		a.callsPer(n, "ACK"), a["fcall"].Usec/float64(n), (all-redistest.ScriptUsec(a))/float64(n))
}

// 50 workers over HTTP run claim → ACK cycles until 10,000 tasks (or
// FLOWGATE_LOAD_N) are done: every task is claimed exactly once and ends
// DONE. Reports the cycle rate.
func TestLoadClaimAckCycle(t *testing.T) {
	n := loadSize()
	if n > 10000 {
		n = 10000
	}
	_, c := loadFlowgate(t)
	createTasks(t, c, n, "cycle")
	var claims sync.Map
	var dup, cycles atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			worker := fmt.Sprintf("vm-%d", w)
			for {
				var resp contracts.ClaimResponse
				if status := c.do(t, "POST", "/queue/claim", loadClaimBody(worker, 1), &resp); status != 200 {
					if status != 204 {
						t.Errorf("claim: %d", status)
					}
					return
				}
				for _, task := range resp.Tasks {
					if _, loaded := claims.LoadOrStore(task.QueueID, worker); loaded {
						dup.Add(1)
					}
					var ack contracts.WebhookResponse
					if status := c.do(t, "POST", "/ack", contracts.AckRequest{QueueID: task.QueueID,
						ExperityActions: json.RawMessage(`{"ok":true}`), WorkerID: worker}, &ack); status != 200 {
						t.Errorf("ack %s: %d", task.QueueID, status)
					}
					cycles.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("claim+ACK over HTTP, 50 workers: %d cycles in %s = %.0f cycles/s", cycles.Load(), elapsed.Round(time.Millisecond), float64(cycles.Load())/elapsed.Seconds())
	if dup.Load() != 0 || cycles.Load() != int64(n) {
		t.Fatalf("claimed twice: %d; cycles %d of %d", dup.Load(), cycles.Load(), n)
	}
	var stats contracts.StatsResponse
	c.do(t, "GET", "/queue/stats", nil, &stats)
	if stats.ByStatus[contracts.StatusDone] != n || stats.Total != n {
		t.Fatalf("stats after the run: %+v", stats)
	}
}

func status(want int) func(int, *fasthttp.Response) error {
	return func(i int, resp *fasthttp.Response) error {
		if resp.StatusCode() != want {
			return fmt.Errorf("request %d: %d %s", i, resp.StatusCode(), resp.Body())
		}
		return nil
	}
}
