package availhttp

import (
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// ScheduleResponse answers the admin endpoints: the schedule after the
// change.
type ScheduleResponse struct {
	Schedule availability.Schedule `json:"schedule"`
}

func (h *Handlers) schedule(c *fiber.Ctx) error {
	ctx := c.UserContext()
	s, err := h.cfg.Catalog.Schedule(ctx)
	if err != nil {
		return err
	}
	return c.JSON(ScheduleResponse{Schedule: s})
}

// apply runs an admin change and logs it (like /monitoring writes).
func (h *Handlers) apply(c *fiber.Ctx, what string, change availability.Change) error {
	ctx := c.UserContext()
	s, err := h.cfg.Catalog.Update(ctx, change)
	user, _ := c.Locals("username").(string)
	level := slog.LevelWarn
	if err != nil {
		level = slog.LevelInfo
	}
	h.cfg.Logger.Log(ctx, level, "availability admin change", "change", what, "path", strings.Clone(c.Path()),
		"user", strings.Clone(user), "ok", err == nil, "request_id", web.RequestID(c))
	if err != nil {
		return err
	}
	return c.JSON(ScheduleResponse{Schedule: s})
}

func (h *Handlers) putWeeklyHours(c *fiber.Ctx) error {
	var w availability.WeeklyHours
	if err := decode(c, &w); err != nil {
		return err
	}
	return h.apply(c, "weekly-hours", availability.SetWeeklyHours(strings.Clone(c.Params("specialistId")), w))
}

// overrideBody is PUT …/overrides/{date}'s body: the hours of that date
// (none: closed).
type overrideBody struct {
	Hours []availability.Interval `json:"hours"`
}

func (h *Handlers) putOverride(c *fiber.Ctx) error {
	var b overrideBody
	if err := decode(c, &b); err != nil {
		return err
	}
	return h.apply(c, "override", availability.PutOverride(strings.Clone(c.Params("specialistId")), strings.Clone(c.Params("date")), b.Hours))
}

func (h *Handlers) deleteOverride(c *fiber.Ctx) error {
	return h.apply(c, "override-delete", availability.DeleteOverride(strings.Clone(c.Params("specialistId")), strings.Clone(c.Params("date"))))
}

func (h *Handlers) deleteSpecialist(c *fiber.Ctx) error {
	return h.apply(c, "specialist-delete", availability.DeleteSpecialist(strings.Clone(c.Params("specialistId"))))
}

func (h *Handlers) putAppointmentType(c *fiber.Ctx) error {
	var t availability.AppointmentType
	if err := decode(c, &t); err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if t.ID != "" && t.ID != id {
		return invalidParam("id", "the body's id %s differs from the path's %s", quote(t.ID), quote(id))
	}
	t.ID = id
	return h.apply(c, "appointment-type", availability.PutAppointmentType(t))
}
