package holdshttp

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// Appointment.Status of an External booking.
const (
	StatusBooked = "booked"
	StatusQueued = "queued"
)

// bookExternal is /book of an External type: the booking is made in the
// system of record by Config.Booker (see the package doc), not recorded in
// the Catalog.
func (h *Handlers) bookExternal(c *fiber.Ctx, t AppointmentType, req holdRef, patientGUID string) error {
	if patientGUID == "" {
		return &contracts.Error{Code: contracts.CodePatientRequired, Details: map[string]any{"field": "patientGUID"},
			Message: "appointment type " + t.ID + " is booked in Cloud9: name the patient (patientGUID); the hold is kept"}
	}
	if err := checkID("patientGUID", patientGUID); err != nil {
		return err
	}
	if h.cfg.Booker == nil {
		return contracts.Errorf(contracts.CodeUnavailable, "booking appointment type %s in Cloud9 is not configured", t.ID)
	}
	// Not cut when the client goes away: a booking under way at Cloud9
	// finishes (or is queued) rather than being left uncertain.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), h.cfg.BookingTimeout)
	defer cancel()
	b := ExternalBooking{Type: t, PatientGUID: patientGUID, AppointmentID: h.cfg.AppointmentID(req.HoldID),
		Hold: holds.Hold{HoldID: req.HoldID, ClientID: req.ClientID}}
	hd, live, err := h.cfg.Engine.Heartbeat(ctx, req.ClientID, req.HoldID)
	if err != nil {
		return err
	}
	var out Booked
	if live {
		if hd.AppointmentTypeID != t.ID {
			return invalidField("holdId", "hold %s is for another appointment type", hd.HoldID)
		}
		b.Hold = hd
		if out, err = h.cfg.Booker.Book(ctx, b); err != nil {
			return err
		}
	} else {
		found := false
		if out, found, err = h.cfg.Booker.Resume(ctx, b); err != nil {
			return err
		}
		if !found {
			return &contracts.Error{Code: contracts.CodeConflict, Message: "the hold has expired or is not this client's; hold the slot again",
				Details: map[string]any{"field": "holdId"}}
		}
		if out.Hold.AppointmentTypeID != "" && out.Hold.AppointmentTypeID != t.ID {
			return invalidField("holdId", "hold %s is for another appointment type", req.HoldID)
		}
	}
	a := Appointment{AppointmentID: b.AppointmentID, AppointmentTypeID: t.ID, SpecialistID: out.Hold.SpecialistID,
		ClientID: req.ClientID, SlotStartDate: out.Hold.SlotStartDate, SlotEndDate: out.Hold.SlotEndDate,
		BookedAt: h.cfg.Now().UTC(), PatientGUID: patientGUID, Cloud9AppointmentGUID: out.Cloud9AppointmentGUID, Status: StatusBooked}
	if out.Operation != nil && out.Cloud9AppointmentGUID == "" {
		a.Status = StatusQueued
	}
	if live {
		// The cooldown a booking sets, under the id a cancel finds it by:
		// the Cloud9 appointment (cancelAppt), or the queued operation.
		id := a.Cloud9AppointmentGUID
		if id == "" && out.Operation != nil {
			id = out.Operation.ID
		}
		if id != "" {
			if err := h.cfg.Engine.StartCooldown(ctx, req.ClientID, t.ID, id, minutes(t.CooldownMinutes)); err != nil {
				h.cfg.Logger.Warn("holds: booked in Cloud9 but the cooldown could not be set", "appointmentId", a.AppointmentID, "err", err)
			}
		}
	}
	if a.Status == StatusQueued {
		return c.Status(fiber.StatusAccepted).JSON(BookQueuedResponse{Appointment: a, Operation: *out.Operation,
			StatusEndpoint: out.StatusEndpoint})
	}
	return c.Status(fiber.StatusCreated).JSON(BookResponse{Appointment: a})
}
