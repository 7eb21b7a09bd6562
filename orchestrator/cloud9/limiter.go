package cloud9

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limiter decides whether one call of procedure may go now. When it may
// not, retryAfter is how long until it may. Declared here, where it is used;
// RedisLimiter is the implementation flowgate runs with.
type Limiter interface {
	Allow(ctx context.Context, procedure string) (ok bool, retryAfter time.Duration, err error)
}

// LimiterFunc adapts a function to Limiter.
type LimiterFunc func(ctx context.Context, procedure string) (bool, time.Duration, error)

// Allow implements Limiter.
func (f LimiterFunc) Allow(ctx context.Context, procedure string) (bool, time.Duration, error) {
	return f(ctx, procedure)
}

// Rate is N calls per Per. The zero Rate means no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r means "no limit".
func (r Rate) IsZero() bool { return r.N <= 0 || r.Per <= 0 }

// Interval is the spacing r enforces: Per/N.
func (r Rate) Interval() time.Duration {
	if r.IsZero() {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

func (r Rate) String() string {
	if r.IsZero() {
		return "unlimited"
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// SpacingToRate turns the seed's BOOKING_SPACING_MS (a minimum gap between
// calls, 10,000 in the seed) into the equivalent Rate: one call per gap.
// ms <= 0 is no limit.
func SpacingToRate(ms int) Rate {
	if ms <= 0 {
		return Rate{}
	}
	return Rate{N: 1, Per: time.Duration(ms) * time.Millisecond}
}

// The procedures that write. Cloud9 limits each procedure on its own ("Too
// many requests within the timeframe for procedure <name>"), so each gets its
// own limiter at the write rate.
const (
	ProcSetPatient                    = "SetPatient"
	ProcSetAppointment                = "SetAppointment"
	ProcSetPatientComment             = "SetPatientComment"
	ProcSetAppointmentStatusCanceled  = "SetAppointmentStatusCanceled"
	ProcSetAppointmentStatusConfirmed = "SetAppointmentStatusConfirmed"
)

// The reads.
const (
	ProcGetOnlineReservations       = "GetOnlineReservations"
	ProcGetAppointmentListByPatient = "GetAppointmentListByPatient"
	ProcGetLocations                = "GetLocations"
	ProcGetChairSchedules           = "GetChairSchedules"
	ProcGetAppointmentTypes         = "GetAppointmentTypes"
	ProcGetPatientInformation       = "GetPatientInformation"
)

// WriteProcedures are the write procedures flowgate calls.
var WriteProcedures = []string{ProcSetPatient, ProcSetAppointment, ProcSetPatientComment,
	ProcSetAppointmentStatusCanceled, ProcSetAppointmentStatusConfirmed}

// WriteRates gives every write procedure the rate write (CLOUD9_WRITE_LIMIT,
// default 5/min), each with its own limiter.
func WriteRates(write Rate) map[string]Rate {
	m := make(map[string]Rate, len(WriteProcedures))
	for _, p := range WriteProcedures {
		m[p] = write
	}
	return m
}

// DefaultMargin is added to every interval of a RedisLimiter. The limiter
// spaces calls as they leave flowgate; they reach Cloud9 with a network
// delay that varies, so two calls exactly Per/N apart here can arrive closer
// than that there. 250 ms costs 2% of a 5/min rate and absorbs that jitter.
const DefaultMargin = 250 * time.Millisecond

// KeyPrefix starts every limiter key. redis_rate prepends its own "rate:",
// so the Redis key of SetAppointment is
// "rate:flowgate:cloud9:rl:{SetAppointment}" (the hash tag keeps each key
// whole on Redis Cluster).
const KeyPrefix = "flowgate:cloud9:rl:"

// limits is what both Redis limiters share: the rate of each procedure,
// the margin added to every period and the key prefix.
type limits struct {
	rates  map[string]Rate
	def    Rate
	margin time.Duration
	prefix string
}

func newLimits(rates map[string]Rate, def Rate, opts []LimiterOption) limits {
	l := limits{rates: make(map[string]Rate, len(rates)), def: def, margin: DefaultMargin, prefix: KeyPrefix}
	for p, r := range rates {
		l.rates[p] = r
	}
	for _, o := range opts {
		o(&l)
	}
	return l
}

// RateFor is the rate procedure is limited at.
func (l *limits) RateFor(procedure string) Rate {
	if r, ok := l.rates[procedure]; ok {
		return r
	}
	return l.def
}

// LimiterOption adjusts a RedisLimiter or a WindowLimiter.
type LimiterOption func(*limits)

// WithMargin replaces DefaultMargin.
func WithMargin(d time.Duration) LimiterOption {
	return func(l *limits) { l.margin = max(d, 0) }
}

// WithKeyPrefix replaces KeyPrefix, e.g. to give two Cloud9 environments
// served from one Redis limiters of their own.
func WithKeyPrefix(p string) LimiterOption { return func(l *limits) { l.prefix = p } }

// RedisLimiter is one GCRA limiter per procedure in Redis
// (github.com/go-redis/redis_rate), shared by the synchronous path, the
// Asynq workers and every flowgate instance using the same Redis. GCRA runs
// on Redis's clock (TIME), so instances' clocks do not matter.
//
// Burst is 1: calls are spaced at least Per/N (+ margin) apart, never sent
// in a burst. Cloud9 does not publish its window; a GCRA burst of N would let
// N calls through at once and then one per Per/N, which puts up to 2N-1
// calls into some window of length Per. Strict spacing puts at most N into
// any window of length Per, whatever Cloud9's window is (fixed or sliding).
// WindowLimiter gives the same guarantee without the spacing
// (CLOUD9_WRITE_LIMITER=spacing picks this one).
type RedisLimiter struct {
	limits
	rl *redis_rate.Limiter
}

// NewRedisLimiter limits each procedure named in rates at its rate and every
// other procedure at def. A zero Rate is no limit (no Redis call). flowgate
// passes WriteRates(CLOUD9_WRITE_LIMIT) and no limit for reads: Cloud9's read
// limits are not known, and slot searches must not queue behind one another;
// flowgate_cloud9_rate_limited_total shows if that ever has to change.
func NewRedisLimiter(rdb redis.UniversalClient, rates map[string]Rate, def Rate, opts ...LimiterOption) *RedisLimiter {
	return &RedisLimiter{limits: newLimits(rates, def, opts), rl: redis_rate.NewLimiter(rdb)}
}

// Spacing is the least time between two turns of procedure (its rate's
// interval plus the margin); 0 when the procedure is not limited.
func (l *RedisLimiter) Spacing(procedure string) time.Duration {
	r := l.RateFor(procedure)
	if r.IsZero() {
		return 0
	}
	return r.Interval() + l.margin
}

// Key is the limiter's key for procedure, without redis_rate's "rate:".
func (l *RedisLimiter) Key(procedure string) string { return l.prefix + "{" + procedure + "}" }

// Allow takes one token of procedure's limiter when there is one.
func (l *RedisLimiter) Allow(ctx context.Context, procedure string) (bool, time.Duration, error) {
	r := l.RateFor(procedure)
	if r.IsZero() {
		return true, 0, nil
	}
	interval := r.Interval() + l.margin
	res, err := l.rl.Allow(ctx, l.Key(procedure), redis_rate.Limit{Rate: 1, Period: interval, Burst: 1})
	if err != nil {
		return false, 0, fmt.Errorf("cloud9: limiter %s: %w", procedure, err)
	}
	if res.Allowed > 0 {
		return true, 0, nil
	}
	return false, max(res.RetryAfter, time.Millisecond), nil
}

// Reset forgets procedure's history (tests, operators).
func (l *RedisLimiter) Reset(ctx context.Context, procedure string) error {
	return l.rl.Reset(ctx, l.Key(procedure))
}
