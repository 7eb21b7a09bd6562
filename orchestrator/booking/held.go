package booking

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// HeldBooking is a booking of a slot its caller already holds as
// SessionID's reservation: the web face's /book of a Cloud9-sourced
// appointment type, whose web hold was adopted as that reservation
// (reservation.Store.Adopt). The web face checks the patient first
// (AuthorizeHeld); there is no session cache and no note.
type HeldBooking struct {
	Appointment        // the patient and the slot as Cloud9 lists it
	SessionID   string // the reservation's holder
}

// HeldOutcome is a HeldBooking made in Cloud9 (AppointmentGUID) or queued
// for the async path (OperationID, QueueReason).
type HeldOutcome struct {
	AppointmentGUID string
	OperationID     string
	QueueReason     string
	Recovered       bool // found already made (Done mark, or Cloud9's list after an uncertain attempt)
	Attempts        int  // SetAppointment calls made now
}

// Queued reports whether the booking was queued.
func (o HeldOutcome) Queued() bool { return o.OperationID != "" }

// BookHeld makes hb on the sync path — createAppt's steps 4–6 for one
// booking, without the note: the identity's Done mark (a booking made
// already is answered without calling Cloud9), the reservation (Reserve
// finds SessionID's own hold), the identity's lease (one attempt sends),
// SetAppointment through the shared limiter within SyncBudget, and the
// durable queue when the budget runs out or the outcome is uncertain (the
// reservation is then kept while the task waits).
//
// The error is a *contracts.Error with details.errorType (the createAppt
// error_type): invalid (400, details.fields) for a booking that cannot be
// made as named; conflict (409, details.reason "slot_taken") when another
// holder has the slot or Cloud9 refused it (SLOT_RESERVED,
// SLOT_NOT_AVAILABLE, DUPLICATE_SLOT_BLOCKED); not_found (404, field
// patientGUID) when Cloud9 does not know the patient; unavailable (503)
// when Cloud9 failed otherwise and the booking was not queued. A refusal
// by Cloud9 released the reservation.
func (s *Service) BookHeld(ctx context.Context, hb HeldBooking) (HeldOutcome, error) {
	const op = "booking.BookHeld"
	now := s.cfg.Now()
	rb := newRedisBudget(s.cfg.SyncBudget)
	a := hb.Appointment
	a.PatientGUID, a.StartTime = strings.TrimSpace(a.PatientGUID), strings.TrimSpace(a.StartTime)
	a.ScheduleViewGUID, a.ScheduleColumnGUID = strings.TrimSpace(a.ScheduleViewGUID), strings.TrimSpace(a.ScheduleColumnGUID)
	a.AppointmentTypeGUID, a.ChildName, a.Note = strings.TrimSpace(a.AppointmentTypeGUID), strings.TrimSpace(a.ChildName), ""
	b := booking{Appointment: a, SessionID: strings.TrimSpace(hb.SessionID)}
	if missing, bad := s.val.check(b.Appointment); len(missing)+len(bad) > 0 {
		s.count("bookHeld", "validation_error")
		fields := append(missing, bad...)
		e := contracts.Errorf(contracts.CodeInvalid, "the booking cannot be made as named: %s", strings.Join(fields, ", "))
		e.Op, e.Details = op, map[string]any{"fields": fields, "errorType": contracts.BookingErrValidation}
		if len(fields) == 1 {
			e.Details["field"] = fields[0]
		}
		return HeldOutcome{}, e
	}
	o := s.book(ctx, b, now.Add(s.cfg.SyncBudget), rb)
	switch o.kind {
	case kindBooked:
		s.count("bookHeld", "booked")
		return HeldOutcome{AppointmentGUID: o.apptGUID, Recovered: o.recovered, Attempts: o.attempts}, nil
	case kindQueued:
		s.count("bookHeld", "queued")
		return HeldOutcome{OperationID: o.opID, QueueReason: o.queueReason, Attempts: o.attempts}, nil
	case kindReserved:
		s.count("bookHeld", "slot_reserved")
		return HeldOutcome{}, heldRefusal(op, contracts.CodeConflict, contracts.BookingErrSlotReserved,
			"the slot is held by someone else", "slot_taken")
	case kindDuplicate:
		s.count("bookHeld", "duplicate_slot")
		return HeldOutcome{}, heldRefusal(op, contracts.CodeConflict, contracts.BookingErrDuplicateSlot,
			"the slot is already booked for this patient", "slot_taken")
	}
	s.count("bookHeld", "failed")
	s.log.Warn("held booking failed", "error_type", o.errType, "cloud9", o.c9Msg, "err", o.errMsg)
	switch o.errType {
	case string(cloud9.ClassSlotNotAvailable):
		return HeldOutcome{}, heldRefusal(op, contracts.CodeConflict, o.errType, "Cloud9 refused the slot: it is no longer available", "slot_taken")
	case string(cloud9.ClassPatientNotFound):
		e := heldRefusal(op, contracts.CodeNotFound, o.errType, "Cloud9 does not know this patient", "")
		e.Details["field"] = "patientGUID"
		return HeldOutcome{}, e
	}
	return HeldOutcome{}, heldRefusal(op, contracts.CodeUnavailable, o.errType,
		fmt.Sprintf("the booking could not be made in Cloud9 now (%s)", o.errType), "")
}

// AuthorizeHeld is the web face's patient check before a HeldBooking,
// with Config.AuthMode: a bookingAuthToken, when given, must be valid for
// patientGUID (createAppt's checks 2–5, any mode); without one, token mode
// refuses — an operator who requires a token for createAppt gets no
// tokenless bookings through /v1 either — and the other modes accept the
// patient the hold's client names (the web face has no session cache). A
// refusal is 401 unauthorized with details.errorType createAppt's
// BOOKING_AUTH_* code and details.field "bookingAuthToken".
func (s *Service) AuthorizeHeld(token, patientGUID string) error {
	const op = "booking.AuthorizeHeld"
	refuse := func(code, msg string) error {
		s.count("bookHeld", "auth_rejected")
		e := contracts.Errorf(contracts.CodeUnauthorized, "%s", msg)
		e.Op, e.Details = op, map[string]any{"field": "bookingAuthToken", "errorType": code}
		return e
	}
	token = strings.TrimSpace(token)
	if token == "" {
		if s.cfg.AuthMode == AuthModeToken {
			return refuse(contracts.BookingAuthMissing, "BOOKING_AUTH_MODE is token: name the patient's bookingAuthToken (createPatient's)")
		}
		return nil
	}
	if code, _ := s.checkToken(token, strings.TrimSpace(patientGUID)); code != "" {
		return refuse(code, "the bookingAuthToken does not authorize this patient ("+code+")")
	}
	return nil
}

func heldRefusal(op string, code contracts.Code, errType, msg, reason string) *contracts.Error {
	e := contracts.Errorf(code, "%s", msg)
	e.Op, e.Details = op, map[string]any{"errorType": errType}
	if reason != "" {
		e.Details["reason"] = reason
	}
	return e
}
