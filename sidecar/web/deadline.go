package web

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Deadline gives the rest of the chain a context that ends after d, so
// every Redis call of the request (go-redis with ContextTimeoutEnabled)
// gives up in time and the request answers 503 rather than hang. d <= 0
// sets none.
func Deadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if d <= 0 {
			return c.Next()
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), d)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}
