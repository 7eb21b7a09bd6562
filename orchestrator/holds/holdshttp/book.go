package holdshttp

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// BookRequest is the body of POST /v1/appointment-types/{id}/book.
// PatientGUID is the Cloud9 patient; required for an External type (422
// PATIENT_REQUIRED without it), ignored otherwise. BookingAuthToken is the
// patient's token (createPatient's): checked when given, required when
// BOOKING_AUTH_MODE is token (401 unauthorized).
type BookRequest struct {
	HoldID           string `json:"holdId"`
	ClientID         string `json:"clientId"`
	PatientGUID      string `json:"patientGUID,omitempty"`
	BookingAuthToken string `json:"bookingAuthToken,omitempty"`
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
		return h.bookExternal(c, t, req, strings.TrimSpace(body.PatientGUID), body.BookingAuthToken)
	}
	rec := &catalogRecord{cat: h.cfg.Catalog, typeID: t.ID, clientID: req.ClientID, now: h.cfg.Now}
	ctx, cancel := h.holdWork(ctx)
	defer cancel()
	_, err = h.booking.BookLocal(ctx, holds.LocalBooking{ClientID: req.ClientID, HoldID: req.HoldID, AppointmentTypeID: t.ID,
		AppointmentID: h.cfg.AppointmentID(req.HoldID), Cooldown: minutes(t.CooldownMinutes)}, rec)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(BookResponse{Appointment: rec.a})
}

// catalogRecord is holds.Recorder over the Catalog: the appointment it
// recorded is the answer.
type catalogRecord struct {
	cat              Catalog
	typeID, clientID string
	now              func() time.Time
	a                Appointment
}

func (r *catalogRecord) Record(ctx context.Context, hd holds.Hold, appointmentID string) error {
	r.a = Appointment{AppointmentID: appointmentID, AppointmentTypeID: r.typeID, SpecialistID: hd.SpecialistID,
		ClientID: r.clientID, SlotStartDate: hd.SlotStartDate, SlotEndDate: hd.SlotEndDate, BookedAt: r.now().UTC()}
	return r.cat.RecordBooking(ctx, r.a)
}

func (r *catalogRecord) Cancel(ctx context.Context, appointmentID string) error {
	_, err := r.cat.CancelBooking(ctx, appointmentID)
	return err
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
