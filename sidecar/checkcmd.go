package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// The outcome of one check of `flowgate check`.
const (
	checkOK   = "OK"
	checkWarn = "WARN"
	checkFail = "FAIL"
)

type checkRow struct{ name, status, detail string }

// checkTimeout bounds each network check.
const checkTimeout = 10 * time.Second

// runCheck is `flowgate check`: it validates the configuration (a real
// Redis without CLOUD9_* credentials or CLOUD9_SIMULATOR=true FAILs it, as
// it stops a start), reaches
// Redis (mode, version, persistence, eviction, replicas for
// REDIS_MIN_REPLICAS_ACK), calls Cloud9 once with a read to
// prove the credentials, and checks the ops key prefixes; it prints one
// table and exits 1 when any check failed (warnings do not fail it).
func runCheck(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	var rows []checkRow
	add := func(name, status, format string, args ...any) {
		rows = append(rows, checkRow{name, status, fmt.Sprintf(format, args...)})
	}
	defer func() { printChecks(stdout, rows) }()

	cfg, err := LoadConfig(getenv)
	if err != nil {
		reportConfig(stderr, err)
		add("configuration", checkFail, "invalid (problems listed above)")
		return 1
	}
	add("configuration", checkOK, "%d variables read, none invalid", len(settings))
	for _, u := range unknownInEnv(environNames()) {
		add("unknown setting", checkWarn, "%s is %s", u.name, u.hint())
	}
	for _, r := range retiredInEnv(getenv) {
		add("retired setting", checkWarn, "%s is no longer read (it changes nothing); instead: %s", r.name, r.instead)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	if cfg.Embedded() {
		add("redis", checkWarn, "embedded (in-process, nothing durable): set REDIS_URL for a real deployment")
	} else {
		checkRedis(ctx, cfg, log, add)
	}
	checkCloud9(ctx, cfg, add)
	for _, r := range rows {
		if r.status == checkFail {
			return 1
		}
	}
	return 0
}

func checkRedis(ctx context.Context, cfg Config, log *slog.Logger, add func(name, status, format string, args ...any)) {
	b, err := openRedis(ctx, cfg, log)
	if err != nil {
		add("redis", checkFail, "%v", err)
		return
	}
	defer b.close()
	rctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	field, err := redisInfo(rctx, b.Client)
	if err != nil {
		add("redis", checkFail, "%v", err)
		return
	}
	add("redis", checkOK, "reachable (%s), redis %s, mode %s", b.Mode, field("redis_version"), field("redis_mode"))
	if role := field("role"); role == "slave" && len(cfg.RedisClusterAddrs) == 0 { // a cluster client writes to the masters itself
		add("redis role", checkFail, "a read-only replica (role %s, its master %s:%s): flowgate writes from its start on; point REDIS_URL at the master, or use REDIS_SENTINEL_ADDRS to follow failovers",
			role, field("master_host"), field("master_port"))
	}
	checkDurability(rctx, b.Client, cfg, field, add)
	checkPrefixes(rctx, b.Client, cfg.SlotCache.OpsKeyPrefixes, add)
	checkFunctions(rctx, b.Client, add)
	switch was, evidence, err := writtenShards(rctx, b.Client, cfg.RedisShards); {
	case err != nil:
		add("redis shards", checkFail, "%v", err)
	case was != "" && was != strconv.Itoa(cfg.RedisShards):
		add("redis shards", checkFail, "%v", shardsMismatch(cfg.RedisShards, was, evidence))
	default:
		add("redis shards", checkOK, "REDIS_SHARDS=%d matches the data in Redis", cfg.RedisShards)
	}
}

// redisInfo reads INFO's default sections (one section per call before
// Redis 7) and answers a field's value, "?" for one it does not name.
func redisInfo(ctx context.Context, rdb redis.UniversalClient) (func(name string) string, error) {
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO: %w", err)
	}
	return func(name string) string {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
				return v
			}
		}
		return "?"
	}, nil
}

// checkDurability adds the rows of what the Redis keeps: its persistence,
// its eviction policy and, for REDIS_MIN_REPLICAS_ACK, its replicas.
// `flowgate check` prints them; the start logs those that are not OK
// (warnDurability).
func checkDurability(ctx context.Context, rdb redis.UniversalClient, cfg Config, field func(string) string, add func(name, status, format string, args ...any)) {
	aof := field("aof_enabled") == "1"
	save, err := rdb.ConfigGet(ctx, "save").Result()
	switch {
	case aof:
		add("redis persistence", checkOK, "AOF on (appendfsync as configured)")
	case err != nil:
		add("redis persistence", checkWarn, "AOF off, and CONFIG GET save refused (%v): check snapshots yourself", err)
	case save["save"] != "":
		add("redis persistence", checkWarn, "AOF off, RDB snapshots %q: a crash loses the writes since the last snapshot; turn on appendonly yes", save["save"])
	default:
		add("redis persistence", checkWarn, "OFF (no AOF, no RDB): a Redis restart loses every queued booking, task and hold; turn on appendonly yes")
	}
	checkEviction(field("maxmemory"), field("maxmemory_policy"), add)
	if cfg.RedisMinReplicasAck == 0 {
		return
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok { // a cluster's INFO is one node's: ask each master
		checkClusterReplicas(ctx, cc, cfg.RedisMinReplicasAck, add)
		return
	}
	checkReplicas(cfg.RedisMinReplicasAck, field("role"), field("connected_slaves"), add)
}

// checkClusterReplicas is checkReplicas on every master of a Redis
// Cluster: a write waits for the replicas of the master its slot is on,
// so the fewest any master has is what REDIS_MIN_REPLICAS_ACK must not
// exceed.
func checkClusterReplicas(ctx context.Context, cc *redis.ClusterClient, want int, add func(name, status, format string, args ...any)) {
	var mu sync.Mutex
	fewest, where := -1, ""
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		field, err := redisInfo(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		n, err := strconv.Atoi(field("connected_slaves"))
		if err != nil {
			return fmt.Errorf("%s: connected_slaves %q", c.Options().Addr, field("connected_slaves"))
		}
		mu.Lock()
		defer mu.Unlock()
		if fewest < 0 || n < fewest {
			fewest, where = n, c.Options().Addr
		}
		return nil
	})
	switch {
	case err != nil:
		add("redis replicas", checkWarn, "could not read every master's replicas (%v): cannot tell whether REDIS_MIN_REPLICAS_ACK=%d can be met", err, want)
	case fewest < 0:
		add("redis replicas", checkWarn, "the cluster named no master: cannot tell whether REDIS_MIN_REPLICAS_ACK=%d can be met", want)
	case fewest < want:
		add("redis replicas", checkFail, "REDIS_MIN_REPLICAS_ACK=%d but master %s has %d connected replica(s): every write to its slots would answer 503 not_replicated", want, where, fewest)
	default:
		add("redis replicas", checkOK, "every master has at least %d connected replica(s) for REDIS_MIN_REPLICAS_ACK=%d", fewest, want)
	}
}

// durabilityCheckTimeout bounds the start's reading of the Redis's
// persistence and eviction.
const durabilityCheckTimeout = 2 * time.Second

// warnDurability logs at the start what `flowgate check` would warn or
// fail about the Redis's persistence, eviction and replicas, one warning
// each, so that an operator who never ran check still reads that a
// restart or a full Redis would lose queued bookings and tasks. Best
// effort: a Redis refusing INFO or CONFIG (an ACL) is logged, not a
// reason to stop.
func (m *Main) warnDurability(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, durabilityCheckTimeout)
	defer cancel()
	field, err := redisInfo(ctx, m.redis.Client)
	if err != nil {
		m.Logger.Warn("redis persistence and eviction not checked", "err", err, "see", "flowgate check")
		return
	}
	checkDurability(ctx, m.redis.Client, m.Config, field, func(name, status, format string, args ...any) {
		if status != checkOK {
			m.Logger.Warn(name+": "+fmt.Sprintf(format, args...), "check", status, "see", "flowgate check")
		}
	})
}

// checkEviction fails a Redis that may evict keys (a maxmemory with a
// policy other than noeviction): it would drop queued bookings, tasks,
// leases and holds silently instead of refusing writes.
func checkEviction(maxmemory, policy string, add func(name, status, format string, args ...any)) {
	switch {
	case policy == "?" || maxmemory == "?":
		add("redis eviction", checkWarn, "INFO memory names no maxmemory policy: make sure Redis never evicts keys (maxmemory-policy noeviction)")
	case policy == "noeviction":
		add("redis eviction", checkOK, "maxmemory-policy noeviction: a full Redis refuses writes, it never drops keys")
	case maxmemory == "0":
		add("redis eviction", checkOK, "no maxmemory: nothing is evicted (maxmemory-policy %s would apply once one is set: prefer noeviction)", policy)
	default:
		add("redis eviction", checkFail, "maxmemory %s with maxmemory-policy %s: Redis may evict queued bookings, tasks, leases and holds silently; set maxmemory-policy noeviction", maxmemory, policy)
	}
}

// checkReplicas fails REDIS_MIN_REPLICAS_ACK above the replicas the master
// has: every write would then answer 503 not_replicated.
func checkReplicas(want int, role, connected string, add func(name, status, format string, args ...any)) {
	n, err := strconv.Atoi(connected)
	switch {
	case role != "master" || err != nil:
		add("redis replicas", checkWarn, "role %s, connected replicas %s: cannot tell whether REDIS_MIN_REPLICAS_ACK=%d can be met", role, connected, want)
	case n < want:
		add("redis replicas", checkFail, "REDIS_MIN_REPLICAS_ACK=%d but the master has %d connected replica(s): every write would answer 503 not_replicated", want, n)
	default:
		add("redis replicas", checkOK, "%d connected replica(s) for REDIS_MIN_REPLICAS_ACK=%d", n, want)
	}
}

// checkFunctions reports whether Redis has FUNCTION (the task ledger's
// scripts then run as one loaded library) and the libraries of other
// flowgate versions that an upgrade left behind.
func checkFunctions(ctx context.Context, rdb redis.UniversalClient, add func(name, status, format string, args ...any)) {
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: tasks.LibraryPattern}).Result()
	if err != nil {
		add("redis functions", checkOK, "unavailable (%v): the task ledger runs its scripts as EVAL, a few µs more of Redis time per call", err)
		return
	}
	own, stale := tasks.LibraryName(), []string{}
	loaded := false
	for _, l := range libs {
		if l.Name == own {
			loaded = true
		} else {
			stale = append(stale, l.Name)
		}
	}
	state := "loads at start"
	if loaded {
		state = "loaded"
	}
	if len(stale) > 0 {
		add("redis functions", checkWarn, "task ledger library %s %s; %d of other flowgate versions (%s): once no instance of those runs, FUNCTION DELETE each",
			own, state, len(stale), strings.Join(stale, ", "))
		return
	}
	add("redis functions", checkOK, "task ledger library %s %s", own, state)
}

// checkPrefixes reports, for each OPS_KEY_PREFIXES entry, how many keys
// the ops write endpoints may touch — flowgate's own state under it is
// refused whatever the prefix (orchestrator/keyspace) — and fails a prefix
// that would open Asynq's own keys (the durable queues).
func checkPrefixes(ctx context.Context, rdb redis.UniversalClient, prefixes []string, add func(name, status, format string, args ...any)) {
	const limit = 10000
	for _, p := range prefixes {
		if strings.HasPrefix("asynq:", p) || strings.HasPrefix(p, "asynq:") {
			add("ops prefix "+p, checkFail, "opens Asynq's queues to redisSet/redisDelete (refused all the same: protected_key); use a narrower prefix")
			continue
		}
		var seen, writable, deletable int
		err := scanKeys(ctx, rdb, p+"*", func(key string) bool {
			seen++
			switch f := keyspace.Classify(key); {
			case f.Writable():
				writable++
			case f.Deletable():
				deletable++
			}
			return seen < limit
		})
		of := fmt.Sprintf("%d keys", seen)
		if seen >= limit {
			of = fmt.Sprintf("the first %d keys", seen)
		}
		if err != nil {
			add("ops prefix "+p, checkWarn, "SCAN failed: %v", err)
			continue
		}
		add("ops prefix "+p, checkOK, "of %s, %d writable and %d more deletable (caches) through /ops; the rest is flowgate's state, refused",
			of, writable, deletable)
	}
}

func checkCloud9(ctx context.Context, cfg Config, add func(name, status, format string, args ...any)) {
	if cfg.Cloud9Endpoint == "" {
		// A real Redis gets here only with CLOUD9_SIMULATOR=true: LoadConfig
		// refuses it without (the configuration row FAILs).
		add("cloud9", checkWarn, "no CLOUD9_ENDPOINT: bookings go to the built-in sandbox simulator (%s), not to Cloud9: its appointments are not real", simulatorChoice(cfg))
		return
	}
	client, err := cloud9.New(cloud9.Config{Endpoint: cfg.Cloud9Endpoint, ClientID: cfg.Cloud9ClientID,
		Username: cfg.Cloud9Username, Password: cfg.Cloud9Password, VendorUsername: cfg.Cloud9VendorUsername,
		ReadTimeout: min(cfg.Booking.ReadTimeout, checkTimeout)})
	if err != nil {
		add("cloud9", checkFail, "%v", err)
		return
	}
	defer client.Close()
	locs, err := client.GetLocations(ctx)
	if err != nil {
		add("cloud9", checkFail, "GetLocations at %s: %v", cfg.Cloud9Endpoint, err)
		return
	}
	add("cloud9", checkOK, "credentials accepted (GetLocations: %d locations: %s)", len(locs), locationNames(locs))
	found := false
	for _, l := range locs {
		if strings.EqualFold(l.Get("LocationGUID"), cfg.Booking.LocationGUID) {
			add("cloud9 location", checkOK, "CLOUD9_LOCATION_GUID %s is %q", cfg.Booking.LocationGUID, l.Get("LocationName"))
			found = true
		}
	}
	if !found {
		add("cloud9 location", checkFail, "CLOUD9_LOCATION_GUID %s is not among the %d locations Cloud9 answered: %s",
			cfg.Booking.LocationGUID, len(locs), locationNames(locs))
	}
	checkProvider(cfg, add)
	checkPracticeIDs(cfg, add)
}

// checkPracticeIDs warns when the ids createAppt fills a request with
// are flowgate's defaults (the sandbox's): against a real Cloud9 they
// name nothing of the practice's, and Cloud9 has no read that proves a
// view, chair or type. (The location is proven above.)
func checkPracticeIDs(cfg Config, add func(name, status, format string, args ...any)) {
	var sandbox []string
	for _, id := range []struct{ name, value, def string }{
		{"CLOUD9_SCHEDULE_VIEW_GUID", cfg.Booking.ScheduleView, booking.DefaultScheduleViewGUID},
		{"CLOUD9_SCHEDULE_COLUMN_GUID", cfg.Booking.ScheduleColumn, booking.DefaultScheduleColumnGUID},
		{"CLOUD9_APPOINTMENT_TYPE_GUID", cfg.Booking.AppointmentType, booking.DefaultAppointmentTypeGUID},
	} {
		if strings.EqualFold(id.value, id.def) {
			sandbox = append(sandbox, id.name)
		}
	}
	if len(sandbox) > 0 {
		add("cloud9 practice ids", checkWarn, "%s left at flowgate's defaults (the sandbox's ids): set the practice's, or bookings that name none go to a view, chair or type the practice does not have",
			strings.Join(sandbox, ", "))
		return
	}
	add("cloud9 practice ids", checkOK, "schedule view, chair and appointment type set (Cloud9 has no read that proves them: the first booking does)")
}

// checkProvider checks CLOUD9_PROVIDER_GUID, the providerGUID every new
// patient gets (LoadConfig already requires a GUID with a real Cloud9).
// Cloud9 has no read that lists providers, so the check proves what it
// can: not the sandbox simulator's made-up orthodontist, which a real
// Cloud9 would refuse or misfile on every createPatient.
func checkProvider(cfg Config, add func(name, status, format string, args ...any)) {
	g := cfg.Booking.ProviderGUID
	if strings.EqualFold(g, cloud9sim.DefaultOrthodontistGUID) {
		add("cloud9 provider", checkWarn, "CLOUD9_PROVIDER_GUID %s is the sandbox simulator's made-up orthodontist: right only against `flowgate cloud9-sim`; set your practice's provider for Cloud9", g)
		return
	}
	add("cloud9 provider", checkOK, "CLOUD9_PROVIDER_GUID %s set (Cloud9 lists no providers: the first createPatient proves it)", g)
}

// locationNames names each location Cloud9 answered, with its GUID, for
// an operator choosing CLOUD9_LOCATION_GUID.
func locationNames(locs []cloud9.Record) string {
	names := make([]string, 0, len(locs))
	for _, l := range locs {
		names = append(names, fmt.Sprintf("%q %s", l.Get("LocationName"), l.Get("LocationGUID")))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func printChecks(w io.Writer, rows []checkRow) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.status, r.detail)
	}
	_ = tw.Flush()
}
