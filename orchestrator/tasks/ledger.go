package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/autopipe"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Limits of Config.MaxRecoveries and Config.MaxProcessing.
const (
	// DefaultMaxRecoveries is MAX_RECOVERIES' default: a task whose worker
	// vanished five times (VM crash, network loss: no heartbeat) is a dead
	// letter — more likely the task kills its worker than bad luck.
	DefaultMaxRecoveries = 5
	MaxMaxRecoveries     = 100
	// DefaultMaxProcessing is TASK_MAX_PROCESSING's default: far beyond
	// any encounter job, well inside SQS's 12 h cap on a message's
	// visibility. MaxMaxProcessing is that cap.
	DefaultMaxProcessing = 4 * time.Hour
	MaxMaxProcessing     = 12 * time.Hour
)

// Config configures a Ledger. Zero values take the defaults.
type Config struct {
	// KeyPrefix starts every key: "<KeyPrefix>:{tasks}:…". Default "flowgate".
	// It must not contain '{' or '}' (the hash tag is the ledger's).
	KeyPrefix string
	// Now is the clock of every transition; sweeps take their own now.
	// Default time.Now.
	Now func() time.Time
	// MaxAttempts is the max_attempts of a task created without one
	// (MAX_RETRY_ATTEMPTS). Default 3.
	MaxAttempts int
	// MaxRecoveries is how many sweep recoveries (RecoverStale,
	// RecoverExpired) a task may take before the one that makes it a dead
	// letter (MAX_RECOVERIES): the nth recovery of a task, n <
	// MaxRecoveries, puts it back to PENDING; the MaxRecoveries-th makes it
	// a dead letter. Recoveries are counted apart from attempts (FAILs).
	// Default DefaultMaxRecoveries; 1..MaxMaxRecoveries.
	MaxRecoveries int
	// HistoryLimit caps each task's history (oldest events are dropped).
	// Default 50.
	HistoryLimit int
	// SweepBatch is how many tasks one sweep script handles, so that no
	// script holds Redis for long. Default 500.
	SweepBatch int
	// ClaimPollInterval is how often a claim with wait_ms looks again.
	// Default 100ms.
	ClaimPollInterval time.Duration
	// MaxProcessing bounds how long a claim may be extended
	// (TASK_MAX_PROCESSING): a heartbeat of a task claimed longer ago is
	// refused (409 max_processing), so the heartbeat monitor recovers it
	// however lively its worker's heartbeat thread is. SQS caps a
	// message's visibility at 12 h the same way. Default
	// DefaultMaxProcessing; 1 minute to MaxMaxProcessing.
	MaxProcessing time.Duration
	// Shards is how many hash tags the ledger spreads over (REDIS_SHARDS;
	// docs/scale-out.md). Default 1: the one tag {tasks}, the keys as they
	// always were. 1..shard.MaxShards.
	Shards int
	// PlainRedis sends each script on its own round trip
	// (REDIS_CLIENT_MODE=plain). By default, on a standalone or Sentinel
	// Redis, the scripts go through the client's AutoPipeliner (package
	// autopipe), bounded by each caller's context: the ACKs, claims and
	// creates of concurrent requests share one write and one read
	// (docs/performance.md, "Against the peers"). A Cluster client always
	// sends them itself: during a slot migration the pipeliner handed
	// claims an ASK redirect as an error, which the cluster client
	// follows, and TestDrillSlotMigrationUnderLoad ended with 3 of 1,200
	// tasks claimed that no worker held.
	PlainRedis bool
}

func (c Config) withDefaults() Config {
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.MaxAttempts = valutil.ValOrDefault(c.MaxAttempts, contracts.DefaultMaxAttempts)
	c.MaxRecoveries = valutil.ValOrDefault(c.MaxRecoveries, DefaultMaxRecoveries)
	c.HistoryLimit = valutil.ValOrDefault(c.HistoryLimit, 50)
	c.SweepBatch = valutil.ValOrDefault(c.SweepBatch, 500)
	c.ClaimPollInterval = valutil.ValOrDefault(c.ClaimPollInterval, 100*time.Millisecond)
	c.Shards = valutil.ValOrDefault(c.Shards, 1)
	c.MaxProcessing = valutil.ValOrDefault(c.MaxProcessing, DefaultMaxProcessing)
	return c
}

func (c Config) validate() error {
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("tasks: KeyPrefix %q must not contain '{' or '}'", c.KeyPrefix)
	case c.MaxAttempts < 1 || c.MaxAttempts > contracts.MaxMaxAttempts:
		return fmt.Errorf("tasks: MaxAttempts %d must be 1..%d", c.MaxAttempts, contracts.MaxMaxAttempts)
	case c.MaxRecoveries < 1 || c.MaxRecoveries > MaxMaxRecoveries:
		return fmt.Errorf("tasks: MaxRecoveries %d must be 1..%d", c.MaxRecoveries, MaxMaxRecoveries)
	case c.HistoryLimit < 1 || c.HistoryLimit > 10_000:
		return fmt.Errorf("tasks: HistoryLimit %d must be 1..10000", c.HistoryLimit)
	case c.SweepBatch < 1 || c.SweepBatch > 10_000:
		return fmt.Errorf("tasks: SweepBatch %d must be 1..10000", c.SweepBatch)
	case c.ClaimPollInterval < 0:
		return fmt.Errorf("tasks: ClaimPollInterval must not be negative")
	case c.MaxProcessing < time.Minute || c.MaxProcessing > MaxMaxProcessing:
		return fmt.Errorf("tasks: MaxProcessing %s must be 1m..%s", c.MaxProcessing, MaxMaxProcessing)
	case c.Shards < 1 || c.Shards > shard.MaxShards:
		return fmt.Errorf("tasks: Shards %d must be 1..%d", c.Shards, shard.MaxShards)
	}
	return nil
}

// Ledger is the VM task queue of docs/tasks.md, kept in Redis. It is safe for
// concurrent use, and any number of Ledgers (in any number of processes) may
// share one Redis: every transition is one Lua script.
type Ledger struct {
	rdb redis.UniversalClient
	cfg Config
	set shard.Set
	ks  []keys // one per shard
	// rot is the order in which claims visit shards of equal priority and
	// sweeps start their walk over the shards.
	rot shard.Rotation
	sc  *scripts // calls the scripts: FCALL or EVALSHA (functions.go)
}

// New returns a Ledger on rdb (a client, cluster client or failover client).
func New(rdb redis.UniversalClient, cfg Config) (*Ledger, error) {
	if rdb == nil {
		return nil, errors.New("tasks: nil Redis client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	set, err := shard.New("tasks", cfg.Shards)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	l := &Ledger{rdb: rdb, cfg: cfg, set: set, ks: make([]keys, set.N()), sc: &scripts{rdb: rdb, hot: rdb}}
	if _, cluster := rdb.(*redis.ClusterClient); !cfg.PlainRedis && !cluster {
		switch p, err := autopipe.New(rdb); {
		case err == nil:
			l.sc.hot = p
		case !errors.Is(err, autopipe.ErrUnsupported): // a client without one keeps a round trip per script
			return nil, fmt.Errorf("tasks: %w", err)
		}
	}
	for i := range l.ks {
		l.ks[i] = newKeys(cfg.KeyPrefix, set.Tag(i))
	}
	return l, nil
}

// run calls a script in shard sh with KEYS keys (the shard's ledger keys
// first: see keys.scriptKeys) and the prelude's ARGV (the shard's base,
// now, history cap) followed by args.
func (l *Ledger) run(ctx context.Context, op string, s *proc, sh int, now time.Time, keys []string, args ...any) (any, error) {
	argv := make([]any, 0, 3+len(args))
	argv = append(argv, l.ks[sh].base, now.UnixMilli(), l.cfg.HistoryLimit)
	argv = append(argv, args...)
	v, err := l.sc.run(ctx, s, keys, argv...).Result()
	if err != nil {
		return nil, storeError(op, err)
	}
	return v, nil
}

// single runs a single-task script on task id at Config.Now with ARGV
// (id, args...) and maps its reply: a no-op is returned with code
// codeNoop, every failure as a typed error. The task is looked for in the
// shard of enc (when the request names an encounter), then in the shard
// of its id, then where its locator points (see lookup).
func (l *Ledger) single(ctx context.Context, op string, s *proc, id, enc string, args ...any) (reply, error) {
	return l.singleChecked(ctx, op, s, id, enc, nil, args...)
}

// singleChecked is single making rc's check (when not nil) in the first
// script it runs, as KEYS[19] and its TTL as the ARGV after args: a replay
// answers codeReplayed and stops the lookup. A check that cannot ride in
// the script is made before it (ReplayCheck.Immediate).
func (l *Ledger) singleChecked(ctx context.Context, op string, s *proc, id, enc string, rc *ReplayCheck, args ...any) (reply, error) {
	if rc != nil && l.replayKey(rc, 0) == "" {
		rc.made = true
		if rc.Immediate == nil {
			return reply{}, &contracts.Error{Code: contracts.CodeInternal, Op: op, Message: "replay check cannot be made"}
		}
		if err := rc.Immediate(ctx); err != nil {
			return reply{}, err
		}
		rc = nil
	}
	var r reply
	var home int
	err := l.lookup(ctx, op, id, enc, func(sh int) (bool, error) {
		var err error
		home = sh
		keys, argv := l.ks[sh].taskKeys(id), append([]any{id}, args...)
		if rc != nil && !rc.made {
			rc.made = true
			keys, argv = append(keys, l.replayKey(rc, sh)), append(argv, rc.TTL.Milliseconds())
		}
		if r, err = l.singleOnceKeys(ctx, op, s, sh, keys, argv); err != nil {
			return false, err
		}
		return r.code != codeNotFound, nil
	})
	if err == nil && r.code == codeConflict && r.b == "encounter_open" {
		// The open entry is trusted by the script; one found stale is
		// cleared, and the transition tried again.
		var repaired bool
		if repaired, err = l.repairOpen(ctx, op, home, r.fields["encounter_id"], r.extra); err == nil && repaired {
			r, err = l.singleOnce(ctx, op, s, home, id, args...)
		}
	}
	if err != nil {
		return reply{}, err
	}
	return r, l.check(op, id, r)
}

func (l *Ledger) singleOnce(ctx context.Context, op string, s *proc, sh int, id string, args ...any) (reply, error) {
	return l.singleOnceKeys(ctx, op, s, sh, l.ks[sh].taskKeys(id), append([]any{id}, args...))
}

func (l *Ledger) singleOnceKeys(ctx context.Context, op string, s *proc, sh int, keys []string, argv []any) (reply, error) {
	v, err := l.run(ctx, op, s, sh, l.cfg.Now(), keys, argv...)
	if err != nil {
		return reply{}, err
	}
	return parseReply(op, v)
}

// repairOpen clears encounter enc's open entry in shard sh if it names
// other and other is closed or gone (lua/repair_open.lua), and reports
// whether it did.
func (l *Ledger) repairOpen(ctx context.Context, op string, sh int, enc, other string) (bool, error) {
	if enc == "" || other == "" {
		return false, nil
	}
	v, err := l.run(ctx, op, lua.repairOpen, sh, l.cfg.Now(), l.ks[sh].scriptKeys(l.ks[sh].task(other)), enc, other)
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// storeError wraps a Redis failure: a script that Redis ran and that failed
// by itself (a Lua runtime error, a bad command, a wrong key type) is a bug
// (internal); anything else means the store is unavailable.
func storeError(op string, err error) error {
	if storeErrorCode(err) == contracts.CodeInternal {
		return &contracts.Error{Code: contracts.CodeInternal, Op: op, Message: "task store script failed", Err: fmt.Errorf("redis: %w", err)}
	}
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "task store unavailable", Err: fmt.Errorf("redis: %w", err)}
}

// unavailablePrefixes are the error prefixes (the reply's first word) with
// which Redis refuses work it cannot do right now. Redis 7 appends
// "script: <sha>, on @user_script:N." to any error a redis.call inside a
// script raises, so the prefix, not the word "script", tells a store that
// is down or busy from a script that is wrong.
var unavailablePrefixes = map[string]bool{
	"OOM":         true, // maxmemory reached: writes refused
	"READONLY":    true, // a replica, e.g. the old master after a Sentinel failover
	"MASTERDOWN":  true, // a replica without its master (replica-serve-stale-data no)
	"LOADING":     true, // loading the dataset at startup
	"BUSY":        true, // another script runs past busy-reply-threshold
	"CLUSTERDOWN": true,
	"TRYAGAIN":    true, // cluster resharding
	"NOSCRIPT":    true, // script cache flushed between EVALSHA and EVAL
	"MISCONF":     true, // RDB snapshots failing: writes refused
	"NOREPLICAS":  true, // min-replicas-to-write not met
}

// storeErrorCode classifies a Redis failure: CodeInternal for an error
// reply that concerns a script and has no prefix of unavailablePrefixes,
// CodeUnavailable for everything else (those prefixes, other error replies,
// network failures, timeouts).
func storeErrorCode(err error) contracts.Code {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return contracts.CodeUnavailable
	}
	msg := rerr.Error()
	prefix, _, _ := strings.Cut(msg, " ")
	if unavailablePrefixes[prefix] || !strings.Contains(strings.ToLower(msg), "script") {
		return contracts.CodeUnavailable
	}
	return contracts.CodeInternal
}

// Reply codes of the single-task scripts (see lua/prelude.lua).
const (
	codeOK       = 0
	codeNoop     = 1
	codeNotFound = 2
	codeConflict = 3
	codeInvalid  = 4
	codeReplayed = 5 // the call's replay key was set already (ReplayCheck)
)

// reply is a parsed standard script reply.
type reply struct {
	code   int64
	a, b   string
	fields map[string]string
	extra  string
}

func parseReply(op string, v any) (reply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 4 {
		return reply{}, badReply(op, v)
	}
	code, ok := arr[0].(int64)
	if !ok {
		return reply{}, badReply(op, v)
	}
	r := reply{code: code, a: str(arr[1]), b: str(arr[2])}
	if r.fields, ok = recordMap(arr[3]); !ok {
		return reply{}, badReply(op, v)
	}
	if len(arr) > 4 {
		r.extra = str(arr[4])
	}
	return r, nil
}

func badReply(op string, v any) error {
	return &contracts.Error{Code: contracts.CodeInternal, Op: op, Message: "unexpected task store reply",
		Err: fmt.Errorf("reply %#v", v)}
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return fmt.Sprint(x)
	}
	return ""
}

// check maps a reply's code to nil (done or no-op) or a typed error.
func (l *Ledger) check(op, id string, r reply) error {
	switch r.code {
	case codeOK, codeNoop:
		return nil
	case codeNotFound:
		return &contracts.Error{Code: contracts.CodeNotFound, Op: op, Message: "no task with queue_id " + id,
			Details: map[string]any{"queue_id": id}}
	case codeConflict:
		return conflict(op, id, r)
	case codeInvalid:
		return invalidReply(op, id, r)
	case codeReplayed:
		return replayed(op)
	}
	return badReply(op, r)
}

// What each conflict reason means, for the client-safe message.
var conflictText = map[string]string{
	"not_processing":     "the task is not PROCESSING",
	"wrong_worker":       "the task is claimed by another worker",
	"different_payload":  "the task is already DONE with different experityActions",
	"done":               "the task is DONE",
	"dlq":                "the task is in the dead letter queue; replay it instead",
	"dead_letter":        "the task is in the dead letter queue and may only be amended there; use POST /queue/{id}/replay to bring it back (which also removes its archived Asynq task and dead-letter record)",
	"not_dlq":            "the task is not in the dead letter queue",
	"illegal_transition": "that transition is not allowed",
	"encounter_open":     "another task of the same encounter is open",
	"queue_id_reused":    "queue_id already names a task with a different encounter_id or payload",
	"max_processing":     "the task has been PROCESSING longer than TASK_MAX_PROCESSING: its claim is no longer extended and the heartbeat monitor will give it back; stop the job",
}

func conflict(op, id string, r reply) error {
	text := strings.ReplaceAll(conflictText[r.b], "{id}", id)
	if text == "" {
		text = "conflicting state"
	}
	d := map[string]any{"current_status": r.a, "queue_id": id, "reason": r.b}
	switch r.b {
	case "wrong_worker":
		d["worker_id"] = r.fields["worker_id"]
	case "encounter_open":
		d["open_queue_id"] = r.extra
	}
	if r.fields["dlq"] == "1" {
		d["dlq"] = true
	}
	return &contracts.Error{Code: contracts.CodeConflict, Op: op, Details: d,
		Message: fmt.Sprintf("%s: task %s is %s; %s", opVerb(op), id, r.a, text)}
}

func invalidReply(op, id string, r reply) error {
	if r.a == "encounter_mismatch" {
		return &contracts.Error{Code: contracts.CodeInvalid, Op: op,
			Message: fmt.Sprintf("encounter_id does not match task %s", id),
			Details: map[string]any{"field": "encounter_id", "queue_id": id}}
	}
	return &contracts.Error{Code: contracts.CodeInvalid, Op: op, Message: r.a, Details: map[string]any{"queue_id": id}}
}

func opVerb(op string) string {
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		return strings.ToLower(op[i+1:])
	}
	return op
}
