package scheduler

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/redistest"
)

func TestKeysShareHashTag(t *testing.T) {
	t.Parallel()
	require.Equal(t, "flowgate:cron:{sweep}:lock", lockKey(DefaultKeyPrefix, "sweep"))
	require.Equal(t, "flowgate:cron:{sweep}:last", lastKey(DefaultKeyPrefix, "sweep"))
}

func TestLockAcquire(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	l := locker{rdb: db.Client, prefix: DefaultKeyPrefix}
	tick := time.UnixMilli(1_900_000_000_000)

	got, err := l.acquire(ctx, "job", tick, "a", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, acquired, got)
	require.Equal(t, "a", db.Client.Get(ctx, lockKey(DefaultKeyPrefix, "job")).Val())
	require.Equal(t, strconv.FormatInt(tick.UnixMilli(), 10), db.Client.Get(ctx, lastKey(DefaultKeyPrefix, "job")).Val())
	requireTTL(t, db.Client, lockKey(DefaultKeyPrefix, "job"), time.Minute)
	requireTTL(t, db.Client, lastKey(DefaultKeyPrefix, "job"), 3*time.Minute)

	got, err = l.acquire(ctx, "job", tick, "b", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, claimed, got, "same tick again")

	got, err = l.acquire(ctx, "job", tick.Add(-time.Second), "b", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, claimed, got, "an older tick")

	got, err = l.acquire(ctx, "job", tick.Add(time.Second), "b", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, locked, got, "next tick while the first run holds the lock")
	require.Equal(t, strconv.FormatInt(tick.UnixMilli(), 10), db.Client.Get(ctx, lastKey(DefaultKeyPrefix, "job")).Val(),
		"a skipped tick does not move last")

	ok, err := l.release(ctx, "job", "a")
	require.NoError(t, err)
	require.True(t, ok)
	got, err = l.acquire(ctx, "job", tick.Add(time.Second), "b", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, acquired, got, "next tick after release")

	got, err = l.acquire(ctx, "other", tick, "c", time.Minute, 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, acquired, got, "jobs do not share locks")
}

func requireTTL(t *testing.T, c *redis.Client, key string, want time.Duration) {
	t.Helper()
	ttl := c.PTTL(context.Background(), key).Val()
	require.Greater(t, ttl, want-5*time.Second, key)
	require.LessOrEqual(t, ttl, want, key)
}

func TestLockReleaseIsCompareAndDelete(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	l := locker{rdb: db.Client, prefix: DefaultKeyPrefix}
	tick := time.UnixMilli(1_900_000_000_000)

	got, err := l.acquire(ctx, "job", tick, "stale", 50*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.Equal(t, acquired, got)

	// The stale holder's lock expires; the next tick takes it.
	require.Eventually(t, func() bool {
		got, err = l.acquire(ctx, "job", tick.Add(time.Second), "fresh", time.Minute, time.Minute)
		require.NoError(t, err)
		return got == acquired
	}, 2*time.Second, 10*time.Millisecond, "lock TTL expiry lets the next tick run")

	ok, err := l.release(ctx, "job", "stale")
	require.NoError(t, err)
	require.False(t, ok, "a stale holder cannot release another's lock")
	require.Equal(t, "fresh", db.Client.Get(ctx, lockKey(DefaultKeyPrefix, "job")).Val())

	ok, err = l.release(ctx, "job", "fresh")
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, db.Client.Exists(ctx, lockKey(DefaultKeyPrefix, "job")).Val())

	ok, err = l.release(ctx, "job", "fresh")
	require.NoError(t, err)
	require.False(t, ok, "releasing twice is harmless")
}

func TestLockTTLExpiryLetsNextTickRun(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	l := locker{rdb: db.Client, prefix: DefaultKeyPrefix}
	tick := time.UnixMilli(1_900_000_000_000)

	got, err := l.acquire(ctx, "job", tick, "crashed", 200*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.Equal(t, acquired, got)
	got, err = l.acquire(ctx, "job", tick.Add(time.Second), "next", time.Minute, time.Minute)
	require.NoError(t, err)
	require.Equal(t, locked, got, "before the TTL")
	require.Eventually(t, func() bool { // the crashed holder's 200 ms TTL runs out in Redis
		got, err = l.acquire(ctx, "job", tick.Add(2*time.Second), "next", time.Minute, time.Minute)
		return err != nil || got != locked
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, acquired, got, "after the TTL")
}

// BenchmarkLockCycle is one tick's Redis cost on the instance that runs
// the job: acquire (claim + lock) then release.
func BenchmarkLockCycle(b *testing.B) {
	db := redistest.New(b)
	ctx := context.Background()
	l := locker{rdb: db.Client, prefix: DefaultKeyPrefix}
	base := time.UnixMilli(1_900_000_000_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		got, err := l.acquire(ctx, "bench", base.Add(time.Duration(i)*time.Second), "token", time.Minute, time.Minute)
		if err != nil || got != acquired {
			b.Fatalf("acquire: %v %v", got, err)
		}
		if ok, err := l.release(ctx, "bench", "token"); err != nil || !ok {
			b.Fatalf("release: %v %v", ok, err)
		}
	}
}
