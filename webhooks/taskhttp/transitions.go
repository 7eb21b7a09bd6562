package taskhttp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

// updateStatus serves PATCH /queue/:queue_id/status, the generic
// transition (tasks.Ledger.UpdateStatus says which edges are legal).
func (h *Handlers) updateStatus(c *fiber.Ctx) error {
	var req contracts.StatusUpdateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	t, err := h.ledger.UpdateStatus(c.UserContext(), c.Params("queue_id"), req)
	if err != nil {
		return err
	}
	return c.JSON(contracts.TaskResponse{Success: true, Task: t})
}

// requeue serves PATCH /queue/:queue_id/requeue. A task already PENDING or
// PROCESSING is a no-op (200, noop true, message why).
func (h *Handlers) requeue(c *fiber.Ctx) error {
	var req contracts.RequeueRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	o, err := h.ledger.Requeue(c.UserContext(), c.Params("queue_id"), req)
	if err != nil {
		return err
	}
	return c.JSON(contracts.TaskResponse{Success: true, Noop: o.Noop, Message: o.Message, Task: o.Task})
}

// replay serves POST /queue/:queue_id/replay through the Replayer. The
// path id is checked here, since the Replayer may touch Asynq before the
// ledger would refuse it.
func (h *Handlers) replay(c *fiber.Ctx) error {
	id, err := pathQueueID(c)
	if err != nil {
		return err
	}
	var req contracts.RequeueRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	t, err := h.cfg.Replayer.Replay(c.UserContext(), id, req)
	if err != nil {
		return err
	}
	return c.JSON(contracts.TaskResponse{Success: true, Task: t})
}

// heartbeat serves POST /queue/:queue_id/heartbeat.
func (h *Handlers) heartbeat(c *fiber.Ctx) error {
	var req contracts.HeartbeatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	t, err := h.ledger.Heartbeat(c.UserContext(), c.Params("queue_id"), req)
	if err != nil {
		return err
	}
	return c.JSON(contracts.TaskResponse{Success: true, Task: t})
}
