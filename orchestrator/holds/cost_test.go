package holds_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestScriptCost measures the Redis time of the hold scripts: INFO
// commandstats' evalsha usec_per_call over create + release pairs (plain
// Redis, CONFIG RESETSTAT before) with 1k, 100k and 1M live holds already
// in the ledger (synthetic records, expiry and active entries written by
// pipelined HSET/ZADD into the engine's own keys). The goal is <= 25 µs
// per call and flat across the sizes. Skipped under -short; the 1M size
// only with FLOWGATE_HOLDS_COST_1M=1 (it writes ~1 GB into Redis).
// Reproduce: FLOWGATE_HOLDS_COST_1M=1 test/run -run TestScriptCost -v ./orchestrator/holds/
func TestScriptCost(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	sizes := []int{1_000, 100_000}
	if os.Getenv("FLOWGATE_HOLDS_COST_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	// A Redis of its own: INFO commandstats counts every database's calls,
	// and the other packages' tests share test/run's Redis.
	srv := rediscluster.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for _, n := range sizes {
		p := fmt.Sprintf("cost%d-%d:", n, time.Now().UnixNano())
		eng, err := holds.New(rdb, holds.Config{Prefix: p, PlainRedis: true})
		require.NoError(t, err)
		fill(t, rdb, p, n)
		us := costOf(t, rdb, eng, 2000)
		t.Logf("holds scripts: %d live holds: evalsha %.2f usec_per_call (create + release)", n, us)
		// The goal is 25 µs; the bound catches a script gone wrong on this
		// noisy machine.
		require.Less(t, us, 100.0, "far above the 25 µs goal")
		require.NoError(t, rdb.Del(ctx, p+"holds:records", p+"holds:expiry", p+"holds:active:"+typeA).Err())
	}
}

// fill writes n live synthetic holds into the prefix p's ledger.
func fill(t *testing.T, rdb *redis.Client, p string, n int) {
	t.Helper()
	ctx := context.Background()
	exp := float64(time.Now().Add(time.Hour).UnixMilli())
	rec := `{"hold":{"holdId":"%s","clientId":"synthetic","appointmentTypeId":"` + typeA +
		`","specialistId":"s","slotStartDate":"2030-01-01T00:00:00Z","slotEndDate":"2030-01-01T00:30:00Z",` +
		`"holdExpiresAt":"2030-01-01T00:00:30Z","face":"web"},"slotKey":"x","faceKey":"y"}`
	const batch = 5000
	for lo := 0; lo < n; lo += batch {
		_, err := rdb.Pipelined(ctx, func(pp redis.Pipeliner) error {
			for i := lo; i < min(lo+batch, n); i++ {
				id := "syn" + strconv.Itoa(i)
				pp.HSet(ctx, p+"holds:records", id, fmt.Sprintf(rec, id))
				pp.ZAdd(ctx, p+"holds:expiry", redis.Z{Score: exp, Member: id})
				pp.ZAdd(ctx, p+"holds:active:"+typeA, redis.Z{Score: exp, Member: id})
			}
			return nil
		})
		require.NoError(t, err)
	}
}

// costOf runs pairs create + release and reads evalsha's usec_per_call.
func costOf(t *testing.T, rdb *redis.Client, eng *holds.Engine, pairs int) float64 {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	warm, err := eng.Claim(ctx, claimReq("warm", specX, base))
	require.NoError(t, err)
	_, err = eng.Release(ctx, "warm", warm.HoldID)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	for i := range pairs {
		start := base.Add(time.Duration(i+1) * time.Minute)
		client := "c" + strconv.Itoa(i%500)
		h, err := eng.Claim(ctx, claimReq(client, specX, start))
		require.NoError(t, err)
		ok, err := eng.Release(ctx, client, h.HoldID)
		require.NoError(t, err)
		require.True(t, ok)
	}
	stats, err := redistest.CommandStats(ctx, rdb)
	require.NoError(t, err)
	if stats["evalsha"].Calls == 0 {
		t.Fatal("no evalsha in INFO commandstats")
	}
	return stats["evalsha"].UsecPerCall
}
