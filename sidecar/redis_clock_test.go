package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
)

// TestDriveClockExpiresKeys: the embedded store's TTLs follow the clock
// driveClock is given — a key expires once that clock passes its TTL, and
// not before; stop ends the goroutine.
func TestDriveClockExpiresKeys(t *testing.T) {
	mini := miniredis.RunT(t)
	base := time.Unix(1_800_000_000, 0)
	var offset atomic.Int64 // nanoseconds past base
	now := func() time.Time { return base.Add(time.Duration(offset.Load())) }
	stop := driveClock(mini, 5*time.Millisecond, now)
	defer stop()

	require.NoError(t, mini.Set("short", "v"))
	mini.SetTTL("short", 5*time.Second)
	require.NoError(t, mini.Set("long", "v"))
	mini.SetTTL("long", time.Minute)
	require.NoError(t, mini.Set("forever", "v"))

	waitTTL := func(key string, cond func(time.Duration) bool) {
		t.Helper()
		require.Eventually(t, func() bool { return cond(mini.TTL(key)) }, 5*time.Second, 5*time.Millisecond,
			"%s: the TTL never met the condition", key)
	}

	offset.Store(int64(4 * time.Second))
	waitTTL("short", func(d time.Duration) bool { return d > 0 && d <= time.Second })
	if !mini.Exists("short") {
		t.Fatal("short expired before its TTL")
	}
	offset.Store(int64(5*time.Second + time.Millisecond))
	waitTTL("short", func(time.Duration) bool { return !mini.Exists("short") })
	if d := mini.TTL("long"); d < 54*time.Second || d > 55*time.Second {
		t.Fatalf("long: TTL %v after 5 s, want ≈ 55 s", d)
	}
	if !mini.Exists("forever") {
		t.Fatal("a key without a TTL expired")
	}

	// A clock that goes back moves nothing.
	offset.Store(int64(time.Second))
	require.Never(t, func() bool { return mini.TTL("long") < 54*time.Second }, 30*time.Millisecond, 5*time.Millisecond,
		"long: the TTL moved after the clock went back")
	if d := mini.TTL("long"); d < 54*time.Second {
		t.Fatalf("long: TTL %v after the clock went back", d)
	}
}
