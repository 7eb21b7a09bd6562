package booking

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// verdictKind is how an attempt ended.
type verdictKind int

const (
	vBooked    verdictKind = iota // made (or found after an uncertain one): Done mark written, hold kept 300 s
	vDone                         // answered from this child's Done mark
	vDuplicate                    // the slot is another child's (same patient)
	vReserved                     // another session holds the slot
	vLater                        // try again later (sync: queue it; worker: defer or retry)
	vFailed                       // refused for good (for this policy): hold released
)

// verdict is an attempt's outcome.
type verdict struct {
	kind      verdictKind
	guid      string
	c9Result  string
	recovered bool // found by the check or answered from the Done mark
	f         failure
	attempts  int // SetAppointment calls made
	waited    time.Duration

	note      contracts.NoteResult // sync: the note's outcome
	noteAdded bool

	// vLater: how to try again.
	checkFirst bool   // the next attempt asks Cloud9 before sending
	queueType  string // the sync answer's error_type
	reason     string // contracts.QueueReason*
	detail     string // lastError
	err        error  // the policy's own error (worker: asynqrt.Defer, ctx)
}

// policy is what differs between the sync path and the worker.
type policy interface {
	// reserve takes or keeps the slot's reservation (sync: Reserve 90 s;
	// worker: Confirm, the hold kept while it is retried). ErrSlotReserved
	// → vReserved; other errors fail open.
	reserve(ctx context.Context, h SlotHold) error
	// turn takes the limiter's turn of procedure; ok false: not now (sync:
	// not within the budget; worker: err is the Defer, or ctx's error).
	turn(ctx context.Context, procedure string) (waited time.Duration, ok bool, err error)
	// again reports whether, after a rate-limit answer, this attempt sends
	// once more (sync: one retry after the delay, within the budget).
	again(ctx context.Context, n int, lastTurn time.Time) bool
	// waitLease reports whether to wait for another attempt's lease and
	// claim again (worker, on its last attempt), else vLater.
	waitLease(ctx context.Context) (bool, error)
	// final reports whether a failure that is not a refusal ends the
	// booking here (sync: other Cloud9 errors; worker: the last attempt).
	final(f failure) bool
	// bookkeeping is the context of the Redis work after (or instead of) a
	// Cloud9 call: not cancelled with the request, bounded by the policy.
	bookkeeping(ctx context.Context) (context.Context, context.CancelFunc)
	// completed finishes a made booking (the note; the worker's result,
	// metric and event); v.recovered without a note when from the mark.
	completed(ctx, bctx context.Context, a *attempt, v verdict) verdict
}

// One booking attempt, written once: the sync path (Service.book) and the
// worker (Worker.handleAppointment) both run attempt.run, and differ only
// by their policy. Every side effect of an attempt — the identity's lease,
// the in-flight and Done marks, the reservation (taken or kept, extended,
// released), the slot-cache drop, and through policy.completed the note,
// the completion event and the task result — is reached from here.
//
//	Done mark? ── same child, still booked ─────────────→ vDone
//	   │           another child ────────────────────────→ vDuplicate
//	policy.reserve ── another session holds it ──────────→ vReserved
//	lease (Claim) ── Redis down ─────────────────────────→ vLater (marks unavailable)
//	   │              another child ──────────────────────→ vDuplicate
//	   │              same booking elsewhere ─────────────→ vLater (policy.waitLease)
//	checkFirst or in-flight mark → limiter turn → GetAppointmentListByPatient
//	   │              found ──────────────────────────────→ vBooked (recovered)
//	limiter turn ── not now ─────────────────────────────→ vLater
//	in-flight mark → SetAppointment
//	   success ───────────────────────────────────────────→ vBooked
//	   rate limited ── policy.again ─→ (next turn) else ──→ vLater
//	   uncertain / unavailable / other (not final) ───────→ vLater
//	   refused, or final for the policy ──────────────────→ vFailed
//
// attempt is one booking attempt of one identity.
type attempt struct {
	b          booking
	hold       SlotHold
	key        string
	owner      string
	checkFirst bool
	pol        policy
}

// engine is what an attempt runs on (the Service's or the Worker's).
type engine struct {
	d   Deps
	cfg Config
	log *slog.Logger
}

func newAttempt(b booking, h SlotHold, ownerPrefix string, checkFirst bool, pol policy) *attempt {
	return &attempt{b: b, hold: h, key: IdentityKey(b.PatientGUID, b.StartTime, b.ScheduleColumnGUID),
		owner: newOwner(ownerPrefix), checkFirst: checkFirst, pol: pol}
}

func later(checkFirst bool, queueType, reason, detail string) verdict {
	return verdict{kind: vLater, checkFirst: checkFirst, queueType: queueType, reason: reason, detail: detail}
}

// run is the protocol of one booking attempt.
func (e engine) run(ctx context.Context, a *attempt) verdict {
	if v, ok := e.fromMark(ctx, a); ok {
		return v
	}
	if e.d.Reservations != nil {
		rctx, cancel := a.pol.bookkeeping(ctx)
		err := a.pol.reserve(rctx, a.hold)
		cancel()
		if errors.Is(err, ErrSlotReserved) {
			return verdict{kind: vReserved}
		} else if err != nil {
			e.log.Warn("slot reservation unavailable; booking without it (fail open)", "err", err)
		}
	}
	if v, ok := e.claim(ctx, a); !ok {
		return v
	}
	v := e.claimed(ctx, a)
	if v.kind == vBooked {
		return e.complete(ctx, a, v)
	}
	return v
}

// fromMark answers from the identity's Done mark: another child's →
// duplicate; this child's → done, once Cloud9 confirms the appointment
// still exists (gone or cancelled → the mark is forgotten, booked again).
func (e engine) fromMark(ctx context.Context, a *attempt) (verdict, bool) {
	rctx, cancel := a.pol.bookkeeping(ctx)
	rec, done, err := e.d.Marks.Completed(rctx, a.key)
	cancel()
	switch {
	case err != nil:
		e.log.Warn("booking marks unavailable", "err", err)
		return verdict{}, false
	case !done:
		return verdict{}, false
	case !sameChild(rec.ChildName, a.b.ChildName):
		e.log.Warn("slot already booked for another child of this patient", "child", a.b.ChildName,
			"other_child", rec.ChildName, "appointment_guid", rec.AppointmentGUID)
		return verdict{kind: vDuplicate}, true
	case !e.stillBooked(ctx, a, rec):
		return verdict{}, false
	}
	e.log.Info("booking already completed; answering it again without calling Cloud9", "appointment_guid", rec.AppointmentGUID)
	return e.complete(ctx, a, verdict{kind: vDone, guid: rec.AppointmentGUID, recovered: true,
		c9Result: "Appointment GUID Added: " + rec.AppointmentGUID}), true
}

// stillBooked asks Cloud9 whether the Done mark's appointment was
// cancelled. Only an appointment Cloud9 lists as cancelled makes the mark
// forgotten (and the booking made again): a list that does not show it —
// empty, or lagging behind a booking made moments ago — proves nothing, and
// re-sending on it could book the slot twice. When Cloud9 cannot be asked
// now the mark (at most DoneTTL old) is trusted too.
func (e engine) stillBooked(ctx context.Context, a *attempt, rec DoneRecord) bool {
	if _, ok, _ := a.pol.turn(ctx, cloud9.ProcGetAppointmentListByPatient); !ok {
		e.log.Info("cannot verify the completed booking now; answering from its mark", "appointment_guid", rec.AppointmentGUID)
		return true
	}
	list, err := listAppointments(ctx, e.d.Cloud9, a.b.PatientGUID)
	if err != nil {
		e.log.Warn("cannot verify the completed booking; answering from its mark", "appointment_guid", rec.AppointmentGUID, "err", err)
		return true
	}
	cancelled := false
	for _, ap := range list {
		if strings.EqualFold(ap.AppointmentGUID, rec.AppointmentGUID) {
			cancelled = ap.Canceled()
			break
		}
	}
	if !cancelled {
		return true
	}
	e.log.Warn("the completed booking's appointment was cancelled; booking it again", "appointment_guid", rec.AppointmentGUID)
	bctx, cancel := a.pol.bookkeeping(ctx)
	defer cancel()
	if err := e.d.Marks.Forget(bctx, a.key, rec.AppointmentGUID); err != nil {
		e.log.Warn("booking marks: could not forget the cancelled booking", "err", err)
	}
	return false
}

// claim takes the identity's lease. Whoever cannot claim it never sends.
func (e engine) claim(ctx context.Context, a *attempt) (verdict, bool) {
	for {
		rctx, cancel := a.pol.bookkeeping(ctx)
		got, holder, err := e.d.Marks.Claim(rctx, a.key, Lease{Owner: a.owner, ChildName: a.b.ChildName}, e.cfg.leaseTTL())
		cancel()
		switch {
		case err != nil:
			e.log.Warn("booking marks unavailable; never sending the booking unguarded", "err", err)
			return later(true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, "booking marks unavailable"), false
		case got:
			return verdict{}, true
		case !sameChild(holder.ChildName, a.b.ChildName):
			e.log.Warn("slot is being booked for another child of this patient", "child", a.b.ChildName, "other_child", holder.ChildName)
			return verdict{kind: vDuplicate}, false
		}
		e.log.Info("another attempt of this booking is in progress", "holder", holder.Owner)
		wait, err := a.pol.waitLease(ctx)
		if !wait {
			v := later(true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonInProgress, "another attempt of this booking is in progress")
			v.err = err
			return v, false
		}
	}
}

// claimed runs the attempt with the lease held: every return hands the
// lease on (Done), keeps it LeaseGrace after an uncertain outcome, or
// releases it.
func (e engine) claimed(ctx context.Context, a *attempt) verdict {
	// The attempt that held the lease may have just completed it.
	rctx, cancel := a.pol.bookkeeping(ctx)
	rec, done, err := e.d.Marks.Completed(rctx, a.key)
	cancel()
	if err == nil && done {
		e.dropLease(ctx, a)
		if !sameChild(rec.ChildName, a.b.ChildName) {
			// A sibling's attempt completed the slot between fromMark and
			// the claim: never send it again for this child.
			e.log.Warn("slot already booked for another child of this patient", "child", a.b.ChildName,
				"other_child", rec.ChildName, "appointment_guid", rec.AppointmentGUID)
			return verdict{kind: vDuplicate}
		}
		return e.complete(ctx, a, verdict{kind: vDone, guid: rec.AppointmentGUID, recovered: true,
			c9Result: "Appointment GUID Added: " + rec.AppointmentGUID})
	}
	v, found := e.check(ctx, a)
	if found || v.kind == vLater {
		return v
	}
	return e.send(ctx, a, v)
}

// check asks Cloud9 for the appointment before sending when an earlier
// attempt's outcome is unknown (CheckFirst, or an in-flight mark left by a
// timeout, a dropped connection or a crash mid-call).
func (e engine) check(ctx context.Context, a *attempt) (verdict, bool) {
	rctx, cancel := a.pol.bookkeeping(ctx)
	inflight, err := e.d.Marks.InFlight(rctx, a.key)
	cancel()
	if err != nil {
		e.log.Warn("booking marks unavailable; checking Cloud9 before booking", "err", err)
		inflight = true
	}
	if !a.checkFirst && !inflight {
		return verdict{}, false
	}
	waited, ok, perr := a.pol.turn(ctx, cloud9.ProcGetAppointmentListByPatient)
	if !ok {
		e.dropLease(ctx, a)
		v := later(true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, "earlier attempt's outcome unknown")
		v.waited, v.err = waited, perr
		return v, false
	}
	guid, err := findExisting(ctx, e.d.Cloud9, a.b.PatientGUID, a.b.StartTime, a.b.ScheduleColumnGUID)
	if err != nil {
		e.dropLease(ctx, a)
		f := failure{class: cloud9.ClassUnknown, code: -1, msg: "checking for an existing appointment: " + err.Error(), uncertain: true}
		v := e.retryLater(ctx, a, f, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, true)
		v.detail, v.waited = "earlier attempt's outcome unknown", waited
		return v, false
	}
	if guid != "" {
		e.log.Info("appointment found after an uncertain attempt; not sending it again", "appointment_guid", guid)
		return verdict{kind: vBooked, guid: guid, c9Result: "Appointment GUID Added: " + guid, recovered: true, waited: waited}, true
	}
	e.clearMark(ctx, a)
	return verdict{waited: waited}, false
}

// send takes the limiter's turn, marks the call in flight and sends
// SetAppointment (again after a rate-limit answer when the policy says so).
func (e engine) send(ctx context.Context, a *attempt, v verdict) verdict {
	var lastTurn time.Time
	var f failure
	for n := 1; ; n++ {
		if n > 1 && !a.pol.again(ctx, n, lastTurn) {
			break
		}
		waited, ok, perr := a.pol.turn(ctx, cloud9.ProcSetAppointment)
		v.waited += waited
		lastTurn = e.cfg.Now()
		if !ok {
			e.dropLease(ctx, a)
			if n > 1 {
				break
			}
			l := later(false, contracts.BookingErrRateLimitedQueued, contracts.QueueReasonLimiterWait, "Rate limited")
			l.waited, l.err = v.waited, perr
			return l
		}
		// Never send without holding the lease and having written the mark.
		rctx, cancel := a.pol.bookkeeping(ctx)
		held, err := e.d.Marks.Begin(rctx, a.key, a.owner, e.cfg.leaseTTL())
		cancel()
		if err != nil || !held {
			e.log.Warn("booking marks: could not mark the call in flight; not sending", "lease_held", held, "err", err)
			e.dropLease(ctx, a)
			l := later(true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonInProgress, "could not mark the booking in flight")
			l.waited, l.attempts = v.waited, v.attempts
			return l
		}
		v.attempts = n
		guid, result, err := e.d.Cloud9.SetAppointment(ctx, a.b.input())
		if err == nil {
			v.kind, v.guid, v.c9Result = vBooked, guid, firstNonEmpty(result, "Appointment GUID Added: "+guid)
			return v
		}
		if f = classify(err); f.disposition() != dispRateLimited {
			return e.withCounts(e.failed(ctx, a, f), v)
		}
		e.clearMark(ctx, a)
		e.log.Info("SetAppointment rate limited", "attempt", n, "msg", f.msg)
	}
	e.dropLease(ctx, a)
	l := e.retryLater(ctx, a, f, contracts.BookingErrRateLimitedQueued, contracts.QueueReasonRateLimited, false)
	if l.kind == vLater {
		l.detail = f.msg // Cloud9's own words as the queued answer's lastError
	}
	return e.withCounts(l, v)
}

func (e engine) withCounts(v, counts verdict) verdict {
	v.attempts, v.waited = counts.attempts, counts.waited
	return v
}

// failed handles a SetAppointment failure other than a rate limit.
func (e engine) failed(ctx context.Context, a *attempt, f failure) verdict {
	switch f.disposition() {
	case dispUncertain:
		// The mark stays: whoever runs this booking next checks first; the
		// lease stays a little, for a late commit to land.
		e.log.Warn("SetAppointment outcome uncertain; trying later with a check first", "err", f.text())
		bctx, cancel := a.pol.bookkeeping(ctx)
		if _, err := e.d.Marks.Extend(bctx, a.key, a.owner, e.cfg.LeaseGrace); err != nil {
			e.log.Warn("booking marks: could not keep the lease", "err", err)
		}
		cancel()
		return e.retryLater(ctx, a, f, f.queuedType(), contracts.QueueReasonUncertain, true)
	case dispUnavailable:
		e.clearMark(ctx, a)
		e.dropLease(ctx, a)
		return e.retryLater(ctx, a, f, f.queuedType(), contracts.QueueReasonUnavailable, false)
	}
	e.clearMark(ctx, a)
	held := e.dropLease(ctx, a)
	if f.class == cloud9.ClassSlotNotAvailable {
		if v, ok := e.lostToItself(ctx, a, held, f); ok {
			return v
		}
	}
	if f.disposition() != dispPermanent && !a.pol.final(f) {
		return e.retryLater(ctx, a, f, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, false)
	}
	return e.refused(ctx, a, f)
}

// retryLater is a failure the booking survives: tried again later — unless
// it is final for the policy (the worker's last attempt).
func (e engine) retryLater(ctx context.Context, a *attempt, f failure, queueType, reason string, checkFirst bool) verdict {
	if a.pol.final(f) {
		return e.refused(ctx, a, f)
	}
	v := later(checkFirst, queueType, reason, f.text())
	v.f = f
	return v
}

// refused ends the booking: the reservation is released (also after the
// last attempt's uncertain outcome: a slot that was booked after all is
// refused by Cloud9 to the next caller and then leaves the cache, where
// keeping the hold would hide a likely free slot for minutes), and a slot
// Cloud9 refused as not available leaves the slot cache, so neither it nor its
// bookingToken is offered again (docs/reference/nodered-endpoints.md §1.2 step 9).
func (e engine) refused(ctx context.Context, a *attempt, f failure) verdict {
	bctx, cancel := a.pol.bookkeeping(ctx)
	defer cancel()
	e.release(bctx, a.hold)
	if f.class == cloud9.ClassSlotNotAvailable {
		invalidateSlot(bctx, e.d.Slots, a.b.slotRef(), e.log)
	}
	return verdict{kind: vFailed, f: f}
}

// lostToItself handles SLOT_NOT_AVAILABLE when the slot may be this very
// booking's: another attempt of it completed (Done mark) → answered from
// that; this attempt's lease lapsed during the call (another attempt may
// be sending it) → later with a check first. Either way the reservation is
// not released: it is the other attempt's too.
func (e engine) lostToItself(ctx context.Context, a *attempt, held bool, f failure) (verdict, bool) {
	bctx, cancel := a.pol.bookkeeping(ctx)
	rec, done, err := e.d.Marks.Completed(bctx, a.key)
	cancel()
	switch {
	case err == nil && done && sameChild(rec.ChildName, a.b.ChildName):
		e.log.Info("slot refused, but it is booked under this identity", "appointment_guid", rec.AppointmentGUID)
		return e.complete(ctx, a, verdict{kind: vDone, guid: rec.AppointmentGUID, recovered: true,
			c9Result: "Appointment GUID Added: " + rec.AppointmentGUID}), true
	case err == nil && done:
		return verdict{kind: vDuplicate}, true
	case !held:
		e.log.Warn("slot refused after this attempt's lease lapsed; trying later with a check first")
		v := later(true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, f.text())
		v.f = f
		return v, true
	}
	return verdict{}, false
}

// complete records a made booking — Done mark (the lease handed on), the
// reservation kept 300 s — and lets the policy finish it (note, result,
// event). The booked slot leaves the cached lists when the source keeps
// them (SlotBooker), which still accepts its bookingToken for a while: the
// same createAppt asked again is answered from the Done mark.
func (e engine) complete(ctx context.Context, a *attempt, v verdict) verdict {
	bctx, cancel := a.pol.bookkeeping(ctx) // the appointment exists: record it even if ctx has ended
	defer cancel()
	if v.kind == vBooked {
		if err := e.d.Marks.Done(bctx, a.key, a.owner, DoneRecord{AppointmentGUID: v.guid, ChildName: a.b.ChildName}); err != nil {
			e.log.Warn("booking marks: could not record the completed booking", "appointment_guid", v.guid, "err", err)
		}
	}
	if e.d.Reservations != nil {
		if err := e.d.Reservations.Confirm(bctx, a.hold); err != nil {
			e.log.Warn("slot reservation: extend failed", "err", err)
		}
	}
	bookedSlot(bctx, e.d.Slots, a.b.slotRef(), e.log) // cache_ops.go
	return a.pol.completed(ctx, bctx, a, v)
}

func (e engine) clearMark(ctx context.Context, a *attempt) {
	bctx, cancel := a.pol.bookkeeping(ctx)
	defer cancel()
	if err := e.d.Marks.Clear(bctx, a.key, a.owner); err != nil {
		e.log.Warn("booking marks: clear failed", "err", err)
	}
}

// dropLease releases the attempt's lease; held says whether it still held it.
func (e engine) dropLease(ctx context.Context, a *attempt) bool {
	bctx, cancel := a.pol.bookkeeping(ctx)
	defer cancel()
	held, err := e.d.Marks.Release(bctx, a.key, a.owner)
	if err != nil {
		e.log.Warn("booking marks: lease release failed (it expires by itself)", "err", err)
	}
	return held
}

func (e engine) release(ctx context.Context, h SlotHold) {
	if e.d.Reservations == nil {
		return
	}
	if err := e.d.Reservations.Release(ctx, h); err != nil {
		e.log.Warn("slot reservation: release failed (it expires by itself)", "err", err)
	}
}

// invalidateSlot drops a refused slot from src's cache when src keeps one
// (see SlotInvalidator); failure only means the slot is offered a little
// longer (Cloud9 still refuses it).
func invalidateSlot(ctx context.Context, src SlotSource, r SlotRef, log *slog.Logger) {
	inv, ok := src.(SlotInvalidator)
	if !ok {
		return
	}
	if err := inv.Invalidate(ctx, r); err != nil {
		log.Warn("slot cache: could not drop the refused slot (it is offered until the list is refreshed)", "err", err)
	}
}

// listAppointments asks Cloud9 for the patient's appointments; Cloud9 has
// answered empty lists under load, so an empty answer is asked again once.
func listAppointments(ctx context.Context, c Cloud9, patientGUID string) ([]cloud9.Appointment, error) {
	list, err := c.GetAppointmentListByPatient(ctx, patientGUID)
	if err == nil && len(list) == 0 {
		list, err = c.GetAppointmentListByPatient(ctx, patientGUID)
	}
	return list, err
}

// findExisting returns the GUID of the patient's appointment at the same
// start (to the minute) and column (when Cloud9 says which), not
// cancelled; "" when there is none.
func findExisting(ctx context.Context, c Cloud9, patientGUID, startTime, columnGUID string) (string, error) {
	list, err := listAppointments(ctx, c, patientGUID)
	if err != nil {
		return "", err
	}
	want, ok := contracts.ParseStartTime(startTime)
	for _, ap := range list {
		if ap.Canceled() || (ap.ScheduleColumnGUID != "" && !strings.EqualFold(ap.ScheduleColumnGUID, columnGUID)) {
			continue
		}
		got, gok := contracts.ParseStartTime(ap.AppointmentDateTime)
		switch {
		case ok && gok && got.Truncate(time.Minute).Equal(want.Truncate(time.Minute)):
			return ap.AppointmentGUID, nil
		case (!ok || !gok) && strings.EqualFold(strings.TrimSpace(ap.AppointmentDateTime), strings.TrimSpace(startTime)):
			return ap.AppointmentGUID, nil
		}
	}
	return "", nil
}
