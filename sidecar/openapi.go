package main

import (
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
