package main

import (
	"github.com/gofiber/fiber/v2"
)

// routeTable lists the registered routes as "METHOD path" (Fiber's order:
// by method, then registration), without middleware and without the HEAD twins Fiber adds to GET
// routes. It is logged at debug level at start ("route table"): the
// operator sees what is served, and the bad-input drill (test/chaos) sweeps
// exactly these, so a new route is swept without editing the drill.
func routeTable(app *fiber.App) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range app.GetRoutes(true) {
		if r.Method == fiber.MethodHead {
			continue
		}
		k := r.Method + " " + r.Path
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
