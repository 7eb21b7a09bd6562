package rediscluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/shard"
)

// slotOf is Redis Cluster's key slot (CRC16/XMODEM of the hash tag or key,
// mod 16384), so the test can pick keys for chosen slots.
func slotOf(key string) int { return shard.Slot(key) }

func TestStartServesEverySlotRange(t *testing.T) {
	t.Parallel()
	c := Start(t)
	ctx := context.Background()

	addrs := c.Addrs()
	if len(addrs) != 3 || addrs[0] == addrs[1] || addrs[1] == addrs[2] || addrs[0] == addrs[2] {
		t.Fatalf("Addrs() = %v, want 3 distinct addresses", addrs)
	}

	// The three masters own disjoint ranges covering all 16384 slots.
	shards, err := c.Client().ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner := make([]string, 16384)
	for _, sh := range shards {
		master := ""
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				master = fmt.Sprintf("%s:%d", n.IP, n.Port)
			}
		}
		for _, r := range sh.Slots {
			for s := r.Start; s <= r.End; s++ {
				if owner[s] != "" {
					t.Fatalf("slot %d owned twice", s)
				}
				owner[s] = master
			}
		}
	}
	perNode := map[string]int{}
	for s, o := range owner {
		if o == "" {
			t.Fatalf("slot %d has no owner", s)
		}
		perNode[o]++
	}
	if len(perNode) != 3 {
		t.Fatalf("slots spread over %d nodes, want 3: %v", len(perNode), perNode)
	}

	// One key in every 32-slot bucket: 512 keys touching all ranges.
	keys := map[int]string{}
	for i := 0; len(keys) < 16384/32; i++ {
		k := fmt.Sprintf("slotprobe:%d", i)
		if _, ok := keys[slotOf(k)/32]; !ok {
			keys[slotOf(k)/32] = k
		}
	}
	wantPerNode := map[string]int64{}
	for _, k := range keys {
		if err := c.Client().Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s (slot %d): %v", k, slotOf(k), err)
		}
		wantPerNode[owner[slotOf(k)]]++
	}
	for _, k := range keys {
		if got, err := c.Client().Get(ctx, k).Result(); err != nil || got != k {
			t.Fatalf("GET %s = %q, %v", k, got, err)
		}
	}
	// Each master holds exactly the keys of its slots.
	for addr, want := range wantPerNode {
		n := redis.NewClient(&redis.Options{Addr: addr})
		got, err := n.DBSize(ctx).Result()
		_ = n.Close()
		if err != nil || got != want {
			t.Errorf("node %s DBSIZE = %d, %v; want %d", addr, got, err, want)
		}
	}
	// Our slot function agrees with the server's.
	for _, k := range []string{"a", "slotprobe:1", "asynq:{default}:pending", "{user1000}.following"} {
		got, err := c.Client().ClusterKeySlot(ctx, k).Result()
		if err != nil || int(got) != slotOf(k) {
			t.Errorf("CLUSTER KEYSLOT %s = %d, %v; slotOf = %d", k, got, err, slotOf(k))
		}
	}
}

func TestClusterRejectsCrossSlotScripts(t *testing.T) {
	t.Parallel()
	c := Start(t)
	ctx := context.Background()
	// It is a real cluster: multi-key commands need one hash tag.
	if err := c.Client().MSet(ctx, "{hold}:a", 1, "{hold}:b", 2).Err(); err != nil {
		t.Fatalf("MSET with one hash tag: %v", err)
	}
	a, b := "x", "y"
	for slotOf(a) == slotOf(b) {
		b += "y"
	}
	err := c.Client().Eval(ctx, "return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)", []string{a, b}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot script error = %v, want CROSSSLOT", err)
	}
}

func TestStartCleansUp(t *testing.T) {
	t.Parallel()
	var addrs []string
	t.Run("cluster", func(t *testing.T) {
		addrs = Start(t).Addrs()
	})
	if len(addrs) != 3 {
		t.Fatalf("got %d addrs", len(addrs))
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("node %s still accepts connections after the test ended", a)
		}
	}
}

func TestMissingBinarySkips(t *testing.T) {
	t.Setenv("FLOWGATE_TEST_REDIS_SERVER", "/nonexistent/redis-server")
	t.Setenv("PATH", t.TempDir())
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t)
	})
	if !skipped {
		t.Fatal("Start without redis-server did not skip")
	}
}

func TestClusterReady(t *testing.T) {
	ok := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_known_nodes:3\r\n"
	if !clusterReady(ok, 3) {
		t.Error("ready info not recognised")
	}
	for _, bad := range []string{
		strings.Replace(ok, "state:ok", "state:fail", 1),
		strings.Replace(ok, "known_nodes:3", "known_nodes:2", 1),
		strings.Replace(ok, "slots_ok:16384", "slots_ok:16383", 1),
		"",
	} {
		if clusterReady(bad, 3) {
			t.Errorf("clusterReady(%q) = true", bad)
		}
	}
}
