package main

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// landingPage is GET /: the operator's links to every page flowgate serves.
//
//go:embed landing.html
var landingPage []byte

func landing(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
	return c.Send(landingPage)
}
