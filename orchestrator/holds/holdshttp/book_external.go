package holdshttp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// Appointment.Status of an External booking.
const (
	StatusBooked = "booked"
	StatusQueued = "queued"
)

// bookExternal is /book of an External type: the booking is made in the
// system of record by Config.Booker (see the package doc), not recorded in
// the Catalog. The rules — patient required, heartbeat, type check, resume
// of an earlier attempt, cooldown — are holds.Booking's; this decodes,
// calls and encodes.
func (h *Handlers) bookExternal(c *fiber.Ctx, t AppointmentType, req holdRef, patientGUID, token string) error {
	if patientGUID != "" {
		if err := checkID("patientGUID", patientGUID); err != nil {
			return err
		}
	}
	id := h.cfg.AppointmentID(req.HoldID)
	ctx, cancel := h.holdWork(c.UserContext())
	defer cancel()
	out, err := h.booking.BookExternal(ctx, holds.BookRequest{AppointmentTypeID: t.ID, Cooldown: minutes(t.CooldownMinutes),
		ClientID: req.ClientID, HoldID: req.HoldID, PatientGUID: patientGUID, PatientToken: token, AppointmentID: id})
	if err != nil {
		return err
	}
	a := Appointment{AppointmentID: id, AppointmentTypeID: t.ID, SpecialistID: out.Hold.SpecialistID,
		ClientID: req.ClientID, SlotStartDate: out.Hold.SlotStartDate, SlotEndDate: out.Hold.SlotEndDate,
		BookedAt: out.BookedAt, PatientGUID: patientGUID, Cloud9AppointmentGUID: out.Cloud9AppointmentGUID, Status: StatusBooked}
	if out.Queued() {
		a.Status = StatusQueued
		return c.Status(fiber.StatusAccepted).JSON(BookQueuedResponse{Appointment: a, Operation: *out.Operation,
			StatusEndpoint: out.StatusEndpoint})
	}
	return c.Status(fiber.StatusCreated).JSON(BookResponse{Appointment: a})
}
