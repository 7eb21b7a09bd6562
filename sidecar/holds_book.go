package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// webBookingMargin is added to the sync budget and the Cloud9 write
// timeout to bound the web face's /book of a Cloud9 slot.
const webBookingMargin = 5 * time.Second

// webBooker books the web face's /book of a Cloud9-sourced appointment
// type through the booking core (holdshttp.Booker): the web hold is
// adopted as the IVA reservation of the session webSession(holdId) — the same
// canonical slot key, never free in between — and booking.BookHeld
// runs for that session: the Done mark and lease of the identity
// (patient, start, column), the shared write limiter within the sync
// budget, the durable queue after it, the reservation kept while queued
// and released on a refusal.
type webBooker struct {
	svc            *booking.Service
	ops            *booking.Worker // the operation of a queued booking, in queue-status' shape
	res            *reservation.Store
	src            *availability.Cloud9Source
	locationGUID   string
	statusEndpoint string
}

// webBooker is the Booker of the Cloud9 source; nil with the schedule
// file (its types are not External).
func (m *Main) webBooker() holdshttp.Booker {
	if m.avail == nil || m.avail.cloud9 == nil || m.booking == nil || m.booking.svc == nil {
		return nil
	}
	return webBooker{svc: m.booking.svc, ops: m.booking.worker, res: m.booking.reservations, src: m.avail.cloud9,
		locationGUID: m.Config.Booking.LocationGUID, statusEndpoint: m.Config.NodeRedBasePath + bookinghttp.OperationStatusPath}
}

// webSession is the reservation's holder for web hold holdID: "web-" and a
// one-way digest of the hold id, not the id itself — the hold id is the
// hold's bearer secret, and the session travels in the booking task's
// payload and the SlotReservation value.
func webSession(holdID string) string {
	sum := sha256.Sum256([]byte("flowgate holds: web booking session\x00" + holdID))
	return "web-" + hex.EncodeToString(sum[:16])
}

// webMemo is what the adoption record keeps for a retried /book: the
// patient and the Cloud9 slot as it was booked.
type webMemo struct {
	PatientGUID string              `json:"patientGUID"`
	Appointment booking.Appointment `json:"appointment"`
}

// Book implements holdshttp.Booker.
func (w webBooker) Book(ctx context.Context, b holdshttp.ExternalBooking) (holdshttp.Booked, error) {
	h := b.Hold
	sl, found, err := w.src.OpenSlot(ctx, h.AppointmentTypeID, h.SpecialistID, h.SlotStartDate)
	if err != nil {
		return holdshttp.Booked{}, err
	}
	if !found { // booked in Cloud9 behind flowgate's back since the hold
		return holdshttp.Booked{}, webTaken("Cloud9 no longer offers this slot", contracts.BookingErrSlotNotAvailable)
	}
	appt := booking.Appointment{PatientGUID: b.PatientGUID, StartTime: sl.StartTime, ScheduleViewGUID: sl.ScheduleViewGUID,
		ScheduleColumnGUID: sl.ScheduleColumnGUID, AppointmentTypeGUID: firstNonEmpty(sl.AppointmentTypeGUID, h.AppointmentTypeID),
		Minutes: int(sl.Length() / time.Minute)}
	memo, err := json.Marshal(webMemo{PatientGUID: b.PatientGUID, Appointment: appt})
	if err != nil {
		return holdshttp.Booked{}, err
	}
	// The reservation's slot is named as BookHeld's Reserve names it
	// (location, start, column; no type), so the core finds it its own.
	_, err = w.res.Adopt(ctx, slots.Slot{LocationGUID: w.locationGUID, StartTime: sl.StartTime, ScheduleColumnGUID: sl.ScheduleColumnGUID},
		webSession(h.HoldID), "", reservation.WebHold{ClientID: h.ClientID, HoldID: h.HoldID, Memo: string(memo), Keep: holds.DefaultAdoptionKeep})
	if errors.Is(err, reservation.ErrReservedByOther) {
		return holdshttp.Booked{}, webTaken("the slot is held by someone else", contracts.BookingErrSlotReserved)
	}
	if err != nil {
		return holdshttp.Booked{}, err
	}
	return w.run(ctx, h, webSession(h.HoldID), appt)
}

// Resume implements holdshttp.Booker: the adoption record names the
// booking, which the core runs again (answered from its Done mark when
// made, booked now when it was queued).
func (w webBooker) Resume(ctx context.Context, b holdshttp.ExternalBooking) (holdshttp.Booked, bool, error) {
	a, found, err := w.res.Engine().Adopted(ctx, b.Hold.ClientID, b.Hold.HoldID)
	if err != nil || !found {
		return holdshttp.Booked{}, false, err
	}
	var m webMemo
	if err := json.Unmarshal([]byte(a.Memo), &m); err != nil || m.Appointment.StartTime == "" {
		return holdshttp.Booked{}, false, nil // not this booker's record
	}
	if !strings.EqualFold(m.PatientGUID, b.PatientGUID) {
		return holdshttp.Booked{}, true, &contracts.Error{Code: contracts.CodeConflict, Details: map[string]any{"field": "patientGUID"},
			Message: "this hold was handed to a booking for another patient; hold the slot again"}
	}
	// The session the hold was handed to (a.Hold's client), whichever way
	// an earlier version named it.
	out, err := w.run(ctx, a.From, firstNonEmpty(a.Hold.ClientID, webSession(a.From.HoldID)), m.Appointment)
	return out, true, err
}

// run is BookHeld for the web hold h, handed over to session, answered for
// the web face.
func (w webBooker) run(ctx context.Context, h holds.Hold, session string, appt booking.Appointment) (holdshttp.Booked, error) {
	o, err := w.svc.BookHeld(ctx, booking.HeldBooking{Appointment: appt, SessionID: session})
	if err != nil {
		return holdshttp.Booked{}, err
	}
	out := holdshttp.Booked{Hold: h}
	if !o.Queued() {
		out.Cloud9AppointmentGUID = o.AppointmentGUID
		return out, nil
	}
	op := contracts.QueueOperation{ID: o.OperationID, Status: contracts.OpPending, OperationType: contracts.OpSetAppointment,
		StartTime: appt.StartTime}
	if w.ops != nil {
		if got, found, err := w.ops.Operation(ctx, o.OperationID); err == nil && found {
			op = got
		}
	}
	out.Operation = &op
	out.StatusEndpoint = w.statusEndpoint + "?operationId=" + url.QueryEscape(o.OperationID)
	return out, nil
}

// webTaken is a slot the web booking cannot have: 409 slot_taken.
func webTaken(msg, errType string) error {
	return &contracts.Error{Code: contracts.CodeConflict, Message: msg,
		Details: map[string]any{"reason": "slot_taken", "errorType": errType}}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
