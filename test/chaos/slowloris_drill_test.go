//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// Slowloris drill sizes.
const (
	slowConns    = 500
	slowSpan     = 12 * time.Second       // how long the slow connections trickle
	slowTrickle  = 500 * time.Millisecond // one header byte per connection this often
	normalProbes = 1500                   // requests of the normal client alone (baseline)
)

// TestDrillSlowloris: 500 connections send a request head one byte every
// 500 ms (never finishing it) while a normal client sends GET /healthz and
// signed GET /queue/stats one after another. Its p99 must stay within 5×
// its own p99 without the slow connections (at least 50 ms: the machine is
// shared) and no request of it may fail.
func TestDrillSlowloris(t *testing.T) {
	srv := rediscluster.StartServer(t)
	p := startFlowgate(t, flowgateEnv(srv.URL(), nil))
	tl := newTally(0)
	c := newClient(p.Base, 10*time.Second, tl)

	base := normalClient(context.Background(), c, normalProbes)
	ctx, cancel := context.WithTimeout(context.Background(), slowSpan)
	defer cancel()
	sl := startSlowloris(ctx, t, p.Addr(), slowConns)
	time.Sleep(time.Second) // let them all connect
	under := normalClient(ctx, c, 1<<30)
	open, closed, dialErr := sl.wait()

	bound := max(5*base.p99, 50*time.Millisecond)
	summary(t, "slowloris", "injected: %d connections trickling a request head (1 byte/%s for %s): %d still open at the end, %d closed by the server, %d dial errors | normal client (GET /healthz and signed GET /queue/stats in turn): alone %d requests p50 %s p99 %s max %s; beside them %d requests p50 %s p99 %s max %s (bound %s); failures %d | answers %s",
		slowConns, slowTrickle, slowSpan, open, closed, dialErr, base.n, ms(base.p50), ms(base.p99), ms(base.max),
		under.n, ms(under.p50), ms(under.p99), ms(under.max), ms(bound), base.failed+under.failed, tl.statuses())
	if under.p99 > bound {
		t.Errorf("normal client p99 %s beside the slow connections, bound %s (alone %s)", under.p99, bound, base.p99)
	}
	if base.failed+under.failed > 0 {
		t.Errorf("normal client: %d requests failed; first: %s %s", base.failed+under.failed, base.firstFailure, under.firstFailure)
	}
	if dialErr > slowConns/10 {
		t.Errorf("%d of %d slow connections could not connect", dialErr, slowConns)
	}
}

type latencies struct {
	p50, p99, max time.Duration
	failed        int
	firstFailure  string
	n             int
}

// normalClient sends n requests one after another (or until ctx ends),
// alternating /healthz and a signed /queue/stats, and measures them.
func normalClient(ctx context.Context, c *client, n int) latencies {
	var d []time.Duration
	failed, firstFailure := 0, ""
	for i := 0; i < n && ctx.Err() == nil; i++ {
		var a answer
		if i%2 == 0 {
			a = c.send("GET", "/healthz", nil, nil, false)
		} else {
			a = c.signed("GET", fmt.Sprintf("/queue/stats?probe=%d", i), nil) // distinct: no replay
		}
		if a.Err != nil || a.Status != http.StatusOK {
			failed++
			if failed == 1 {
				firstFailure = a.String()
			}
		}
		d = append(d, a.Took)
	}
	p50, p99, worst := percentiles(d)
	return latencies{p50, p99, worst, failed, firstFailure, len(d)}
}

// slowloris is a set of connections trickling request heads.
type slowloris struct {
	wg                     sync.WaitGroup
	open, closed, dialErrs atomic.Int64
}

// startSlowloris opens n connections that each send a request head one
// byte at a time until ctx ends.
func startSlowloris(ctx context.Context, t *testing.T, addr string, n int) *slowloris {
	t.Helper()
	s := &slowloris{}
	head := []byte("GET /healthz HTTP/1.1\r\nHost: drill\r\nX-Slow: " + fmt.Sprint(time.Now().UnixNano()))
	for i := 0; i < n; i++ {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				s.dialErrs.Add(1)
				return
			}
			defer conn.Close()
			tick := time.NewTicker(slowTrickle)
			defer tick.Stop()
			for k := 0; ; k++ {
				b := head[k%len(head) : k%len(head)+1]
				if k >= len(head) {
					b = []byte("x") // a header value that never ends
				}
				_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := conn.Write(b); err != nil {
					s.closed.Add(1)
					return
				}
				select {
				case <-ctx.Done():
					s.open.Add(1)
					return
				case <-tick.C:
				}
			}
		}()
	}
	return s
}

// wait returns how many connections were still open at the end, how many
// the server closed and how many could not connect.
func (s *slowloris) wait() (open, closed, dialErrs int64) {
	s.wg.Wait()
	return s.open.Load(), s.closed.Load(), s.dialErrs.Load()
}
