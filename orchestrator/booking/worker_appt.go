package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// handleAppointment runs booking:set_appointment: one attempt (attempt.run)
// with workerPolicy, then the task's answer to Asynq:
//
//   - made, or found (Done mark; CheckFirst or an in-flight mark and
//     GetAppointmentListByPatient has it) → completed: Done mark, hold
//     kept 300 s, note, result, metric, booking_completed event;
//   - lease held by another attempt, or no limiter turn now → deferred (no
//     attempt spent; on the last attempt the handler waits);
//   - rate limit, uncertain (the mark stays: the next attempt checks
//     first), unreachable, other Cloud9 errors → retried with the backoff;
//   - SLOT_NOT_AVAILABLE (the slot also leaves the slot cache),
//     PATIENT_NOT_FOUND, INVALID_*, another child's slot → archived at once
//     (SkipRetry). The reservation is released on the final failure —
//     unless another attempt of this booking holds the slot; failures
//     reports it (booking_failed, final.go) and the runtime's error
//     handler writes the durable dead-letter record.
func (w *Worker) handleAppointment(ctx context.Context, t *asynq.Task) error {
	var p AppointmentTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OperationID == "" || p.PatientGUID == "" {
		return fmt.Errorf("booking: bad %s payload: %w", TypeSetAppointment, errors.Join(err, asynq.SkipRetry))
	}
	return w.runAppointment(ctx, t, p, currentAttempt(ctx))
}

// runAppointment is handleAppointment's attempt a of task p.
func (w *Worker) runAppointment(ctx context.Context, t *asynq.Task, p AppointmentTask, a attemptInfo) error {
	pol := &workerPolicy{w: w, t: t, p: p, a: a}
	b := booking{Appointment: p.Appointment, SessionID: p.SessionID}
	v := w.engine().run(ctx, newAttempt(b, w.hold(p), p.OperationID, p.CheckFirst, pol))
	log := w.log.With("operation_id", p.OperationID, "attempt", a.attempt)
	switch v.kind {
	case vBooked, vDone:
		return nil
	case vReserved: // Confirm does not refuse (workerPolicy.reserve); kept for completeness
		return errors.New(contracts.BookingErrSlotReserved)
	case vDuplicate:
		log.Warn("queued booking refused: the slot is booked for another child of this patient", "child", p.ChildName)
		return &opError{class: contracts.BookingErrDuplicateSlot, skip: true,
			text: contracts.BookingErrDuplicateSlot + ": the slot is booked for another child"}
	case vLater:
		if v.err != nil {
			return v.err // the deferral (no attempt spent), or ctx's end
		}
		log.Info("queued booking attempt failed; retrying with backoff", "err", v.detail)
		class := v.f.errType()
		if class == "" { // not a Cloud9 answer (the marks unavailable): flowgate cannot tell
			class = contracts.BookingErrUnknown
		}
		return &opError{class: class, text: v.detail, uncertain: v.checkFirst || v.f.uncertain}
	}
	log.Warn("queued booking failed for good", "class", v.f.class, "err", v.f.text())
	return failedErr(v.f, v.f.disposition() == dispPermanent)
}

func (w *Worker) engine() engine { return engine{d: w.d, cfg: w.cfg, log: w.log} }

// workerPolicy is the worker's side of an attempt: the hold is kept (not
// taken) while the booking is retried, a limiter turn that is not free
// defers the task without spending an attempt, a rate-limit answer is
// retried with the booking backoff, and only the last attempt is final.
type workerPolicy struct {
	w *Worker
	t *asynq.Task
	p AppointmentTask
	a attemptInfo
}

// reserve keeps the slot held while the booking is still being tried: the
// hold confirmed at queueing (300 s) would lapse before a late attempt,
// and other sessions would be offered the slot again (the race docs/holds.md#the-hold-engine closes).
// Fail open: Cloud9 decides whether the slot is still free.
func (p *workerPolicy) reserve(ctx context.Context, h SlotHold) error {
	if err := p.w.d.Reservations.Confirm(ctx, h); err != nil {
		p.w.log.Warn("could not keep the slot held for the queued booking; trying it anyway", "operation_id", p.p.OperationID, "err", err)
	}
	return nil
}

func (p *workerPolicy) turn(ctx context.Context, procedure string) (time.Duration, bool, error) {
	err := p.w.turn(ctx, procedure, p.a)
	return 0, err == nil, err
}

func (p *workerPolicy) again(context.Context, int, time.Time) bool { return false }

// waitLease: another attempt holds the lease → deferred by LeaseGrace
// without spending an attempt; on the last attempt the handler waits
// (bounded by the task's timeout) and claims again.
func (p *workerPolicy) waitLease(ctx context.Context) (bool, error) {
	if !p.a.last {
		p.w.m.deferred.WithLabelValues("lease").Inc()
		return false, asynqrt.Defer(p.w.cfg.LeaseGrace, "booking in progress elsewhere")
	}
	if err := p.w.cfg.Sleep(ctx, p.w.cfg.LeaseGrace); err != nil {
		return false, err
	}
	return true, nil
}

func (p *workerPolicy) final(failure) bool { return p.a.last }

func (p *workerPolicy) bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return bookkeeping(ctx)
}

// completed adds the note (not when answered from the Done mark: whoever
// set it added the note), writes the result, counts and publishes
// booking_completed. The note's queueing and the event each take a budget
// of their own (addNote, publish), not what the note's Cloud9 call left
// of the bookkeeping's.
func (p *workerPolicy) completed(ctx, _ context.Context, _ *attempt, v verdict) verdict {
	w, t := p.w, p.p
	noteAdded := false
	if v.kind == vBooked {
		noteAdded = w.addNote(ctx, t.OperationID, t.PatientGUID, t.Note)
	}
	w.writeResult(p.t, opResult{AppointmentGUID: v.guid, PatientGUID: t.PatientGUID, NoteAdded: noteAdded, Recovered: v.recovered})
	w.m.completed.WithLabelValues(contracts.OpSetAppointment).Inc()
	w.log.Info("queued booking completed", "operation_id", t.OperationID, "appointment_guid", v.guid, "attempt", p.a.attempt,
		"recovered", v.recovered)
	w.publish(ctx, contracts.BookingCompletedEvent{Event: contracts.EventBookingCompleted, OperationID: t.OperationID,
		OperationType: contracts.OpSetAppointment, AppointmentGUID: v.guid, PatientGUID: t.PatientGUID,
		ChildName: t.ChildName, StartTime: t.StartTime, Attempts: p.a.attempt, CompletedAt: contracts.JSTime(w.cfg.Now())})
	v.noteAdded = noteAdded
	return v
}

func (w *Worker) hold(p AppointmentTask) SlotHold {
	return SlotHold{LocationGUID: firstNonEmpty(p.LocationGUID, w.cfg.LocationGUID), StartTime: p.StartTime,
		ScheduleColumnGUID: p.ScheduleColumnGUID, SessionID: firstNonEmpty(p.SessionID, "patient:"+p.PatientGUID),
		PatientName: p.ChildName}
}

// bookkeepingTimeout bounds the worker's bookkeeping around a Cloud9 call
// (marks, reservation, note queueing, event).
const bookkeepingTimeout = 5 * time.Second

// bookkeeping is the worker's context of the work after (or instead of) a
// Cloud9 call: not cancelled with the run — when the call ended by the
// task's deadline the booking must still be marked — but bounded by
// bookkeepingTimeout.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
}
