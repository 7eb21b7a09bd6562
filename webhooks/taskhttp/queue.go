package taskhttp

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

// create serves POST /queue: one CreateTaskRequest, or a batch when the
// body has a "tasks" member. 201 when something was created, 200 when
// everything was a duplicate.
func (h *Handlers) create(c *fiber.Ctx) error {
	b, err := body(c)
	if err != nil {
		return err
	}
	var probe struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	if err := contracts.DecodeJSON(b, &probe); err != nil {
		return err
	}
	if probe.Tasks != nil {
		return h.createBatch(c, b)
	}
	var req contracts.CreateTaskRequest
	if err := contracts.DecodeJSON(b, &req); err != nil {
		return err
	}
	res, err := h.ledger.Create(c.UserContext(), req)
	if err != nil {
		return err
	}
	status := fiber.StatusCreated
	if res.Duplicate {
		status = fiber.StatusOK
	}
	return c.Status(status).JSON(contracts.CreateResponse{Success: true, Duplicate: res.Duplicate, Task: res.Task})
}

func (h *Handlers) createBatch(c *fiber.Ctx, b []byte) error {
	var req contracts.BatchCreateRequest
	if err := contracts.DecodeJSON(b, &req); err != nil {
		return err
	}
	results, err := h.ledger.CreateBatch(c.UserContext(), req.Tasks)
	if err != nil {
		return err
	}
	resp := contracts.BatchCreateResponse{Success: true, Results: results}
	for _, r := range results {
		if r.Duplicate {
			resp.Duplicates++
		} else {
			resp.Created++
		}
	}
	status := fiber.StatusCreated
	if resp.Created == 0 {
		status = fiber.StatusOK
	}
	return c.Status(status).JSON(resp)
}

// list serves GET /queue.
func (h *Handlers) list(c *fiber.Ctx) error {
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	page, err := h.ledger.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	return c.JSON(contracts.ListResponse{Success: true, Tasks: page.Tasks, NextCursor: page.NextCursor})
}

// stats serves GET /queue/stats.
func (h *Handlers) stats(c *fiber.Ctx) error {
	st, err := h.ledger.Stats(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// get serves GET /queue/:queue_id: one task with its history.
func (h *Handlers) get(c *fiber.Ctx) error {
	t, err := h.ledger.Get(c.UserContext(), c.Params("queue_id"))
	if err != nil {
		return err
	}
	return c.JSON(contracts.TaskResponse{Success: true, Task: t})
}
