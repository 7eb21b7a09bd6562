package holdshttp

import (
	"context"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// BookRequest is the body of POST /v1/appointment-types/{id}/book.
// PatientGUID is the Cloud9 patient; required for an External type (422
// PATIENT_REQUIRED without it), ignored otherwise.
type BookRequest struct {
	HoldID      string `json:"holdId"`
	ClientID    string `json:"clientId"`
	PatientGUID string `json:"patientGUID,omitempty"`
}

// BookResponse is the 201 answer of POST /v1/appointment-types/{id}/book.
type BookResponse struct {
	Appointment Appointment `json:"appointment"`
}

// BookQueuedResponse is the 202 answer of an External type's /book whose
// booking the booking core queued (its sync budget ran out, or Cloud9's
// answer was uncertain): the appointment (status "queued"), the operation
// in queue-status' shape, and the endpoint that reports it.
type BookQueuedResponse struct {
	Appointment    Appointment              `json:"appointment"`
	Operation      contracts.QueueOperation `json:"operation"`
	StatusEndpoint string                   `json:"statusEndpoint,omitempty"`
}

// CancelResponse is the answer of DELETE /v1/appointments/{appointmentId}.
type CancelResponse struct {
	Appointment     Appointment `json:"appointment"`
	CooldownCleared bool        `json:"cooldownCleared"`
}

func (h *Handlers) book(c *fiber.Ctx) error {
	atid := c.Params("id")
	if err := checkID("id", atid); err != nil {
		return err
	}
	var body BookRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	req := holdRef{HoldID: body.HoldID, ClientID: body.ClientID}
	if err := checkRef(req); err != nil {
		return err
	}
	ctx := c.UserContext()
	t, err := h.cfg.Catalog.AppointmentType(ctx, atid)
	if err != nil {
		return err
	}
	if t.External {
		return h.bookExternal(c, t, req, strings.TrimSpace(body.PatientGUID))
	}
	// (1) the hold must be live, the client's and of this type; the
	// heartbeat also gives it a full TTL for the steps below.
	hd, err := h.booking.LiveHold(ctx, req.ClientID, req.HoldID, t.ID)
	if err != nil {
		return err
	}
	a := Appointment{AppointmentID: h.cfg.AppointmentID(hd.HoldID), AppointmentTypeID: t.ID, SpecialistID: hd.SpecialistID,
		ClientID: req.ClientID, SlotStartDate: hd.SlotStartDate, SlotEndDate: hd.SlotEndDate, BookedAt: h.cfg.Now().UTC()}
	// (2) book; on failure the hold stays for a retry.
	if err := h.cfg.Catalog.RecordBooking(ctx, a); err != nil {
		return err
	}
	// (3) confirm; if that fails the booking is undone — and, in case the
	// confirm ran but its reply was lost, its cooldown and booked claim too.
	if _, err := h.cfg.Engine.Confirm(ctx, req.ClientID, req.HoldID, a.AppointmentID, minutes(t.CooldownMinutes)); err != nil {
		// a concurrent retry of this /book confirmed it first: the same booking.
		if id, berr := h.cfg.Engine.BookedAppointment(ctx, hd.SpecialistID, hd.SlotStartDate); berr == nil && id == a.AppointmentID {
			return c.Status(fiber.StatusCreated).JSON(BookResponse{Appointment: a})
		}
		h.undo(context.WithoutCancel(ctx), a, hd, err)
		if errors.Is(err, holds.ErrHoldNotFound) || errors.Is(err, holds.ErrNotOwner) {
			return &contracts.Error{Code: contracts.CodeConflict, Message: "the hold ended while booking; hold the slot again", Err: err}
		}
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(BookResponse{Appointment: a})
}

// undo cancels a recorded booking whose confirm failed, then clears what a
// confirm that ran (reply lost) left: the cooldown and the booked slot claim.
func (h *Handlers) undo(ctx context.Context, a Appointment, hd holds.Hold, confirmErr error) {
	if _, err := h.cfg.Catalog.CancelBooking(ctx, a.AppointmentID); err != nil {
		h.cfg.Logger.Error("holds: booking recorded but the hold could not be confirmed nor the booking undone",
			"appointmentId", a.AppointmentID, "confirmErr", confirmErr, "cancelErr", err)
		return
	}
	if _, err := h.cfg.Engine.ClearCooldown(ctx, a.AppointmentID); err != nil {
		h.cfg.Logger.Error("holds: booking undone but its cooldown could not be cleared", "appointmentId", a.AppointmentID, "err", err)
	}
	if _, err := h.cfg.Engine.ReleaseBooking(ctx, a.AppointmentID, hd); err != nil {
		h.cfg.Logger.Error("holds: booking undone but its slot could not be freed", "appointmentId", a.AppointmentID, "err", err)
	}
}

func (h *Handlers) cancel(c *fiber.Ctx) error {
	id := c.Params("appointmentId")
	web.SetLogPath(c, "/v1/appointments/"+holds.Ref(id)) // a secret (derived from the hold id): logged as its ref
	if err := checkID("appointmentId", id); err != nil {
		return err
	}
	ctx := c.UserContext()
	a, err := h.cfg.Catalog.CancelBooking(ctx, id)
	if err != nil {
		return err
	}
	cleared, err := h.cfg.Engine.ClearCooldown(ctx, id)
	if err != nil {
		return err
	}
	// The slot only: the engine's "release" event is the booked hold its
	// claim holds (public ref, real times), not this appointment's fields.
	slot := holds.Hold{AppointmentTypeID: a.AppointmentTypeID, SpecialistID: a.SpecialistID, SlotStartDate: a.SlotStartDate}
	if _, err := h.cfg.Engine.ReleaseBooking(ctx, id, slot); err != nil {
		return err
	}
	return c.JSON(CancelResponse{Appointment: a, CooldownCleared: cleared})
}
