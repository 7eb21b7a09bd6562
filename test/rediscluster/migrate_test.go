package rediscluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A slot moved under reads and writes: the ClusterClient follows ASK and
// MOVED, and every key arrives.
func TestMigrationMovesASlotUnderLoad(t *testing.T) {
	t.Parallel()
	c := Start(t)
	ctx := context.Background()
	rdb := c.Client()
	const n = 500
	for i := range n {
		if err := rdb.Set(ctx, fmt.Sprintf("{mig}:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	from, err := c.MasterOf(ctx, "{mig}")
	if err != nil {
		t.Fatal(err)
	}
	to := (c.Index(from) + 1) % len(c.Addrs())
	slot, err := rdb.ClusterKeySlot(ctx, "{mig}").Result()
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.BeginMigration(ctx, int(slot), to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(ctx, 100); err != nil {
		t.Fatal(err)
	}
	// Half way: moved keys answer through ASK, new keys land on the target.
	for i := range n {
		if v, err := rdb.Get(ctx, fmt.Sprintf("{mig}:%d", i)).Int(); err != nil || v != i {
			t.Fatalf("GET {mig}:%d mid-migration = %d, %v", i, v, err)
		}
	}
	if err := rdb.Set(ctx, "{mig}:new", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Finish(ctx, 100, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if m.Moved < n {
		t.Fatalf("moved %d keys, want ≥ %d", m.Moved, n)
	}
	if owner, _ := c.MasterOf(ctx, "{mig}"); owner != c.Addrs()[to] {
		t.Fatalf("slot owner after migration = %s, want %s", owner, c.Addrs()[to])
	}
	for i := range n {
		if v, err := rdb.Get(ctx, fmt.Sprintf("{mig}:%d", i)).Int(); err != nil || v != i {
			t.Fatalf("GET {mig}:%d after migration = %d, %v", i, v, err)
		}
	}
	counts, err := c.KeysOnMaster(ctx, "{mig}:*")
	if err != nil || counts[c.Addrs()[to]] != n+1 || counts[from] != 0 {
		t.Fatalf("keys per master = %v, %v", counts, err)
	}
}
