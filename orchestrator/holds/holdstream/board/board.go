// Package board serves /board: a small live slot board (plain HTML and
// JavaScript embedded in the binary, no build step, no external assets).
// Without a type it lists the appointment types by name
// (GET /v1/appointment-types), each a link to its board. With one it is
// titled by the type's name and shows its slots for a day, from
// GET /v1/appointment-types/{id}/timeslots?includeHeld=true (free, held
// by another client, booked), and greys a (specialist, start) cell live
// from GET /v1/holds/stream: grey on hold, dark on confirm, free again on
// release.
package board

import (
	_ "embed"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

//go:embed board.html
var page []byte

// Register mounts GET /board[?appointmentTypeId=&date=YYYY-MM-DD].
func Register(app fiber.Router) { app.Get("/board", Handler) }

func invalid(field, msg string) error {
	return contracts.FieldErrorf(contracts.CodeInvalid, field, "%s", msg)
}

// Handler answers the page; the page reads its parameters itself. Without
// appointmentTypeId it lists the types; a malformed parameter answers 400
// naming it.
func Handler(c *fiber.Ctx) error {
	id := c.Query("appointmentTypeId")
	if len(id) > 128 || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return invalid("appointmentTypeId", "appointmentTypeId must be at most 128 printable characters")
	}
	if d := c.Query("date"); d != "" {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return invalid("date", "date must be YYYY-MM-DD")
		}
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
	return c.Send(page)
}
