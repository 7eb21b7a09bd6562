package shard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/test/rediscluster"
)

func TestOneShardIsTodaysTag(t *testing.T) {
	s := shard.Must("tasks", 1)
	if s.N() != 1 || s.Tag(0) != "{tasks}" || s.Of("anything") != 0 {
		t.Fatalf("one shard = %d %q %d", s.N(), s.Tag(0), s.Of("anything"))
	}
}

// Counts names every count whose tags include a tag, and only those.
func TestCounts(t *testing.T) {
	sets := map[int]shard.Set{}
	set := func(n int) shard.Set {
		if _, ok := sets[n]; !ok {
			sets[n] = shard.Must("tasks", n)
		}
		return sets[n]
	}
	for _, n := range []int{2, 3, 6, 16, 64} {
		for i, tag := range set(n).Tags() {
			counts := shard.Counts("tasks", tag)
			found := false
			for _, c := range counts {
				found = found || c == n
				if c <= i || set(c).Tag(i) != tag {
					t.Fatalf("Counts(%s) names %d, whose tag %d is another", tag, c, i)
				}
			}
			if !found {
				t.Fatalf("Counts(%s) = %v lacks %d", tag, counts, n)
			}
		}
	}
	if c := shard.Counts("holds", "{holds}"); fmt.Sprint(c) != "[1]" {
		t.Fatalf("one shard's tag: %v", c)
	}
	for _, bad := range []string{"{tasks:0.99999}", "{tasks:x}", "{holds:1.2}", "tasks", "{tasks:1}"} {
		if c := shard.Counts("tasks", bad); len(c) != 0 {
			t.Fatalf("Counts(%q) = %v, want none", bad, c)
		}
	}
}

func TestTagsCoverEqualSlotRanges(t *testing.T) {
	for _, n := range []int{2, 3, 6, 16, shard.MaxShards} {
		s := shard.Must("holds", n)
		seen := map[string]bool{}
		for i := range n {
			tag := s.Tag(i)
			slot := shard.Slot(tag)
			if lo, hi := i*shard.Slots/n, (i+1)*shard.Slots/n; slot < lo || slot >= hi {
				t.Fatalf("n=%d shard %d tag %s slot %d outside [%d,%d)", n, i, tag, slot, lo, hi)
			}
			if seen[tag] || s.Index(tag) != i {
				t.Fatalf("n=%d tag %s repeated or not found", n, tag)
			}
			seen[tag] = true
		}
		if again := shard.Must("holds", n); fmt.Sprint(again.Tags()) != fmt.Sprint(s.Tags()) {
			t.Fatalf("tags are not a function of (name, n)")
		}
	}
}

func TestOfSpreadsKeys(t *testing.T) {
	s, again := shard.Must("tasks", 6), shard.Must("tasks", 6)
	counts := make([]int, 6)
	for i := range 6000 {
		k := fmt.Sprintf("enc-%d", i)
		if s.Of(k) != again.Of(k) {
			t.Fatal("Of is not a function of the key")
		}
		counts[s.Of(k)]++
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Fatalf("shard %d got %d of 6000 keys: %v", i, c, counts)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"", 1}, {"a{b", 1}, {"a:b", 2}, {"tasks", 0}, {"tasks", shard.MaxShards + 1}} {
		if _, err := shard.New(c.name, c.n); err == nil {
			t.Fatalf("New(%q, %d) accepted", c.name, c.n)
		}
	}
}

func TestSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"foo": 12182, "somekey": 11058, "{foo}.bar": 12182, "{}foo": shard.Slot("{}foo"), "{{foo}}": shard.Slot("{foo"),
	} {
		if got := shard.Slot(key); got != want {
			t.Fatalf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if shard.Slot("{}foo") == shard.Slot("foo") {
		t.Fatal("an empty tag must hash the whole key")
	}
}

// Slot agrees with a real cluster's CLUSTER KEYSLOT, and n tags on a
// three-master cluster reach every master.
func TestSlotMatchesCluster(t *testing.T) {
	c := rediscluster.Start(t)
	ctx := context.Background()
	rdb := c.Client()
	keys := []string{"foo", "{tasks}", "flowgate:{tasks}:t:x", "a{b}c", "{}x", "x{", "}{y}"}
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("k-%d", i), fmt.Sprintf("{tag-%d}:rest", i))
	}
	keys = append(keys, shard.Must("buffer", 6).Tags()...)
	for _, k := range keys {
		want, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := shard.Slot(k); int64(got) != want {
			t.Fatalf("Slot(%q) = %d, cluster says %d", k, got, want)
		}
	}
	masters := map[string]bool{}
	for _, tag := range shard.Must("tasks", 6).Tags() {
		addr, err := c.MasterOf(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		masters[addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("6 shards reach %d of 3 masters", len(masters))
	}
}

func TestRotation(t *testing.T) {
	var r shard.Rotation
	if got := fmt.Sprint(r.Order(3), r.Order(3), r.Order(3), r.Order(3)); got != "[0 1 2] [1 2 0] [2 0 1] [0 1 2]" {
		t.Fatalf("orders = %s", got)
	}
	if got := fmt.Sprint(r.Order(1)); got != "[0]" {
		t.Fatalf("one shard = %s", got)
	}
}
