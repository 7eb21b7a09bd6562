package booking

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// outcome kinds of one booking.
type outcomeKind int

const (
	kindBooked outcomeKind = iota
	kindQueued
	kindFailed
	kindReserved
	kindDuplicate // the slot is another child's (same patient)
)

// outcome is what happened to one booking on the sync path.
type outcome struct {
	kind outcomeKind

	apptGUID  string
	c9Result  string
	attempts  int
	retried   bool
	waited    time.Duration
	note      contracts.NoteResult
	noteAdded bool
	recovered bool

	opID        string
	queueType   string // _debug.error_type of the queued answer
	queueReason string
	lastErr     string

	errType  string // flowgate's class (flowgate_error_type)
	origType string // the answers' error_type when it is not errType (failure.answerType)
	c9Msg    string
	errMsg   string
	failText string
}

// CreateAppt is POST createAppt (docs/booking.md#createappt-step-by-step, docs/reference/nodered-endpoints.md §1.2): session-cache
// auto-injection → booking auth → input validation (a bookingToken may
// replace startTime and the GUIDs) → slot reservation → SetAppointment
// through the shared limiter within the sync budget, one retry after a
// rate-limit answer → queued otherwise. A success adds the note. Every
// outcome is a 200 answer; with children[] it books each child in order.
func (s *Service) CreateAppt(ctx context.Context, req contracts.CreateApptRequest) Answer {
	now := s.cfg.Now()
	if len(req.Children) > 0 {
		return s.createBatch(ctx, req, now)
	}
	// Redis work (session cache, slot cache, marks, reservation, queue) is
	// bounded by the sync budget on the wall clock (syncPolicy.bookkeeping).
	rb := newRedisBudget(s.cfg.SyncBudget)
	rctx, cancel := rb.ctx(ctx)
	defer cancel()
	patientGUID, token := strings.TrimSpace(req.PatientGUID), strings.TrimSpace(req.BookingAuthToken)
	sess := s.injectSession(rctx, &patientGUID, &token, firstNonEmpty(req.UUI, req.SessionID))
	method, rej := s.authorize(token, patientGUID, sess, now)
	if rej != nil {
		s.count("createAppt", "auth_rejected")
		return ok(*rej)
	}
	f := slotFields{bookingToken: req.BookingToken, startTime: req.StartTime, view: req.ScheduleViewGUID,
		column: req.ScheduleColumnGUID, apptType: req.AppointmentTypeGUID, minutes: int(req.Minutes), knownChair: true}
	b, bad := s.resolve(rctx, patientGUID, f, req.ChildName, req.Note, holder(req.SessionID, req.UUI))
	b.fromCall(req.SessionID, req.UUI)
	if bad != nil {
		s.count("createAppt", "validation_error")
		received := receivedParams(req)
		received["patientGUID"] = patientGUID
		v := contracts.NewApptValidation(bad.missing, bad.invalid, bad.msg, received, now)
		v.Debug.DefaultedFields = bad.defaulted
		return ok(v)
	}
	b.AuthMethod = method
	b.withCaller(sess)
	// The slot is an offered one, or nothing is reserved or sent (offer.go):
	// named by raw fields, or by a bookingToken (an unsigned reference, and
	// minutes sent beside one are the caller's).
	if o, fine := s.refuseUnoffered(ctx, &b, f.minutes > 0, strings.TrimSpace(f.bookingToken) != "", rb); !fine {
		return ok(s.render(b, o))
	}
	o := s.bookInCall(ctx, b, now.Add(s.cfg.callBudget()), rb)
	return ok(s.render(b, o))
}

// MalformedAppt answers a createAppt body that could not be decoded (not
// JSON, wrong types, too large) with the VALIDATION_ERROR shape.
func (s *Service) MalformedAppt(err error) Answer {
	s.count("createAppt", "validation_error")
	msg := "request body is not valid JSON"
	var ce *contracts.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	return ok(contracts.NewApptValidation(nil, nil, msg, nil, s.cfg.Now()))
}

// holder is who holds a reservation: the call's sessionId, else its uui.
func holder(sessionID, uui string) string { return firstNonEmpty(sessionID, uui) }

func (s *Service) hold(b booking) SlotHold {
	return SlotHold{LocationGUID: s.cfg.LocationGUID, StartTime: b.StartTime, ScheduleColumnGUID: b.ScheduleColumnGUID,
		SessionID: firstNonEmpty(b.SessionID, "patient:"+strings.ToLower(b.PatientGUID)), PatientName: b.ChildName}
}

// book makes one booking on the sync path (attempt.run with syncPolicy);
// deadline ends the sync budget on the service's clock, rb on the wall
// clock (budget.go).
//
// Only the holder of the identity's lease (Marks.Claim) checks Cloud9 and
// sends: a booking whose lease another attempt holds (a re-sent createAppt
// while the first call is still at Cloud9, another instance, the queued
// task of an earlier call) is answered queued with CheckFirst, never sent
// a second time; without the marks (Redis trouble) it is queued too.
func (s *Service) book(ctx context.Context, b booking, deadline time.Time, rb *redisBudget) outcome {
	h := s.hold(b)
	pol := &syncPolicy{s: s, deadline: deadline, rb: rb}
	v := s.engine().run(ctx, newAttempt(b, h, "sync", false, pol))
	o := outcome{attempts: v.attempts, retried: v.attempts > 1, waited: v.waited, c9Msg: v.f.msg, lastErr: v.f.msg}
	switch v.kind {
	case vBooked, vDone:
		o.kind, o.apptGUID, o.c9Result, o.recovered, o.note, o.noteAdded = kindBooked, v.guid, v.c9Result, v.recovered, v.note, v.noteAdded
		s.log.Info("appointment booked", "appointment_guid", v.guid, "attempts", v.attempts, "recovered", v.recovered)
	case vDuplicate:
		o.kind = kindDuplicate
	case vReserved:
		o.kind = kindReserved
	case vLater:
		bctx, cancel := pol.bookkeeping(ctx)
		defer cancel()
		return s.enqueue(bctx, b, h, o, v.checkFirst, v.queueType, v.reason, v.detail)
	default:
		o.kind, o.errType, o.failText = kindFailed, v.f.errType(), v.f.text()
		if at := v.f.answerType(); at != o.errType {
			o.origType = at
		}
	}
	return o
}

func (s *Service) engine() engine { return engine{d: s.d, cfg: s.cfg, log: s.log} }

// syncPolicy is the sync path's side of an attempt: limiter turns are
// waited for within the sync budget, a rate-limit answer is retried once
// after SyncRetryDelay if that fits, and whatever cannot be done now is
// queued (Service.enqueue); a failure other than a retryable one is
// answered as failed.
type syncPolicy struct {
	s        *Service
	deadline time.Time    // the budget's end on the service's clock
	rb       *redisBudget // the budget's end on the wall clock, for Redis
}

func (p *syncPolicy) reserve(ctx context.Context, h SlotHold) error {
	return p.s.d.Reservations.Reserve(ctx, h)
}

func (p *syncPolicy) turn(ctx context.Context, procedure string) (time.Duration, bool, error) {
	waited, fits := p.s.turn(ctx, p.rb, procedure, p.deadline)
	return waited, fits, nil
}

// again: the retry needs the delay and a limiter turn; when the next turn
// cannot come within the budget, queue now rather than sleep the delay for
// nothing (dead air for the caller).
func (p *syncPolicy) again(ctx context.Context, n int, lastTurn time.Time) bool {
	if n > p.s.cfg.SyncAttempts {
		return false
	}
	wait := p.s.cfg.SyncRetryDelay
	if sp, ok := p.s.d.Limiter.(Spacer); ok && !lastTurn.IsZero() {
		wait = max(wait, lastTurn.Add(sp.Spacing(cloud9.ProcSetAppointment)).Sub(p.s.cfg.Now()))
	}
	if !p.s.fits(wait, p.deadline) || p.s.cfg.Sleep(ctx, p.s.cfg.SyncRetryDelay) != nil {
		return false
	}
	p.rb.waited(p.s.cfg.SyncRetryDelay)
	return true
}

func (p *syncPolicy) waitLease(context.Context) (bool, error) { return false, nil }

func (p *syncPolicy) final(f failure) bool { return f.disposition() == dispOther }

// bookkeeping is the request's redisBudget (see budget.go).
func (p *syncPolicy) bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return p.rb.ctx(ctx)
}

// completed adds the note of a booking made now (docs/booking.md#createappt-step-by-step); one
// answered from its Done mark had its note added then.
func (p *syncPolicy) completed(ctx, _ context.Context, a *attempt, v verdict) verdict {
	v.note = contracts.NoteResult{Success: true, Skipped: true}
	if v.kind == vBooked {
		v.note, v.noteAdded = p.s.addNote(ctx, p, a.b.PatientGUID, a.b.Note)
	}
	return v
}

// addNote adds the note with SetPatientComment (docs/booking.md#createappt-step-by-step). A note
// that cannot be added now (limiter wait beyond the budget, rate limit,
// timeout) is queued as a booking:set_patient_comment task; a note failure
// never fails the booking.
func (s *Service) addNote(ctx context.Context, pol *syncPolicy, patientGUID, note string) (contracts.NoteResult, bool) {
	if note == "" {
		return contracts.NoteResult{Success: true, Skipped: true}, false
	}
	queue := func(reason string) (contracts.NoteResult, bool) {
		t := NoteTask{OperationID: NewOperationID("op-note", s.cfg.Now()), CreatedAt: s.cfg.Now().UTC(),
			PatientGUID: patientGUID, Note: note}
		bctx, cancel := pol.bookkeeping(ctx)
		defer cancel()
		if err := s.d.Queue.EnqueueNote(bctx, t); err != nil {
			s.log.Error("patient note could not be added nor queued", "patient_guid", patientGUID, "err", err)
			return contracts.NoteResult{Success: false, Error: reason}, false
		}
		return contracts.NoteResult{Success: false, Error: reason, Queued: true, OperationID: t.OperationID}, false
	}
	if ctx.Err() != nil { // the request ended with the booking call
		return queue("Timed out")
	}
	if _, fits := s.turn(ctx, pol.rb, cloud9.ProcSetPatientComment, pol.deadline); !fits {
		return queue("Rate limited")
	}
	_, result, err := s.d.Cloud9.SetPatientComment(ctx, patientGUID, note)
	if err == nil {
		return contracts.NoteResult{Success: true, Result: result}, true
	}
	f := classify(err)
	switch f.disposition() {
	case dispRateLimited, dispUncertain, dispUnavailable:
		return queue(f.text())
	}
	s.log.Warn("patient note refused by Cloud9", "patient_guid", patientGUID, "err", err)
	return contracts.NoteResult{Success: false, Error: f.text()}, false
}

// enqueue hands the booking to the async path and answers queued (ctx is
// the policy's bookkeeping context: also when the request has ended). The
// reservation is held for 300 s while it waits. If it cannot be queued the
// answer is a failure (TIMEOUT after an uncertain outcome, else EXCEPTION).
func (s *Service) enqueue(ctx context.Context, b booking, h SlotHold, o outcome, checkFirst bool, errType, reason, lastErr string) outcome {
	now := s.cfg.Now()
	t := AppointmentTask{OperationID: NewOperationID("op", now), CreatedAt: now.UTC(), Appointment: b.Appointment,
		LocationGUID: h.LocationGUID, SessionID: h.SessionID, CallSessionID: b.CallSessionID, UUI: b.CallUUI,
		CheckFirst: checkFirst, SyncAttempts: o.attempts, SyncError: lastErr, PatientName: b.PatientName, PhoneNumber: b.PhoneNumber}
	if err := s.d.Queue.EnqueueAppointment(ctx, t); err != nil {
		s.log.Error("booking could not be queued", "err", err, "reason", reason)
		o.kind, o.errMsg = kindFailed, "could not queue the booking" // the cause stays in the log
		o.errType = contracts.BookingErrException
		if checkFirst {
			o.errType = contracts.BookingErrTimeout // the appointment may exist: keep the mark and the hold
		} else {
			s.engine().release(ctx, h)
		}
		return o
	}
	if s.d.Reservations != nil {
		if err := s.d.Reservations.Confirm(ctx, h); err != nil {
			s.log.Warn("slot reservation: extend failed", "err", err)
		}
	}
	s.log.Info("booking queued", "operation_id", t.OperationID, "reason", reason, "sync_attempts", o.attempts)
	o.kind, o.opID, o.queueType, o.queueReason, o.lastErr = kindQueued, t.OperationID, errType, reason, lastErr
	return o
}

// render turns a single booking's outcome into its answer.
func (s *Service) render(b booking, o outcome) any {
	now := s.cfg.Now()
	switch o.kind {
	case kindBooked:
		s.count("createAppt", "booked")
		return contracts.ApptBookedResponse{
			Success: true, AppointmentGUID: o.apptGUID, Message: o.c9Result, NoteAdded: o.noteAdded,
			Debug: contracts.ApptBookedDebug{Cloud9Result: o.c9Result, Cloud9Status: "Success", Attempts: o.attempts,
				Retried: o.retried, SpacingWaitMS: o.waited.Milliseconds(), NoteResult: o.note, Timestamp: contracts.JSTime(now),
				ResponseTimestamp: contracts.JSTime(s.cfg.Now()),
				AuthMethod:        b.AuthMethod, RequestParams: *b.params(), Recovered: o.recovered},
			LLMGuidance: contracts.NewBookedGuidance(b.ChildName, b.StartTime, now),
		}
	case kindQueued:
		s.count("createAppt", "queued")
		return contracts.NewApptQueued(o.opID, o.queueType, o.queueReason, o.lastErr, o.attempts, b.params(), now)
	case kindReserved:
		s.count("createAppt", "slot_reserved")
		return contracts.NewApptSlotReserved(b.StartTime, "", now)
	case kindDuplicate:
		s.count("createAppt", "duplicate_slot")
		return contracts.NewApptDuplicateSlot(slotKey(b.StartTime, b.ScheduleColumnGUID), b.SessionID, now)
	}
	s.count("createAppt", "failed")
	return contracts.ApptFailedResponse{
		Success: false, Message: contracts.FailedMessage(o.errType, o.c9Msg),
		Debug: contracts.ApptFailedDebug{ErrorType: firstNonEmpty(o.origType, o.errType), FlowgateErrorType: o.errType,
			Cloud9Result: o.c9Msg, Cloud9Status: "Error",
			Cloud9ErrorMessage: o.c9Msg, Attempts: o.attempts, Retried: o.retried, SpacingWaitMS: o.waited.Milliseconds(),
			ErrorMessage: o.errMsg, RequestParams: b.params(), NoteResult: contracts.NoteResult{Skipped: true},
			Timestamp: contracts.JSTime(now), ResponseTimestamp: contracts.JSTime(s.cfg.Now())},
		LLMGuidance: contracts.NewFailedGuidance(o.errType, now),
	}
}
