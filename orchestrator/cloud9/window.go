package cloud9

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// WindowLimiter is a sliding-window log per procedure in Redis: a call is
// admitted when fewer than N calls were admitted in the last Per + margin,
// on Redis's clock (TIME). Any window of length Per + margin then holds at
// most N admitted calls — the guarantee of RedisLimiter's strict spacing,
// whatever Cloud9's own window is (fixed or sliding) — while N calls that
// arrive together (a family's patients and appointments) go through at
// once instead of one per Per/N. Like RedisLimiter it is shared by the
// synchronous path, the Asynq workers and every instance (CLOUD9_WRITE_LIMITER
// =window, the default).
type WindowLimiter struct {
	limits
	rdb redis.UniversalClient
	now func() time.Time // nil: Redis TIME
}

// NewWindowLimiter limits each procedure named in rates at its rate and
// every other procedure at def; a zero Rate is no limit (no Redis call).
func NewWindowLimiter(rdb redis.UniversalClient, rates map[string]Rate, def Rate, opts ...LimiterOption) *WindowLimiter {
	return &WindowLimiter{limits: newLimits(rates, def, opts), rdb: rdb}
}

// WithWindowClock returns a copy of l that reads now instead of Redis TIME
// (tests; every user of one log must then read the same clock).
func (l *WindowLimiter) WithWindowClock(now func() time.Time) *WindowLimiter {
	c := *l
	c.now = now
	return &c
}

// DefaultCommentReserve is how many places of SetPatientComment's window
// are kept for comments a caller waits on (CLOUD9_COMMENT_RESERVE).
const DefaultCommentReserve = 1

// WithReserve returns a copy of l that admits procedure only while more
// than reserve places of its window are free: the same log (same key and
// window), so callers of l can still use the reserved places and callers of
// the copy never take them. A reserve of N or more leaves the copy one
// place. Used for SetPatientComment: comments no caller waits on must not
// starve one a caller waits for (CLOUD9_COMMENT_RESERVE).
func (l *WindowLimiter) WithReserve(procedure string, reserve int) *WindowLimiter {
	c := *l
	c.rates = make(map[string]Rate, len(l.rates)+1)
	for p, r := range l.rates {
		c.rates[p] = r
	}
	if r := l.RateFor(procedure); !r.IsZero() && reserve > 0 {
		r.N = max(1, r.N-reserve)
		c.rates[procedure] = r
	}
	return &c
}

// Window is the length of procedure's log: its rate's Per plus the margin;
// 0 when the procedure is not limited.
func (l *WindowLimiter) Window(procedure string) time.Duration {
	r := l.RateFor(procedure)
	if r.IsZero() {
		return 0
	}
	return r.Per + l.margin
}

// Key is the Redis key of procedure's log (the hash tag keeps it whole on
// Redis Cluster).
func (l *WindowLimiter) Key(procedure string) string { return l.prefix + "{" + procedure + "}:window" }

// windowScript admits one call when the log holds fewer than N calls
// younger than the window.
//
//	KEYS[1] the procedure's log: ZSET, member "<µs>:<token>", score the
//	        admission time in µs
//	ARGV[1] N; ARGV[2] window µs; ARGV[3] a token unique to this call;
//	ARGV[4] now in µs, "" for Redis TIME
//	returns {windowAdmitted, 0} | {windowRefused, µs until the oldest
//	        admission leaves the window}
var windowScript = redis.NewScript(`
local now
if ARGV[4] ~= '' then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local win = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - win))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  local at = string.format('%.0f', now)
  redis.call('ZADD', KEYS[1], at, at .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(win / 1000) + 1000)
  return {0, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {1, tonumber(oldest[2]) + win - now + 1}
`)

// windowScript's reply codes.
const (
	windowAdmitted int64 = 0
	windowRefused  int64 = 1
)

// Allow takes a place in procedure's window when there is one; when there
// is not, retryAfter is when the oldest admission leaves it.
func (l *WindowLimiter) Allow(ctx context.Context, procedure string) (bool, time.Duration, error) {
	r := l.RateFor(procedure)
	if r.IsZero() {
		return true, 0, nil
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:]) // crypto/rand never fails on Linux; a zero token is still unique with its µs
	now := ""
	if l.now != nil {
		now = strconv.FormatInt(l.now().UnixMicro(), 10)
	}
	res, err := windowScript.Run(ctx, l.rdb, []string{l.Key(procedure)},
		r.N, l.Window(procedure).Microseconds(), hex.EncodeToString(tok[:]), now).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("%d values in the answer", len(res))
	}
	if err != nil {
		return false, 0, fmt.Errorf("cloud9: limiter %s: %w", procedure, err)
	}
	if res[0] == windowAdmitted {
		return true, 0, nil
	}
	return false, max(time.Duration(res[1])*time.Microsecond, time.Millisecond), nil
}

// Reset forgets procedure's history (tests, operators).
func (l *WindowLimiter) Reset(ctx context.Context, procedure string) error {
	return l.rdb.Del(ctx, l.Key(procedure)).Err()
}
