package booking

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// opError is a queued operation's failed attempt as its handler returns
// it: the class (the answers' error_type), the text asynq keeps as
// lastError, and whether a retry could change it.
type opError struct {
	class     string
	text      string
	skip      bool // no retry changes it: archived at once (asynq.SkipRetry)
	uncertain bool // the appointment or patient may exist after all
}

func (e *opError) Error() string {
	if e.skip {
		return e.text + ": " + asynq.SkipRetry.Error()
	}
	return e.text
}

func (e *opError) Unwrap() error {
	if e.skip {
		return asynq.SkipRetry
	}
	return nil
}

// failedErr is the opError of a failure the attempt ended on.
func failedErr(f failure, skip bool) *opError {
	return &opError{class: f.errType(), text: f.text(), skip: skip, uncertain: f.uncertain}
}

// finalOf reads a final error: an opError as it is; the task's deadline (a
// Cloud9 call may have been under way) as an uncertain TIMEOUT; anything
// else as an uncertain UNKNOWN — flowgate cannot tell whether it acted.
func finalOf(err error) opError {
	var oe *opError
	switch {
	case errors.As(err, &oe):
		return *oe
	case errors.Is(err, context.DeadlineExceeded):
		return opError{class: contracts.BookingErrTimeout, text: err.Error(), uncertain: true}
	}
	return opError{class: contracts.BookingErrUnknown, text: err.Error(), uncertain: true}
}

// subject is whom a queued operation is for, read from its payload: what
// queue-status lists and booking_failed names.
type subject struct {
	opID        string
	opType      string // contracts.OpSetAppointment | OpSetPatient
	patientGUID string
	patientName string
	childName   string
	phone       string
	startTime   string
	created     time.Time
	// The call that queued it, as its request named it (queue-status'
	// lookup by sessionId / uui; empty when not sent).
	callSessionID, callUUI string
}

// subjectOf reads the subject of a task; ok is false for tasks that are not
// booking operations (or whose payload cannot be read).
func subjectOf(typ string, payload []byte) (subject, bool) {
	switch typ {
	case TypeSetAppointment:
		var p AppointmentTask
		if json.Unmarshal(payload, &p) != nil {
			return subject{}, false
		}
		return subject{opID: p.OperationID, opType: contracts.OpSetAppointment, patientGUID: p.PatientGUID,
			patientName: p.PatientName, childName: p.ChildName, phone: p.PhoneNumber, startTime: p.StartTime,
			created: p.CreatedAt, callSessionID: p.CallSessionID, callUUI: p.UUI}, true
	case TypeSetPatient:
		var p PatientTask
		if json.Unmarshal(payload, &p) != nil {
			return subject{}, false
		}
		return subject{opID: p.OperationID, opType: contracts.OpSetPatient,
			patientName: p.FirstName + " " + p.LastName, phone: p.Phone, created: p.CreatedAt,
			callSessionID: p.SessionID, callUUI: p.UUI}, true
	case TypeConsultation: // the family's patients: its appointments are tasks of their own
		var p ConsultationTask
		if json.Unmarshal(payload, &p) != nil {
			return subject{}, false
		}
		return subject{opID: p.OperationID, opType: contracts.OpSetPatient, patientGUID: p.ParentGUID,
			patientName: p.Parent.FirstName + " " + p.Parent.LastName, phone: p.Parent.Phone, created: p.CreatedAt,
			callSessionID: p.Parent.SessionID, callUUI: p.Parent.UUI}, true
	}
	return subject{}, false
}

// A queued operation that fails for good is never silent. Its handler
// (booking:set_appointment, booking:set_patient, booking:consultation)
// runs inside failures: an
// error that ends the task (asynqrt.Final: a refusal no retry
// changes, or the last attempt used) is counted in
// flowgate_booking_failed_total, written as the task's result (queue-status
// shows errorType, failedAt and nextStep), and published as booking_failed
// on the booking events channel and BOOKING_EVENTS_WEBHOOK, naming the
// caller (patient, child, phone when known, start time) and what the
// practice should do (contracts.FailedNextStep). The error itself goes on
// unchanged: asynq archives the task, the runtime writes the dead-letter
// record.
//
// failures wraps the handler of a queued operation (see above).
func (w *Worker) failures(h asynq.HandlerFunc) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		err := h(ctx, t)
		if err != nil && asynqrt.Final(ctx, err) {
			w.failedForGood(ctx, t, err)
		}
		return err
	}
}

// failedForGood reports a task that failed for good: metric, result, event.
func (w *Worker) failedForGood(ctx context.Context, t *asynq.Task, err error) {
	sub, ok := subjectOf(t.Type(), t.Payload())
	if !ok {
		return // not a booking (a payload that cannot be read): the dead-letter record keeps it
	}
	f := finalOf(err)
	now := w.cfg.Now()
	next := contracts.FailedNextStep(sub.opType, f.class, f.uncertain)
	if rw := t.ResultWriter(); rw != nil {
		b, _ := json.Marshal(opResult{ErrorType: f.class, NextStep: next, FailedAt: now.UnixMilli()})
		if _, werr := rw.Write(b); werr != nil { // past the task's deadline: queue-status falls back
			w.log.Warn("the failed operation's result could not be written", "operation_id", sub.opID, "err", werr)
		}
	}
	w.reportFailed(ctx, sub, f, next, now)
}

// reportFailed counts one operation that failed for good (a task, or a
// consultation's child whose patient Cloud9 refused), publishes
// booking_failed with the practice's next step and logs it.
func (w *Worker) reportFailed(ctx context.Context, sub subject, f opError, next string, now time.Time) {
	w.m.failed.WithLabelValues(sub.opType, f.class).Inc()
	ev := contracts.BookingCompletedEvent{Event: contracts.EventBookingFailed, OperationID: sub.opID, OperationType: sub.opType,
		PatientGUID: sub.patientGUID, PatientName: sub.patientName, ChildName: sub.childName, StartTime: sub.startTime,
		PhoneNumber: sub.phone, Attempts: currentAttempt(ctx).attempt, CompletedAt: contracts.JSTime(now),
		FailedAt: contracts.JSTime(now), ErrorType: f.class, Reason: f.text, NextStep: next}
	w.publish(ctx, ev) // also when the run ended by its deadline
	w.log.Warn("queued operation failed for good; booking_failed published", "operation_id", sub.opID,
		"operation_type", sub.opType, "class", f.class, "err", f.text, "next_step", next)
}

// failedStatus fills a failed operation's errorType, failedAt and nextStep
// from its result; without one (archived past its deadline, or before
// flowgate wrote one) the next step is the cautious one, and failedAt
// asynq's own.
func failedStatus(op *contracts.QueueOperation, r opResult, hasResult bool, lastFailed time.Time) {
	if hasResult && r.NextStep != "" {
		op.ErrorType, op.NextStep = r.ErrorType, r.NextStep
	} else {
		op.NextStep = contracts.FailedNextStep(op.OperationType, "", true)
	}
	switch {
	case hasResult && r.FailedAt > 0:
		op.FailedAt = contracts.JSTime(time.UnixMilli(r.FailedAt))
	case !lastFailed.IsZero():
		op.FailedAt = contracts.JSTime(lastFailed)
	}
}
