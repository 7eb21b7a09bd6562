package booking

import (
	"context"
	"time"
)

// bookkeepingGrace is how long a request's Redis work may still take once
// its budget has passed on the wall clock (the marks, the reservation and
// the enqueue after a Cloud9 call that ended late).
const bookkeepingGrace = 200 * time.Millisecond

// How long the synchronous endpoints may wait on Redis (docs/reference/README.md, principles: a
// hung Redis must not hang the caller). Every Redis call of a request runs
// on a context from its redisBudget:
//
//   - createAppt and createPatient: until the sync budget
//     (BOOKING_SYNC_BUDGET) has passed on the wall clock, then one shared
//     bookkeepingGrace. Time the call chose to wait (a limiter turn of the
//     in-call wait, BOOKING_INCALL_WAIT; the retry delay) is not Redis's:
//     redisBudget.waited moves the end by it, once Redis has answered — so with every Redis call hung they answer within
//     the budget + bookkeepingGrace. The contexts are not cancelled with
//     the request: when a Cloud9 call ended by the request's deadline the
//     booking must still be marked and queued.
//   - getApptSlots, getGroupedApptSlots: each reservation check at most
//     Config.RedisTimeout (BOOKING_REDIS_TIMEOUT; the slot source bounds
//     its slot-cache calls the same way), failing open.
//   - queue-status: at most the sync budget, then 503 UNAVAILABLE.
//
// redisBudget bounds one request's Redis work by a wall-clock instant.
type redisBudget struct {
	by     time.Time // the budget's end
	cutoff time.Time // by + grace, set once by has passed
}

func newRedisBudget(d time.Duration) *redisBudget { return &redisBudget{by: time.Now().Add(d)} }

// waited moves the budget's end by d, a wait the call chose after Redis
// answered (the limiter said "not yet"): Redis is not hung, and the
// in-call wait must not spend the bookkeeping's budget. Nothing moves once
// the budget has run out (cutoff set).
func (b *redisBudget) waited(d time.Duration) {
	if b.cutoff.IsZero() && d > 0 {
		b.by = b.by.Add(d)
	}
}

// ctx is a context for one Redis step: not cancelled with parent, ending
// at the budget's end — or, once that has passed, at one shared grace
// after it.
func (b *redisBudget) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	if b.cutoff.IsZero() && !now.Before(b.by) {
		b.cutoff = now.Add(bookkeepingGrace)
	}
	by := b.by
	if !b.cutoff.IsZero() {
		by = b.cutoff
	}
	return context.WithDeadline(context.WithoutCancel(parent), by)
}
