package test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestLoadBufferRedisCommandsPerMessage counts the Redis commands one
// message costs (INFO commandstats deltas on a private redis-server, so no
// other test's traffic is counted), for flowgate's buffer and, when node is
// installed, for BullMQ.
func TestLoadBufferRedisCommandsPerMessage(t *testing.T) {
	if raceEnabled {
		t.Skip("a benchmark; run without -race")
	}
	const n = 5000
	srv := rediscluster.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	db := &redistest.DB{Client: rdb, Addr: srv.Addr()}
	b := inProcess(t, db, 10, builtin.NewNoop(), func(c *buffer.Config) { c.Servers = 1 })
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	goCPU, redisCPU := selfCPU(t), serverCPU(t, rdb)
	start := time.Now()
	enqueueAll(t, b, builtin.TypeNoop, n)
	waitCompleted(t, rdb, "buffer.default", n, 5*time.Minute)
	el := time.Since(start)
	goCPU, redisCPU = selfCPU(t)-goCPU, serverCPU(t, rdb)-redisCPU
	t.Logf("flowgate (%d messages in %s): %s", n, el.Round(time.Millisecond), perMessage(t, rdb, n))
	t.Logf("flowgate CPU per message: Go (this process) %.0f µs, redis-server %.0f µs", 1e6*goCPU/n, 1e6*redisCPU/n)
	b.Stop()

	if _, err := exec.LookPath("node"); err != nil {
		return
	}
	require.NoError(t, rdb.FlushAll(ctx).Err())
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	out, err := exec.Command("bash", "bench/bullmq/run.sh", srv.URL(), strconv.Itoa(n), "10").Output()
	require.NoError(t, err, "%s", out)
	t.Logf("BullMQ (%s): %s", strings.TrimSpace(string(out)), perMessage(t, rdb, n))
}

// selfCPU is this process's user+system CPU seconds.
func selfCPU(t *testing.T) float64 {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// serverCPU is redis-server's used_cpu_user + used_cpu_sys (INFO cpu).
func serverCPU(t *testing.T, rdb *redis.Client) float64 {
	cpu, err := redistest.ServerCPU(context.Background(), rdb, false)
	require.NoError(t, err)
	return cpu
}

// perMessage renders INFO commandstats as calls per message, largest first.
func perMessage(t *testing.T, rdb *redis.Client, n int) string {
	return commandStats(t, rdb).minus(nil).callsPer(n, "message")
}

// roundTrips counts a client's round trips (a command or a pipeline each).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// TestLoadBufferEnqueueRoundTrips counts the Redis round trips of one
// Buffer.Enqueue under 64 concurrent callers (the HTTP enqueue's Redis
// cost), with and without an idempotency key, on a private redis-server:
// the admission (claim + capacity) is coalesced across concurrent
// enqueues; Asynq's enqueue is one round trip per task.
func TestLoadBufferEnqueueRoundTrips(t *testing.T) {
	if raceEnabled {
		t.Skip("a benchmark; run without -race")
	}
	const n, conns = 5000, 64
	srv := rediscluster.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	db := &redistest.DB{Client: rdb, Addr: srv.Addr()}
	b := inProcess(t, db, 10, builtin.NewNoop(), nil)
	t.Cleanup(b.Stop)
	for _, keyed := range []bool{false, true} {
		var next atomic.Int64
		var wg sync.WaitGroup
		before := rt.n.Load()
		start := time.Now()
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= n; i = next.Add(1) {
					req := contracts.BufferEnqueueRequest{Type: builtin.TypeNoop, Payload: []byte(`{}`)}
					if keyed {
						req.IdempotencyKey = fmt.Sprintf("k-%d", i)
					}
					if _, err := b.Enqueue(context.Background(), req); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		per := float64(rt.n.Load()-before) / n
		t.Logf("Enqueue (idempotency key: %v, %d callers): %.2f Redis round trips per enqueue, %.0f enqueues/s", keyed, conns, per, n/el.Seconds())
		require.Less(t, per, 2.0, "the admission is coalesced: well under one extra round trip per enqueue")
	}
}
