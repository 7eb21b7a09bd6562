package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shard"
)

// shardsKey records the REDIS_SHARDS that a Redis's data is written with.
// Keys written under one shard count are not read under another (each
// count has its own hash tags, docs/scale-out.md), so a flowgate started
// with another count would not see the tasks, holds and messages already
// there: it must not start. The operation endpoints never write or delete
// it (orchestrator/keyspace); when it is missing all the same (a
// deployment from before it, redis-cli), the data itself is looked at.
const shardsKey = keyspace.ShardMarker

// layoutProbe finds one sharded subsystem's data by a key each of its
// shards has once it holds anything, whatever the shard count.
type layoutProbe struct {
	name  string // the shard set's name (package shard)
	match string // SCAN MATCH of the key in every layout
	// tag is the hash tag of a key match found ("" for the hold engine's
	// untagged keys on a single Redis); ok false for another key.
	tag func(key string) (tag string, ok bool)
}

// layoutProbes: the task ledger's sequence counter, the buffer's depth
// counter and the hold engine's records, in every layout (one shard, one
// shard on Redis Cluster, n shards).
var layoutProbes = []layoutProbe{
	{name: "tasks", match: "flowgate:{tasks*}:seq", tag: func(k string) (string, bool) {
		return between(k, "flowgate:", ":seq", "{tasks")
	}},
	{name: "buffer", match: "flowgate:buffer:{buffer*}:depth", tag: func(k string) (string, bool) {
		return between(k, "flowgate:buffer:", ":depth", "{buffer")
	}},
	{name: "holds", match: "*holds:records", tag: func(k string) (string, bool) {
		if k == "holds:records" {
			return "", true
		}
		return between(k, "", ":holds:records", holds.ClusterTag[:len(holds.ClusterTag)-1])
	}},
}

// between is the hash tag of key between before and after, when it starts
// with tagStart and is one tag ({…} without another brace).
func between(key, before, after, tagStart string) (string, bool) {
	t, ok := strings.CutPrefix(key, before)
	if !ok {
		return "", false
	}
	if t, ok = strings.CutSuffix(t, after); !ok || !strings.HasPrefix(t, tagStart) || !strings.HasSuffix(t, "}") ||
		strings.Count(t, "{") != 1 || strings.Count(t, "}") != 1 {
		return "", false
	}
	return t, true
}

// visibleTags are the tags a flowgate with n shards reads for probe p.
func visibleTags(p layoutProbe, n int, cluster bool) []string {
	if p.name == "holds" && n == 1 {
		if cluster {
			return []string{holds.ClusterTag}
		}
		return []string{""}
	}
	return shard.Must(p.name, n).Tags()
}

// countsOf are the shard counts whose tags of subsystem name include tag.
func countsOf(name, tag string) []int {
	if tag == "" { // the hold engine's keys on a single Redis with one shard
		return []int{1}
	}
	return shard.Counts(name, tag)
}

// layoutOf is the smallest shard count whose tags include every one of
// tags that flowgate makes (data written with one count); without one,
// the smallest count of the first such tag (data of several counts: any
// is reason enough to refuse); 0 when flowgate makes none of them.
func layoutOf(name string, tags []string) int {
	var common []int
	for _, tag := range tags {
		counts := countsOf(name, tag)
		switch {
		case len(counts) == 0:
			continue
		case common == nil:
			common = counts
			continue
		}
		if next := slices.DeleteFunc(slices.Clone(common), func(n int) bool { return !slices.Contains(counts, n) }); len(next) > 0 {
			common = next
		}
	}
	if len(common) == 0 {
		return 0
	}
	return common[0]
}

// oneShardKeys are keys only a flowgate with one shard writes, and that a
// Redis holding such data has (once a task, an enqueue or a hold was
// made): the data of a deployment from before shardsKey existed.
func oneShardKeys(cluster bool) []string {
	holdsRecords := "holds:records"
	if cluster {
		holdsRecords = holds.ClusterTag + ":holds:records"
	}
	return []string{"flowgate:{tasks}:seq", "flowgate:buffer:{buffer}:depth", holdsRecords}
}

// checkShardLayout refuses (a *ConfigError on REDIS_SHARDS) a shard count
// other than the one the data in rdb was written with, and records n the
// first time. Without a record, the data of any layout n would not see
// refuses the start. Two instances starting at once with different
// counts: one records its count, the other is refused.
func checkShardLayout(ctx context.Context, rdb redis.UniversalClient, n int) error {
	was, evidence, err := writtenShards(ctx, rdb, n)
	if err != nil {
		return err
	}
	switch {
	case was == strconv.Itoa(n) && evidence == shardsKey:
		return nil
	case was != "" && was != strconv.Itoa(n):
		return shardsMismatch(n, was, evidence)
	}
	set, err := rdb.SetNX(ctx, shardsKey, strconv.Itoa(n), 0).Result()
	if err != nil {
		return fmt.Errorf("recording %s: %w", shardsKey, err)
	}
	if set {
		return nil
	}
	return checkShardLayout(ctx, rdb, n) // recorded meanwhile by another instance: compare with it
}

// writtenShards is the shard count rdb's data was written with and where
// that shows ("" when it holds nothing n would not see): the record, or,
// without one, the keys of a layout other than n's that a SCAN for each
// probe finds, with the count their tags fit (was "?" when flowgate makes
// none of them). The SCANs run only while the record is missing: once per
// deployment.
func writtenShards(ctx context.Context, rdb redis.UniversalClient, n int) (was, evidence string, err error) {
	v, err := rdb.Get(ctx, shardsKey).Result()
	switch {
	case err == nil:
		return v, shardsKey, nil
	case !errors.Is(err, redis.Nil):
		return "", "", fmt.Errorf("reading %s: %w", shardsKey, err)
	}
	_, cluster := rdb.(*redis.ClusterClient)
	for _, p := range layoutProbes {
		visible := visibleTags(p, n, cluster)
		var tags, keys []string
		err := scanKeys(ctx, rdb, p.match, func(key string) bool {
			if tag, ok := p.tag(key); ok && !slices.Contains(visible, tag) && !slices.Contains(tags, tag) {
				tags, keys = append(tags, tag), append(keys, key)
			}
			return len(tags) <= shard.MaxShards
		})
		if err != nil {
			return "", "", fmt.Errorf("looking for data of another REDIS_SHARDS (SCAN %s): %w", p.match, err)
		}
		if len(tags) == 0 {
			continue
		}
		// The evidence: a key of the count named first, then how many more.
		m := layoutOf(p.name, tags)
		was, evidence = "?", ""
		if m > 0 {
			was = strconv.Itoa(m)
		}
		for i, k := range keys {
			if m == 0 || slices.Contains(countsOf(p.name, tags[i]), m) {
				if evidence == "" || k < evidence {
					evidence = k
				}
			}
		}
		if len(keys) > 1 {
			evidence += fmt.Sprintf(" and %d more", len(keys)-1)
		}
		return was, evidence, nil
	}
	return "", "", nil
}

// scanKeys calls fn with each key matching match, on every master of a
// cluster, until fn returns false.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, match string, fn func(key string) bool) error {
	var mu sync.Mutex
	stop := false
	each := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, match, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			if !stop && !fn(it.Val()) {
				stop = true
			}
			done := stop
			mu.Unlock()
			if done {
				return nil
			}
		}
		return it.Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, each)
	case *redis.Client:
		return each(ctx, c)
	}
	return fmt.Errorf("unsupported client %T", rdb)
}

func shardsMismatch(n int, was, evidence string) error {
	if evidence != shardsKey {
		written, fix := "REDIS_SHARDS="+was, "start with REDIS_SHARDS="+was+" (it is recorded again)"
		if was == "?" {
			written, fix = "another REDIS_SHARDS", "start with the count it was written with"
		}
		return &ConfigError{Var: "REDIS_SHARDS", Err: fmt.Errorf(
			"is %d, but %s is missing and this Redis holds data written with %s (%s): flowgate would not see "+
				"its tasks, holds and messages; %s, or drain that data first (docs/scale-out.md)",
			n, shardsKey, written, evidence, fix)}
	}
	return &ConfigError{Var: "REDIS_SHARDS", Err: fmt.Errorf(
		"is %d, but this Redis holds data written with REDIS_SHARDS=%s (%s): flowgate would not see its tasks, holds "+
			"and messages; keep REDIS_SHARDS=%s, or drain them first and delete %s (docs/scale-out.md)",
		n, was, evidence, was, shardsKey)}
}

// dataWatch is the redis_data_check cron job: the shard-layout marker,
// recorded at every start and never deleted by flowgate, is missing only
// when the Redis lost its data while flowgate ran — a restart without
// persistence, a failover to a replica that had not caught up, a
// FLUSHALL. Then every queued booking, task, hold and buffer message
// written before is gone, and nothing else would say so: /readyz stays
// green and the queues read empty. One SET NX per run finds it missing
// and records it again, so one instance logs it once, at error, and
// counts it in flowgate_redis_data_lost_total.
type dataWatch struct {
	rdb    redis.UniversalClient
	shards int
	lost   prometheus.Counter
	log    *slog.Logger
}

func newDataWatch(rdb redis.UniversalClient, shards int, log *slog.Logger, reg prometheus.Registerer) (*dataWatch, error) {
	w := &dataWatch{rdb: rdb, shards: shards, log: log, lost: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flowgate_redis_data_lost_total",
		Help: "Times this instance found that Redis had lost flowgate's data while it ran (its shard-layout marker gone).",
	})}
	if err := reg.Register(w.lost); err != nil {
		return nil, err
	}
	return w, nil
}

// Run implements scheduler.Job.
func (w *dataWatch) Run(ctx context.Context) error {
	set, err := w.rdb.SetNX(ctx, shardsKey, strconv.Itoa(w.shards), 0).Result()
	if err != nil {
		return fmt.Errorf("redis data check: %w", err)
	}
	if set {
		w.lost.Inc()
		w.log.Error("REDIS LOST FLOWGATE'S DATA while it ran: every queued booking, task, hold and buffer message written before is gone "+
			"(a restart without persistence, a failover to a replica that had not caught up, or a FLUSHALL); "+
			"turn on appendonly yes (flowgate check), and call back the callers whose bookings were queued",
			"marker", shardsKey, "recorded_again", strconv.Itoa(w.shards))
	}
	return nil
}
