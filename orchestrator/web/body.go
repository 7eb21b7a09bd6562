package web

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

// PlainBody returns the request body as sent. A compressed body
// (Content-Encoding other than identity) is refused with 400 invalid:
// Fiber's c.Body() would inflate it with no bound — the body limit counts
// only the compressed bytes, so a small gzip could inflate to gigabytes —
// and a signature covers the bytes on the wire. Every JSON endpoint reads
// its body through here.
func PlainBody(c *fiber.Ctx) ([]byte, error) {
	if enc := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, &contracts.Error{Code: contracts.CodeInvalid,
			Message: "Content-Encoding " + strconv.Quote(enc) + " is not supported; send the JSON uncompressed",
			Details: map[string]any{"field": "Content-Encoding"}}
	}
	return c.BodyRaw(), nil
}
