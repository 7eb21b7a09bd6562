package bufferhttp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// messages lists messages: ?state= (required: pending, scheduled, retry,
// active, completed, dead), &type=, &priority= (0..3 or a name), &limit=
// (1..500, default 50), &cursor= (nextCursor of the previous page).
func (h *Handlers) messages(c *fiber.Ctx) error {
	if err := knownParams(c, "state", "type", "priority", "limit", "cursor"); err != nil {
		return err
	}
	q := buffer.ListQuery{State: strings.Clone(c.Query("state")), Type: strings.Clone(c.Query("type")),
		Cursor: strings.Clone(c.Query("cursor"))}
	if q.State == "" {
		return &contracts.Error{Code: contracts.CodeInvalid, Message: "state is required: one of " + strings.Join(buffer.ListStates, ", "),
			Details: map[string]any{"field": "state"}}
	}
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return &contracts.Error{Code: contracts.CodeInvalid, Message: "limit must be an integer 1.." + strconv.Itoa(buffer.MaxListLimit),
				Details: map[string]any{"field": "limit"}}
		}
		q.Limit = n
	}
	if s := c.Query("priority"); s != "" {
		p, err := buffer.ParsePriority(s)
		if err != nil {
			return err
		}
		q.Priority = &p
	}
	l, err := h.buf.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	return c.JSON(l)
}

// knownParams refuses a query parameter the listing does not know (a
// filter such as companyId would otherwise be ignored silently, and the
// caller read an unfiltered list as a filtered one): 400 invalid with
// details.field naming it and details.reason "unknown_parameter".
func knownParams(c *fiber.Ctx, known ...string) error {
	var bad string
	c.Context().QueryArgs().VisitAll(func(k, _ []byte) {
		if bad == "" && !slices.Contains(known, string(k)) {
			bad = string(k)
		}
	})
	if bad == "" {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeInvalid, Op: "buffer.List",
		Message: fmt.Sprintf("unknown query parameter %q: this listing takes %s only", bad, strings.Join(known, ", ")),
		Details: map[string]any{"field": bad, "reason": "unknown_parameter", "known": known}}
}
