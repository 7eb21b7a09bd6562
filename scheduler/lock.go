package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultKeyPrefix is the prefix of every key the scheduler writes: a
// job's lock (lockKey) and its last tick (lastKey), described in
// docs/keyspace.md (orchestrator/keyspace lists them: this package imports
// only contracts). Both keys of a job share the hash tag {<job>}, so the
// scripts, which touch both, work on Redis Cluster.
const DefaultKeyPrefix = "flowgate:cron:"

func lockKey(prefix, job string) string { return prefix + "{" + job + "}:lock" }
func lastKey(prefix, job string) string { return prefix + "{" + job + "}:last" }

// acquireCmd claims one tick of one job and takes its lock.
//
// KEYS[1] -> <prefix>{<job>}:lock
// KEYS[2] -> <prefix>{<job>}:last
// ARGV[1] -> tick, unix milliseconds
// ARGV[2] -> token of this run
// ARGV[3] -> lock TTL, milliseconds
// ARGV[4] -> TTL of the last key, milliseconds
//
// Returns:
//
//	 1 acquired: the lock is set to the token and last to the tick
//	 0 claimed: last >= tick, this tick (or a later one) already ran
//	-1 locked: a run of an earlier tick still holds the lock (overrun)
var acquireCmd = redis.NewScript(`
local last = redis.call("GET", KEYS[2])
if last and tonumber(last) >= tonumber(ARGV[1]) then
	return 0
end
if redis.call("EXISTS", KEYS[1]) == 1 then
	return -1
end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[4])
return 1
`)

// releaseCmd deletes the lock only if it still holds this run's token, so a
// run whose lock expired cannot release the lock of a later run.
//
// KEYS[1] -> <prefix>{<job>}:lock
// ARGV[1] -> token of the run
//
// Returns lockReleased if the lock was deleted, lockNotHeld if it was absent
// or held by another token.
var releaseCmd = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// releaseCmd's replies.
const (
	lockNotHeld  int64 = 0
	lockReleased int64 = 1
)

// acquireResult is the outcome of acquireCmd.
type acquireResult int

const (
	acquired acquireResult = 1
	claimed  acquireResult = 0
	locked   acquireResult = -1
)

// locker runs the lock scripts against one Redis under one key prefix.
type locker struct {
	rdb    redis.UniversalClient
	prefix string
}

// acquire tries to claim tick for job; see acquireCmd.
func (l locker) acquire(ctx context.Context, job string, tick time.Time, token string, lockTTL, lastTTL time.Duration) (acquireResult, error) {
	keys := []string{lockKey(l.prefix, job), lastKey(l.prefix, job)}
	n, err := l.run(ctx, "acquire", acquireCmd, keys,
		strconv.FormatInt(tick.UnixMilli(), 10), token, ms(lockTTL), ms(lastTTL))
	if err != nil {
		return 0, err
	}
	switch r := acquireResult(n); r {
	case acquired, claimed, locked:
		return r, nil
	default:
		return 0, fmt.Errorf("scheduler: acquire %s: unexpected script result %d", keys[0], n)
	}
}

// release deletes job's lock if it still holds token; see releaseCmd.
func (l locker) release(ctx context.Context, job, token string) (bool, error) {
	n, err := l.run(ctx, "release", releaseCmd, []string{lockKey(l.prefix, job)}, token)
	return n == lockReleased, err
}

// run is the one place scripts are called; it names the operation and
// key in every error.
func (l locker) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (int64, error) {
	n, err := s.Run(ctx, l.rdb, keys, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("scheduler: %s %s: %w", op, keys[0], err)
	}
	return n, nil
}

// ms renders d in whole milliseconds, at least 1 (PX 0 is an error).
func ms(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}
