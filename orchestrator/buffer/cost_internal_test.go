package buffer

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestAdmissionScriptCost measures admitScript's Redis time per call
// (INFO commandstats, evalsha usec_per_call, after CONFIG RESETSTAT) with
// 1k and 100k outstanding idempotency claims in the shard, and 1M with
// FLOWGATE_BUFFER_COST_1M=1 (about 150 MB of Redis memory, a few seconds
// to fill): one keyed admission per call (the claim check, the claim,
// the place) and one unkeyed admission reserving places ahead (the credit
// field too). The script is O(1) per message, so the figures are flat.
func TestAdmissionScriptCost(t *testing.T) {
	sizes := []int{1_000, 100_000}
	if os.Getenv("FLOWGATE_BUFFER_COST_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	srv := rediscluster.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	k := stateKeys{prefix: "flowgate", tag: "{buffer:0.0}"}
	ttl := (7*24*time.Hour + 101*time.Minute).Milliseconds()
	const calls = 5000
	for _, n := range sizes {
		require.NoError(t, rdb.FlushAll(ctx).Err())
		fillClaims(t, rdb, k, n, ttl)
		require.NoError(t, admitScript.Load(ctx, rdb).Err())
		keyed := scriptCost(t, rdb, func(i int) error {
			return admitScript.Run(ctx, rdb, []string{k.depth(), k.credit(), k.idem("new-" + strconv.Itoa(i))},
				int64(1)<<40, ttl, 0, "me", "1", "0", "new-"+strconv.Itoa(i)+" buffer.default 1764000000000", "", "").Err()
		}, calls)
		unkeyed := scriptCost(t, rdb, func(int) error {
			return admitScript.Run(ctx, rdb, []string{k.depth(), k.credit()}, int64(1)<<40, ttl, 16, "me", "0", "0", "x buffer.default 1", "", "").Err()
		}, calls)
		t.Logf("admitScript with %d outstanding claims: keyed %.2f µs/call, unkeyed reserving ahead %.2f µs/call (evalsha usec_per_call)", n, keyed, unkeyed)
		require.Less(t, keyed, 100.0, "far above the 25 µs goal")
	}
}

// fillClaims writes n idempotency claims under k, pipelined.
func fillClaims(t *testing.T, rdb *redis.Client, k stateKeys, n int, ttl int64) {
	t.Helper()
	ctx := context.Background()
	for lo := 0; lo < n; lo += 10_000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < min(lo+10_000, n); i++ {
				id := "m-" + strconv.Itoa(i)
				p.Set(ctx, k.idem("key-"+strconv.Itoa(i)), id+" buffer.default 1764000000000", time.Duration(ttl)*time.Millisecond)
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.EqualValues(t, n, rdb.DBSize(ctx).Val())
}

// scriptCost runs call calls times after CONFIG RESETSTAT and answers
// evalsha's usec_per_call.
func scriptCost(t *testing.T, rdb *redis.Client, call func(i int) error, calls int) float64 {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	for i := range calls {
		require.NoError(t, call(i))
	}
	stats, err := redistest.CommandStats(ctx, rdb)
	require.NoError(t, err)
	require.NotZero(t, stats["evalsha"].Calls, "no evalsha in INFO commandstats")
	return stats["evalsha"].UsecPerCall
}
