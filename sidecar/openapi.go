package main

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/sidecar/openapi"
)

// openapiConfig is the document's configurable paths, as the routes are
// registered.
func (c Config) openapiConfig() (openapi.Config, error) {
	base, err := bookinghttp.NormalizeBasePath(c.NodeRedBasePath)
	if err != nil {
		return openapi.Config{}, &ConfigError{Var: "NODERED_BASE_PATH", Err: err}
	}
	return openapi.Config{NodeRedBasePath: base, AckPath: c.AckPath, FailPath: c.FailPath}, nil
}

// validateRoutes refuses configured paths (WEBHOOK_ACK_PATH,
// WEBHOOK_FAIL_PATH, NODERED_BASE_PATH) that land on another route's
// method and path (case-folded, as Fiber routes): the start would fail on
// the duplicate, and `flowgate check` passed it. (A path under another
// route's parameter is not detected.)
func (c *Config) validateRoutes(p *problems) {
	oc, err := c.openapiConfig()
	if err != nil {
		return // NODERED_BASE_PATH's own check reports it
	}
	seen := map[string]bool{}
	for _, op := range openapi.Operations(oc) {
		k := op.Method + " " + strings.ToLower(op.Path) // Fiber routes ignore case
		if !seen[k] {
			seen[k] = true
			continue
		}
		name := "NODERED_BASE_PATH"
		switch p := strings.ToLower(op.Path); p { // a path set exactly before a /webhook variant
		case strings.ToLower(c.FailPath):
			name = "WEBHOOK_FAIL_PATH"
		case strings.ToLower(c.AckPath):
			name = "WEBHOOK_ACK_PATH"
		case strings.ToLower("/webhook" + c.FailPath):
			name = "WEBHOOK_FAIL_PATH"
		case strings.ToLower("/webhook" + c.AckPath):
			name = "WEBHOOK_ACK_PATH"
		}
		p.addf(name, "%s lands on a route flowgate already serves (%s): choose another path", op.Path, k)
		return
	}
}

// openapiRoute serves GET /openapi.json: the OpenAPI 3.1 document of every
// route (sidecar/openapi), built once at start.
func (m *Main) openapiRoute(app *fiber.App) error {
	oc, err := m.Config.openapiConfig()
	if err != nil {
		return err
	}
	doc, err := openapi.JSON(oc)
	if err != nil {
		return err
	}
	app.Get("/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(doc)
	})
	return nil
}
