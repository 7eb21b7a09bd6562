package bookingsvc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
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

	errType  string
	c9Msg    string
	errMsg   string
	slotKey  string
	failText string
}

// CreateAppt is POST createAppt (seed 000 §3–§5): session-cache
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
	patientGUID, token := strings.TrimSpace(req.PatientGUID), strings.TrimSpace(req.BookingAuthToken)
	sess := s.injectSession(ctx, &patientGUID, &token, firstNonEmpty(req.UUI, req.SessionID))
	method, rej := s.authorize(token, patientGUID, sess, now)
	if rej != nil {
		s.count("createAppt", "auth_rejected")
		return ok(*rej)
	}
	b, bad := s.resolve(patientGUID, slotFields{bookingToken: req.BookingToken, startTime: req.StartTime,
		view: req.ScheduleViewGUID, column: req.ScheduleColumnGUID, apptType: req.AppointmentTypeGUID,
		minutes: int(req.Minutes)}, req.ChildName, req.Note, holder(req.SessionID, req.UUI))
	if bad != nil {
		s.count("createAppt", "validation_error")
		received := receivedParams(req)
		received["patientGUID"] = patientGUID
		return ok(contracts.NewApptValidation(bad.missing, bad.invalid, bad.msg, received, now))
	}
	b.AuthMethod = method
	o := s.book(ctx, b, now.Add(s.cfg.SyncBudget))
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

// book makes one booking on the sync path; deadline ends the sync budget.
//
// Only the holder of the identity's lease (Marks.Claim) checks Cloud9 and
// sends: a booking whose lease another attempt holds (a re-sent createAppt
// while the first call is still at Cloud9, another instance, the queued
// task of an earlier call) is answered queued with CheckFirst, never sent
// a second time; without the marks (Redis trouble) it is queued too.
func (s *Service) book(ctx context.Context, b booking, deadline time.Time) outcome {
	key := IdentityKey(b.PatientGUID, b.StartTime, b.ScheduleColumnGUID)
	if rec, done, err := s.d.Marks.Completed(ctx, key); err != nil {
		s.log.Warn("booking marks unavailable", "err", err)
	} else if done && (!sameChild(rec.ChildName, b.ChildName) || s.stillBooked(ctx, b, key, rec, deadline)) {
		return s.fromDone(b, rec)
	}
	h := s.hold(b)
	if s.d.Reservations != nil {
		if err := s.d.Reservations.Reserve(ctx, h); errors.Is(err, ErrSlotReserved) {
			return outcome{kind: kindReserved}
		} else if err != nil {
			s.log.Warn("slot reservation unavailable; booking without it (fail open)", "err", err)
		}
	}
	owner := newOwner("sync")
	got, holder, err := s.d.Marks.Claim(ctx, key, Lease{Owner: owner, ChildName: b.ChildName}, s.cfg.leaseTTL())
	switch {
	case err != nil:
		s.log.Warn("booking marks unavailable; queueing the booking rather than sending it unguarded", "err", err)
		return s.enqueue(ctx, b, h, outcome{}, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain,
			"booking marks unavailable")
	case !got && !sameChild(holder.ChildName, b.ChildName):
		s.log.Warn("slot is being booked for another child of this patient", "child", b.ChildName, "other_child", holder.ChildName)
		return outcome{kind: kindDuplicate}
	case !got:
		s.log.Info("another attempt of this booking is in progress; queueing it with a check first", "holder", holder.Owner)
		return s.enqueue(ctx, b, h, outcome{}, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonInProgress,
			"another attempt of this booking is in progress")
	}
	return s.bookClaimed(ctx, b, key, owner, h, deadline)
}

// stillBooked asks Cloud9 whether the Done mark's appointment still exists
// and is not cancelled before the sync path answers from it. Gone → the
// mark is forgotten and the booking is made again. When Cloud9 cannot be
// asked within the budget the mark (at most DoneTTL old) is trusted.
func (s *Service) stillBooked(ctx context.Context, b booking, key string, rec DoneRecord, deadline time.Time) bool {
	if _, fits := s.turn(ctx, ProcGetAppointments, deadline); !fits {
		s.log.Info("cannot verify the completed booking within the budget; answering from its mark", "appointment_guid", rec.AppointmentGUID)
		return true
	}
	list, err := s.d.Cloud9.GetAppointmentListByPatient(ctx, b.PatientGUID)
	if err == nil && len(list) == 0 { // Cloud9 has answered empty lists under load
		list, err = s.d.Cloud9.GetAppointmentListByPatient(ctx, b.PatientGUID)
	}
	if err != nil {
		s.log.Warn("cannot verify the completed booking; answering from its mark", "appointment_guid", rec.AppointmentGUID, "err", err)
		return true
	}
	for _, a := range list {
		if strings.EqualFold(a.AppointmentGUID, rec.AppointmentGUID) && !strings.Contains(strings.ToLower(a.Status), "cancel") {
			return true
		}
	}
	s.log.Warn("the completed booking's appointment is gone or cancelled; booking it again", "appointment_guid", rec.AppointmentGUID)
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.d.Marks.Forget(bctx, key, rec.AppointmentGUID); err != nil {
		s.log.Warn("booking marks: could not forget the cancelled booking", "err", err)
	}
	return false
}

// fromDone answers a booking from its Done mark: the same child → the
// booking as made (idempotent repeat); another child of the same patient
// (parent-as-patient siblings on one slot) → DUPLICATE_SLOT_BLOCKED, never
// the other child's appointment as this one's.
func (s *Service) fromDone(b booking, rec DoneRecord) outcome {
	if !sameChild(rec.ChildName, b.ChildName) {
		s.log.Warn("slot already booked for another child of this patient", "child", b.ChildName, "other_child", rec.ChildName,
			"appointment_guid", rec.AppointmentGUID)
		return outcome{kind: kindDuplicate}
	}
	s.log.Info("booking already completed; answering it again without calling Cloud9", "appointment_guid", rec.AppointmentGUID)
	return outcome{kind: kindBooked, apptGUID: rec.AppointmentGUID, c9Result: "Appointment GUID Added: " + rec.AppointmentGUID,
		recovered: true, note: contracts.NoteResult{Success: true, Skipped: true}}
}

// bookClaimed is book with the identity's lease held by owner. Every
// return either hands the lease on (Done), keeps it for LeaseGrace after
// an uncertain outcome, or releases it.
func (s *Service) bookClaimed(ctx context.Context, b booking, key, owner string, h SlotHold, deadline time.Time) outcome {
	var o outcome
	// The attempt that held the lease may have just completed it.
	if rec, done, err := s.d.Marks.Completed(ctx, key); err == nil && done {
		s.dropLease(ctx, key, owner)
		return s.fromDone(b, rec)
	}
	// A mark left by an earlier attempt whose outcome is unknown: ask Cloud9
	// before sending again.
	inflight, err := s.d.Marks.InFlight(ctx, key)
	if err != nil {
		s.log.Warn("booking marks unavailable; checking Cloud9 before booking", "err", err)
		inflight = true
	}
	if inflight {
		waited, fits := s.turn(ctx, ProcGetAppointments, deadline)
		o.waited += waited
		if !fits {
			s.dropLease(ctx, key, owner)
			return s.enqueue(ctx, b, h, o, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain,
				"earlier attempt's outcome unknown")
		}
		guid, err := findExisting(ctx, s.d.Cloud9, b.PatientGUID, b.StartTime, b.ScheduleColumnGUID)
		if err != nil {
			s.dropLease(ctx, key, owner)
			return s.enqueue(ctx, b, h, o, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain,
				"earlier attempt's outcome unknown")
		}
		if guid != "" {
			o.recovered = true
			return s.completed(ctx, b, key, owner, h, guid, "Appointment GUID Added: "+guid, o, deadline)
		}
		s.clearMark(ctx, key, owner)
	}

	rateLimited := false
	var lastTurn time.Time
	for attempt := 1; attempt <= s.cfg.SyncAttempts; attempt++ {
		if attempt > 1 {
			// The retry needs the delay and a limiter turn; when the next
			// turn cannot come within the budget, queue now rather than
			// sleep the delay for nothing (dead air for the caller).
			wait := s.cfg.SyncRetryDelay
			if sp, ok := s.d.Limiter.(Spacer); ok && !lastTurn.IsZero() {
				wait = max(wait, lastTurn.Add(sp.Spacing(ProcSetAppointment)).Sub(s.cfg.Now()))
			}
			if !s.fits(wait, deadline) || s.cfg.Sleep(ctx, s.cfg.SyncRetryDelay) != nil {
				break
			}
		}
		waited, fits := s.turn(ctx, ProcSetAppointment, deadline)
		o.waited += waited
		lastTurn = s.cfg.Now()
		if !fits {
			if !rateLimited {
				s.dropLease(ctx, key, owner)
				return s.enqueue(ctx, b, h, o, false, contracts.BookingErrRateLimitedQueued, contracts.QueueReasonLimiterWait, "Rate limited")
			}
			break
		}
		// Never send without holding the lease and having written the mark.
		if held, err := s.d.Marks.Begin(ctx, key, owner, s.cfg.leaseTTL()); err != nil || !held {
			s.log.Warn("booking marks: could not mark the call in flight; queueing it", "lease_held", held, "err", err)
			s.dropLease(ctx, key, owner)
			return s.enqueue(ctx, b, h, o, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonInProgress,
				"could not mark the booking in flight")
		}
		o.attempts, o.retried = attempt, attempt > 1
		guid, result, err := s.d.Cloud9.SetAppointment(ctx, AppointmentInput{PatientGUID: b.PatientGUID, StartTime: b.StartTime,
			ScheduleViewGUID: b.ScheduleViewGUID, ScheduleColumnGUID: b.ScheduleColumnGUID,
			AppointmentTypeGUID: b.AppointmentTypeGUID, Minutes: b.Minutes})
		if err == nil {
			return s.completed(ctx, b, key, owner, h, guid, result, o, deadline)
		}
		f := classify(err)
		o.lastErr, o.c9Msg = f.msg, f.msg
		switch f.disposition() {
		case dispRateLimited:
			s.clearMark(ctx, key, owner)
			rateLimited = true
			s.log.Info("SetAppointment rate limited", "attempt", attempt, "msg", f.msg)
			continue
		case dispUncertain:
			// The mark stays: whoever runs this booking next checks first;
			// the lease stays a little, for a late commit to land.
			s.log.Warn("SetAppointment outcome uncertain; queueing with a check first", "err", err)
			bctx, cancel := bookkeeping(ctx)
			if _, err := s.d.Marks.Extend(bctx, key, owner, s.cfg.LeaseGrace); err != nil {
				s.log.Warn("booking marks: could not keep the lease", "err", err)
			}
			cancel()
			return s.enqueue(ctx, b, h, o, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, f.text())
		case dispUnavailable:
			s.clearMark(ctx, key, owner)
			s.dropLease(ctx, key, owner)
			return s.enqueue(ctx, b, h, o, false, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUnavailable, f.text())
		default:
			s.clearMark(ctx, key, owner)
			held := s.dropLease(ctx, key, owner)
			if f.class == ClassSlotNotAvailable {
				if lost, ok := s.lostToItself(ctx, b, key, h, held, o, f); ok {
					return lost
				}
			}
			s.release(ctx, h)
			if f.class == ClassSlotNotAvailable {
				bctx, cancel := bookkeeping(ctx)
				s.invalidate(bctx, b)
				cancel()
			}
			o.kind, o.errType, o.failText = kindFailed, f.class, f.text()
			return o
		}
	}
	s.dropLease(ctx, key, owner)
	return s.enqueue(ctx, b, h, o, false, contracts.BookingErrRateLimitedQueued, contracts.QueueReasonRateLimited, o.lastErr)
}

// lostToItself handles SLOT_NOT_AVAILABLE when the slot may be this very
// booking's: another attempt of it completed (Done mark) → answered from
// that; this attempt's lease lapsed during the call (another attempt may
// be sending it) → queued with a check first. Either way the reservation
// is not released: it is the other attempt's too.
func (s *Service) lostToItself(ctx context.Context, b booking, key string, h SlotHold, held bool, o outcome, f failure) (outcome, bool) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	if rec, done, err := s.d.Marks.Completed(bctx, key); err == nil && done {
		s.log.Info("slot refused, but it is booked under this identity", "appointment_guid", rec.AppointmentGUID)
		return s.fromDone(b, rec), true
	}
	if !held {
		s.log.Warn("slot refused after this attempt's lease lapsed; queueing with a check first")
		return s.enqueue(ctx, b, h, o, true, contracts.BookingErrTimeoutQueued, contracts.QueueReasonUncertain, f.text()), true
	}
	return outcome{}, false
}

// bookkeepingTimeout bounds the bookkeeping around a Cloud9 call (marks,
// reservation, enqueue, note queueing).
const bookkeepingTimeout = 5 * time.Second

// bookkeeping is the context of the work after (or instead of) a Cloud9
// call: not cancelled with the request — when the call ended by the
// request's deadline (the uncertain case) the booking must still be
// marked and queued — but bounded by bookkeepingTimeout.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
}

func (s *Service) clearMark(ctx context.Context, key, owner string) {
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.d.Marks.Clear(ctx, key, owner); err != nil {
		s.log.Warn("booking marks: clear failed", "err", err)
	}
}

// dropLease releases owner's lease; held says whether owner still held it.
func (s *Service) dropLease(ctx context.Context, key, owner string) bool {
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	held, err := s.d.Marks.Release(ctx, key, owner)
	if err != nil {
		s.log.Warn("booking marks: lease release failed (it expires by itself)", "err", err)
	}
	return held
}

// invalidate drops the booking's slot from the slot source's cache.
func (s *Service) invalidate(ctx context.Context, b booking) {
	invalidateSlot(ctx, s.d.Slots, SlotRef{StartTime: b.StartTime, ScheduleViewGUID: b.ScheduleViewGUID,
		ScheduleColumnGUID: b.ScheduleColumnGUID, AppointmentTypeGUID: b.AppointmentTypeGUID, Minutes: b.Minutes}, s.log)
}

// invalidateSlot drops a taken slot from src's cache when src keeps one
// (see SlotInvalidator); failure only means the slot is offered a little
// longer (Cloud9 still refuses it).
func invalidateSlot(ctx context.Context, src SlotSource, r SlotRef, log *slog.Logger) {
	inv, ok := src.(SlotInvalidator)
	if !ok {
		return
	}
	if err := inv.Invalidate(ctx, r); err != nil {
		log.Warn("slot cache: could not drop the taken slot (it is offered until the list is refreshed)", "err", err)
	}
}

func (s *Service) release(ctx context.Context, h SlotHold) {
	if s.d.Reservations == nil {
		return
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.d.Reservations.Release(ctx, h); err != nil {
		s.log.Warn("slot reservation: release failed (it expires by itself)", "err", err)
	}
}

func (s *Service) confirm(ctx context.Context, h SlotHold) {
	if s.d.Reservations == nil {
		return
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.d.Reservations.Confirm(ctx, h); err != nil {
		s.log.Warn("slot reservation: extend failed", "err", err)
	}
}

// completed records a made booking: done mark (the lease released),
// reservation kept for 300 s, note added.
func (s *Service) completed(ctx context.Context, b booking, key, owner string, h SlotHold, guid, result string, o outcome, deadline time.Time) outcome {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := s.d.Marks.Done(bctx, key, owner, DoneRecord{AppointmentGUID: guid, ChildName: b.ChildName}); err != nil {
		s.log.Warn("booking marks: could not record the completed booking", "appointment_guid", guid, "err", err)
	}
	s.confirm(ctx, h)
	// The booked slot stays in the slot cache: the same createAppt asked
	// again must still decode its bookingToken to be answered from the Done
	// mark; other sessions do not see it while the reservation holds it.
	o.kind, o.apptGUID = kindBooked, guid
	o.c9Result = firstNonEmpty(result, "Appointment GUID Added: "+guid)
	o.note, o.noteAdded = s.addNote(ctx, b.PatientGUID, b.Note, deadline)
	s.log.Info("appointment booked", "appointment_guid", guid, "attempts", o.attempts, "recovered", o.recovered)
	return o
}

// addNote adds the note with SetPatientComment (seed 000 §4.3). A note
// that cannot be added now (limiter wait beyond the budget, rate limit,
// timeout) is queued as a booking:set_patient_comment task; a note failure
// never fails the booking.
func (s *Service) addNote(ctx context.Context, patientGUID, note string, deadline time.Time) (contracts.NoteResult, bool) {
	if note == "" {
		return contracts.NoteResult{Success: true, Skipped: true}, false
	}
	queue := func(reason string) (contracts.NoteResult, bool) {
		t := NoteTask{OperationID: NewOperationID("op-note", s.cfg.Now()), CreatedAt: s.cfg.Now().UTC(),
			PatientGUID: patientGUID, Note: note}
		bctx, cancel := bookkeeping(ctx)
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
	if _, fits := s.turn(ctx, ProcSetPatientComment, deadline); !fits {
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

// enqueue hands the booking to the async path and answers queued (on the
// bookkeeping context: also when the request has ended). The
// reservation is held for 300 s while it waits. If it cannot be queued the
// answer is a failure (TIMEOUT after an uncertain outcome, else EXCEPTION).
func (s *Service) enqueue(ctx context.Context, b booking, h SlotHold, o outcome, checkFirst bool, errType, reason, lastErr string) outcome {
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	now := s.cfg.Now()
	t := AppointmentTask{OperationID: NewOperationID("op", now), CreatedAt: now.UTC(), PatientGUID: b.PatientGUID,
		StartTime: b.StartTime, ScheduleViewGUID: b.ScheduleViewGUID, ScheduleColumnGUID: b.ScheduleColumnGUID,
		AppointmentTypeGUID: b.AppointmentTypeGUID, Minutes: b.Minutes, ChildName: b.ChildName, Note: b.Note,
		LocationGUID: h.LocationGUID, SessionID: h.SessionID, CheckFirst: checkFirst, SyncAttempts: o.attempts, SyncError: lastErr}
	if err := s.d.Queue.EnqueueAppointment(ctx, t); err != nil {
		s.log.Error("booking could not be queued", "err", err, "reason", reason)
		o.kind, o.errMsg = kindFailed, "could not queue the booking" // the cause stays in the log
		o.errType = contracts.BookingErrException
		if checkFirst {
			o.errType = contracts.BookingErrTimeout // the appointment may exist: keep the mark and the hold
		} else {
			s.release(ctx, h)
		}
		return o
	}
	s.confirm(ctx, h)
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
				AuthMethod: b.AuthMethod, RequestParams: *b.params(), Recovered: o.recovered},
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
		Debug: contracts.ApptFailedDebug{ErrorType: o.errType, Cloud9Result: o.c9Msg, Cloud9Status: "Error",
			Cloud9ErrorMessage: o.c9Msg, Attempts: o.attempts, Retried: o.retried, SpacingWaitMS: o.waited.Milliseconds(),
			ErrorMessage: o.errMsg, RequestParams: b.params(), Timestamp: contracts.JSTime(now)},
		LLMGuidance: contracts.NewFailedGuidance(o.errType),
	}
}

// findExisting asks Cloud9 for the patient's appointments and returns the
// GUID of one at the same start (to the minute) and column (when Cloud9
// says which), not cancelled; "" when there is none. Cloud9 has answered
// empty lists under load, so an empty answer is asked again once.
func findExisting(ctx context.Context, c Cloud9, patientGUID, startTime, columnGUID string) (string, error) {
	list, err := c.GetAppointmentListByPatient(ctx, patientGUID)
	if err == nil && len(list) == 0 {
		list, err = c.GetAppointmentListByPatient(ctx, patientGUID)
	}
	if err != nil {
		return "", err
	}
	want, ok := contracts.ParseStartTime(startTime)
	for _, a := range list {
		if strings.Contains(strings.ToLower(a.Status), "cancel") {
			continue
		}
		if a.ScheduleColumnGUID != "" && !strings.EqualFold(a.ScheduleColumnGUID, columnGUID) {
			continue
		}
		got, gok := contracts.ParseStartTime(a.StartTime)
		switch {
		case ok && gok && got.Truncate(time.Minute).Equal(want.Truncate(time.Minute)):
			return a.AppointmentGUID, nil
		case (!ok || !gok) && strings.EqualFold(strings.TrimSpace(a.StartTime), strings.TrimSpace(startTime)):
			return a.AppointmentGUID, nil
		}
	}
	return "", nil
}
