package web

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// BenchmarkShell is the CPU the shell's middleware (request id, access log
// at warn, metrics, recover, deadline) adds to a request, beside a bare
// Fiber app: both served straight from fasthttp's handler, no socket.
func BenchmarkShell(b *testing.B) {
	ok := func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) }
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/x", ok)
	shell, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	shell.Get("/x", Deadline(10*time.Second), ok)
	for _, a := range []struct {
		name string
		app  *fiber.App
	}{{"bare", bare}, {"shell", shell}} {
		b.Run(a.name, func(b *testing.B) {
			h := a.app.Handler()
			var ctx fasthttp.RequestCtx
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.ResetUserValues() // as fasthttp's server does between requests
				ctx.Request.Header.SetMethod("GET")
				ctx.Request.SetRequestURI("/x")
				h(&ctx)
			}
		})
	}
}
