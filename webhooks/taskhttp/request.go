package taskhttp

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// body returns the request body as sent (web.PlainBody: a compressed body
// is refused).
func body(c *fiber.Ctx) ([]byte, error) { return web.PlainBody(c) }

// decode decodes the required JSON body into v.
func decode(c *fiber.Ctx, v any) error {
	b, err := body(c)
	if err != nil {
		return err
	}
	return contracts.DecodeJSON(b, v)
}

// decodeOptional decodes the body into v when there is one; an empty body
// leaves v as it is.
func decodeOptional(c *fiber.Ctx, v any) error {
	b, err := body(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return contracts.DecodeJSON(b, v)
}

// listQuery reads GET /queue's query string. The ledger checks the values
// it interprets (status, priority, queue_id, encounter_id, limit range,
// cursor); here only the typed ones are parsed: limit must be an integer,
// dlq and history booleans. An empty value counts as absent.
func listQuery(c *fiber.Ctx) (contracts.ListQuery, error) {
	q := contracts.ListQuery{
		Status:      contracts.Status(c.Query("status")),
		QueueID:     c.Query("queue_id"),
		EncounterID: c.Query("encounter_id"),
		Priority:    contracts.Priority(c.Query("priority")),
		Cursor:      c.Query("cursor"),
	}
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return q, invalidParam("limit", "limit must be an integer 1..%d, got %s", contracts.MaxListLimit, quote(s))
		}
		if n == 0 { // 0 would mean "default" to the ledger; as a query value it is out of range
			return q, invalidParam("limit", "limit must be 1..%d, got 0", contracts.MaxListLimit)
		}
		q.Limit = n
	}
	var err error
	if q.DLQ, err = boolParam(c, "dlq"); err != nil {
		return q, err
	}
	if q.History, err = boolParam(c, "history"); err != nil {
		return q, err
	}
	return q, nil
}

func boolParam(c *fiber.Ctx, name string) (bool, error) {
	s := strings.TrimSpace(c.Query(name))
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, invalidParam(name, "%s must be true or false, got %s", name, quote(s))
	}
	return b, nil
}

func invalidParam(name, format string, args ...any) *contracts.Error {
	return contracts.FieldErrorf(contracts.CodeInvalid, name, format, args...)
}

// quote quotes a client value for a message, cut to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// pathQueueID returns the :queue_id path parameter in canonical form
// (lowercase UUID), as the ledger would; anything else is a 400.
func pathQueueID(c *fiber.Ctx) (string, error) {
	u, err := uuid.Parse(c.Params("queue_id"))
	if err != nil {
		return "", invalidParam("queue_id", "queue_id must be a UUID")
	}
	return u.String(), nil
}
