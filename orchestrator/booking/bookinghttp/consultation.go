package bookinghttp

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
)

// ConsultationService is what POST {base}/bookConsultation needs;
// *booking.Service implements it. A Service without it answers 404.
type ConsultationService interface {
	BookConsultation(ctx context.Context, req contracts.BookConsultationRequest) booking.ConsultAnswer
	MalformedConsultation(err error) booking.ConsultAnswer
}

// bookConsultation is POST {base}/bookConsultation (docs/reference/nodered-endpoints.md §1.3): the
// status is the answer's — 200 all booked, 202 something queued, 207
// partial, 500 nothing booked; bad input (not JSON, wrong types, missing
// fields, unknown GUIDs) is a 200 with the validation shape.
func (h *Handlers) bookConsultation(c *fiber.Ctx) error {
	svc, ok := h.svc.(ConsultationService)
	if !ok {
		return fiber.ErrNotFound
	}
	var req contracts.BookConsultationRequest
	if err := h.decode(c, &req, false); err != nil {
		return sendConsult(c, svc.MalformedConsultation(err))
	}
	h.ignored(c, req.Ignored)
	ctx := c.UserContext()
	return sendConsult(c, svc.BookConsultation(ctx, req))
}

func sendConsult(c *fiber.Ctx, a booking.ConsultAnswer) error {
	st := int(a.Status)
	if st == 0 {
		st = fiber.StatusOK
	}
	return c.Status(st).JSON(a.Body)
}
