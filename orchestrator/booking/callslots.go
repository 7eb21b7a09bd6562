package booking

import (
	"context"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// callSlotTTL is how long a call remembers its slots: longer than any call.
const callSlotTTL = DefaultDoneTTL

// CallSlotKey is the Marks key of a slot (start to the minute, column) in
// one call (sessionId ‖ uui).
func CallSlotKey(call, startTime, columnGUID string) string {
	return "call:" + strings.ToLower(strings.TrimSpace(call)) + "|" + slotKey(startTime, columnGUID)
}

// callChild is the record of b's child: the patient as the lease's owner.
func callChild(b booking) Lease {
	return Lease{Owner: strings.ToLower(strings.TrimSpace(b.PatientGUID)), ChildName: b.ChildName}
}

// sameCallChild reports whether a call's record names b's child.
func sameCallChild(rec, me Lease) bool {
	return rec.Owner == me.Owner && sameChild(rec.ChildName, me.ChildName)
}

// A call's slots: which child each slot was booked for in one call — the
// original's sessionSlotBookings (docs/reference/nodered-endpoints.md §1.2 step 1), keyed by the
// call's sessionId ‖ uui. It is what DUPLICATE_SLOT_BLOCKED ("already
// booked for another child in this call") answers from:
//
//   - A slot this call booked (or is booking, or queued) for another child
//     — another patientGUID (each child its own patient), or the same
//     parent patientGUID with another childName — is refused
//     DUPLICATE_SLOT_BLOCKED and never sent to Cloud9.
//   - The same child again goes on: the booking's own marks answer it
//     idempotently (the Done mark).
//   - A slot another call booked for this patient is not this call's: the
//     marks' "another child" verdict is answered as the original answers
//     it — it sends SetAppointment and Cloud9 refuses the taken slot — with
//     SLOT_NOT_AVAILABLE (offer another time), without the call.
//
// Unlike the original, a booking refused for good leaves the record, so
// the same child (or a sibling) may try the slot again; the record lives
// callSlotTTL.
//
// The record is a lease on CallSlotKey in the booking Marks: its owner is
// the patient, its childName the child, held callSlotTTL. Redis trouble
// fails open: the booking goes on under its marks alone (a sibling of the
// same patient is still refused DUPLICATE_SLOT_BLOCKED there).
//
// bookInCall is book guarded by the call's slot record. A
// request naming no call (no sessionId, no uui) is booked under its marks
// alone.
func (s *Service) bookInCall(ctx context.Context, b booking, deadline time.Time, rb *redisBudget) outcome {
	call := strings.TrimSpace(b.SessionID)
	if call == "" {
		return s.book(ctx, b, deadline, rb)
	}
	key, me := CallSlotKey(call, b.StartTime, b.ScheduleColumnGUID), callChild(b)
	rctx, cancel := rb.ctx(ctx)
	took, rec, err := s.d.Marks.Claim(rctx, key, me, callSlotTTL)
	cancel()
	switch {
	case err != nil:
		s.log.Warn("call slot record unavailable; booking under the booking marks alone", "err", err)
		return s.book(ctx, b, deadline, rb)
	case !took && rec.Owner != "" && !sameCallChild(rec, me):
		s.log.Info("slot already booked in this call for another child", "child", b.ChildName,
			"other_child", rec.ChildName, "other_patient", rec.Owner)
		return outcome{kind: kindDuplicate}
	}
	o := s.book(ctx, b, deadline, rb)
	switch o.kind {
	case kindBooked, kindQueued:
		return o // the slot stays this child's in this call
	case kindDuplicate:
		// The marks name another child of this patient, and this call's
		// record does not: another call booked the slot.
		s.log.Info("slot booked for another child of this patient in another call; answered as not available",
			"child", b.ChildName)
		o.kind, o.errType = kindFailed, contracts.BookingErrSlotNotAvailable
		o.errMsg = "the slot is booked in another call; not sent to Cloud9"
	}
	if took {
		bctx, cancel := rb.ctx(ctx)
		defer cancel()
		if _, err := s.d.Marks.Release(bctx, key, me.Owner); err != nil {
			s.log.Warn("call slot record: release failed (it expires by itself)", "err", err)
		}
	}
	return o
}
