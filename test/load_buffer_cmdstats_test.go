package test

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

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
	start := time.Now()
	enqueueAll(t, b, builtin.TypeNoop, n)
	waitCompleted(t, rdb, "buffer.default", n, 5*time.Minute)
	el := time.Since(start)
	t.Logf("flowgate (%d messages in %s): %s", n, el.Round(time.Millisecond), perMessage(t, rdb, n))
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

// perMessage renders INFO commandstats as calls per message, largest first.
func perMessage(t *testing.T, rdb *redis.Client, n int) string {
	raw, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	type row struct {
		cmd   string
		calls int
	}
	var rows []row
	total := 0
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimSpace(l)
		name, rest, ok := strings.Cut(l, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls := 0
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				calls, _ = strconv.Atoi(v)
			}
		}
		cmd := strings.TrimPrefix(name, "cmdstat_")
		if cmd == "info" || cmd == "config|resetstat" {
			continue
		}
		rows = append(rows, row{cmd, calls})
		total += calls
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].calls > rows[j].calls })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.2f commands per message:", float64(total)/float64(n))
	for _, r := range rows {
		if float64(r.calls)/float64(n) >= 0.01 {
			fmt.Fprintf(&sb, " %s %.2f", r.cmd, float64(r.calls)/float64(n))
		}
	}
	return sb.String()
}
