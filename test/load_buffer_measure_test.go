package test

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/test/loadgen"
)

// How the work buffer's load tests measure: pairs of runs compared by
// their median ratio, the CPU of the three processes on the two cores,
// and a CPU profile of flowgate.

// pair is one raw run and the HTTP run after it (rates per second).
type pair struct {
	raw, http float64
	res       loadgen.Result
}

// ratio is the pair's HTTP ÷ raw.
func (p pair) ratio() float64 { return p.http / p.raw }

// median is the pair with the median ratio.
func median(ps []pair) pair {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b pair) int { return cmp.Compare(a.ratio(), b.ratio()) })
	return s[len(s)/2]
}

// rounds renders each pair as "HTTP/s ÷ raw/s = ratio".
func rounds(ps []pair) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%.0f ÷ %.0f = %.0f%% (p99 %s)", p.http, p.raw, 100*p.ratio(), p.res.P99.Round(10*time.Microsecond))
	}
	return strings.Join(parts, ", ")
}

// profileCPU fetches a CPU profile of the flowgate at addr (its
// PPROF_ADDR) into file while the caller runs; the returned func waits for
// it. With no addr it does nothing.
func profileCPU(t *testing.T, addr, file string, d time.Duration) func() {
	t.Helper()
	if addr == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var req fasthttp.Request
		var resp fasthttp.Response
		req.SetRequestURI("http://" + addr + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(d.Seconds())))
		if err := fasthttp.DoTimeout(&req, &resp, d+30*time.Second); err != nil {
			t.Errorf("pprof: %v", err)
			return
		}
		if err := os.WriteFile(file, resp.Body(), 0o600); err != nil {
			t.Errorf("pprof: %v", err)
		}
	}()
	return func() { <-done }
}

// cpuUse is CPU seconds spent by the three parties of a load test.
type cpuUse struct{ client, flowgate, redis float64 }

func (a cpuUse) minus(b cpuUse) cpuUse {
	return cpuUse{a.client - b.client, a.flowgate - b.flowgate, a.redis - b.redis}
}

func (a cpuUse) plus(b cpuUse) cpuUse {
	return cpuUse{a.client + b.client, a.flowgate + b.flowgate, a.redis + b.redis}
}

// per renders the use per message in µs.
func (a cpuUse) per(n int) string {
	f := func(s float64) float64 { return 1e6 * s / float64(n) }
	return fmt.Sprintf("load generator / raw client %.0f µs, flowgate %.0f µs, redis-server %.0f µs (sum %.0f µs)",
		f(a.client), f(a.flowgate), f(a.redis), f(a.client+a.flowgate+a.redis))
}

// cpuSplitter reads the CPU used so far by this process (the load
// generator or the raw client), the flowgate process pid and the
// redis-server behind rdb.
func cpuSplitter(t *testing.T, rdb *redis.Client, pid int) func() cpuUse {
	return func() cpuUse {
		return cpuUse{client: selfCPU(t), flowgate: float64(procCPU(pid)) / 100, redis: serverCPU(t, rdb)}
	}
}

// procCPU is utime+stime of pid in clock ticks (100/s).
func procCPU(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
