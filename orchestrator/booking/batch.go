package booking

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// createBatch books children[] one after another through the same path as
// a single booking (docs/reference/nodered-endpoints.md §1.2 Batch). The children share one sync
// budget: once it is spent, the remaining rate-limited children are queued
// at once, so the caller never waits more than the call budget (Config.callBudget) for the limiter.
//
// At most maxGroupedPatients (10) children: more is a VALIDATION_ERROR.
//
// Auth: the token (or session) is checked once against the primary
// patientGUID (the request's, else the first child's); with parent-as-
// patient every child is booked under it. A child naming another patient
// is refused as BOOKING_AUTH_GUID_MISMATCH unless the mode is legacy
// (Node-RED checked only the top-level GUID and booked any child). A slot
// (start, column) named by an earlier child, or booked earlier in the same
// call for another child (bookInCall, callslots.go), is refused as
// DUPLICATE_SLOT_BLOCKED (Node-RED had no batch slot dedup). Each child's
// results[] day/date/time is the original's text (contracts.VoiceStartTime).
func (s *Service) createBatch(ctx context.Context, req contracts.CreateApptRequest, now time.Time) Answer {
	if len(req.Children) > maxGroupedPatients {
		s.count("createAppt", "validation_error")
		return ok(contracts.NewApptValidation(nil, []string{"children"},
			fmt.Sprintf("at most %d children per request, got %d", maxGroupedPatients, len(req.Children)),
			map[string]any{"children": len(req.Children)}, now))
	}
	primary, token := strings.TrimSpace(req.PatientGUID), strings.TrimSpace(req.BookingAuthToken)
	if primary == "" {
		for _, c := range req.Children {
			if g := strings.TrimSpace(c.PatientGUID); g != "" {
				primary = g
				break
			}
		}
	}
	rb := newRedisBudget(s.cfg.SyncBudget) // one budget for the batch (budget.go)
	rctx, cancel := rb.ctx(ctx)
	defer cancel()
	sess := s.injectSession(rctx, &primary, &token, firstNonEmpty(req.UUI, req.SessionID))
	method, rej := s.authorize(token, primary, sess, now)
	if rej != nil {
		s.count("createAppt", "auth_rejected")
		return ok(*rej)
	}
	deadline := now.Add(s.cfg.callBudget())
	results := make([]contracts.ApptBatchChild, 0, len(req.Children))
	seen := map[string]bool{} // slot keys named by earlier children
	for _, c := range req.Children {
		guid := firstNonEmpty(c.PatientGUID, primary)
		f := slotFields{bookingToken: c.BookingToken, startTime: c.StartTime, view: c.ScheduleViewGUID,
			column: c.ScheduleColumnGUID, apptType: c.AppointmentTypeGUID, minutes: int(c.Minutes), knownChair: true}
		b, bad := s.resolve(rctx, guid, f, c.ChildName, c.Note, holder(req.SessionID, req.UUI))
		b.fromCall(req.SessionID, req.UUI)
		res := batchChild(b)
		switch {
		case bad != nil:
			res.ErrorType = contracts.BookingErrValidation
			res.Message = contracts.NewApptValidation(bad.missing, bad.invalid, bad.msg, nil, now).Message
		case method != contracts.AuthMethodLegacy && !strings.EqualFold(guid, primary):
			res.ErrorType = contracts.BookingAuthGUIDMismatch
			res.Message = contracts.AuthMessage(contracts.BookingAuthGUIDMismatch)
		case seen[slotKey(b.StartTime, b.ScheduleColumnGUID)]:
			// Two children in one chair at one time: the later one is
			// refused, never answered with the earlier one's appointment.
			res.ErrorType, res.Message = contracts.BookingErrDuplicateSlot, contracts.DuplicateSlotMessage
		default:
			b.AuthMethod = method
			b.withCaller(sess)
			seen[slotKey(b.StartTime, b.ScheduleColumnGUID)] = true
			if o, fine := s.refuseUnoffered(ctx, &b, f.minutes > 0, strings.TrimSpace(f.bookingToken) != "", rb); !fine { // as a single createAppt (offer.go)
				s.fillBatchChild(&res, o)
				break
			}
			s.fillBatchChild(&res, s.bookInCall(ctx, b, deadline, rb))
		}
		results = append(results, res)
	}
	resp := contracts.NewApptBatch(results, s.cfg.Now())
	s.count("createAppt", "batch")
	return ok(resp)
}

func batchChild(b booking) contracts.ApptBatchChild {
	sp := contracts.VoiceStartTime(b.StartTime)
	return contracts.ApptBatchChild{ChildName: b.ChildName, StartTime: b.StartTime, Date: sp.Date, Time: sp.Time, Day: sp.Day}
}

func (s *Service) fillBatchChild(res *contracts.ApptBatchChild, o outcome) {
	res.Attempts = o.attempts
	switch o.kind {
	case kindBooked:
		res.Success, res.AppointmentGUID, res.Message, res.NoteAdded = true, o.apptGUID, o.c9Result, o.noteAdded
	case kindQueued:
		res.Queued, res.OperationID, res.Message = true, o.opID, contracts.QueuedMessage
		res.ErrorType = o.queueType
	case kindReserved:
		r := contracts.NewApptSlotReserved(res.StartTime, "", s.cfg.Now())
		res.ErrorType, res.Message = contracts.BookingErrSlotReserved, r.Message
	case kindDuplicate:
		res.ErrorType, res.Message = contracts.BookingErrDuplicateSlot, contracts.DuplicateSlotMessage
	default:
		res.ErrorType, res.Message = firstNonEmpty(o.origType, o.errType), contracts.FailedMessage(o.errType, o.c9Msg)
		if o.origType != "" {
			res.FlowgateErrorType = o.errType
		}
	}
}
