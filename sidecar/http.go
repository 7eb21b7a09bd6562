package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/basicauth"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/sidecar/web"
)

// startPprof serves net/http/pprof on its own listener when PPROF_ADDR is set.
func (m *Main) startPprof() error {
	if m.Config.PprofAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", m.Config.PprofAddr)
	if err != nil {
		return &ConfigError{Var: "PPROF_ADDR", Err: err}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	m.onClose(func(ctx context.Context) error { return srv.Shutdown(ctx) })
	m.Logger.Warn("pprof profiling endpoint enabled", "addr", ln.Addr().String())
	return nil
}

func (m *Main) startHTTP() error {
	if err := m.startPprof(); err != nil {
		return err
	}
	app, err := web.New(web.Options{BodyLimit: m.Config.BodyLimit, Logger: m.Logger, Registerer: m.registry})
	if err != nil {
		return err
	}
	m.app = app
	if err := m.routes(app); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", m.Config.Addr)
	if err != nil {
		return &ConfigError{Var: "FLOWGATE_ADDR", Err: err}
	}
	m.ln = ln
	go func() {
		if err := app.Listener(ln); err != nil && !m.closing.Load() {
			m.httpErr <- err
		}
	}()
	return nil
}

// routes is the route table.
func (m *Main) routes(app *fiber.App) error {
	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", m.readyz)
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})))

	m.monitor = asynqmon.New(asynqmon.Options{
		RootPath:     "/monitoring",
		RedisConnOpt: m.redis.ConnOpt,
		ReadOnly:     m.Config.MonitoringRO,
	})
	mon := app.Group("/monitoring")
	if m.Config.MonitoringUser != "" {
		user, pass := []byte(m.Config.MonitoringUser), []byte(m.Config.MonitoringPass)
		mon.Use(basicauth.New(basicauth.Config{
			Realm: "flowgate monitoring",
			Authorizer: func(u, p string) bool {
				okU := subtle.ConstantTimeCompare([]byte(u), user)
				okP := subtle.ConstantTimeCompare([]byte(p), pass)
				return okU&okP == 1
			},
		}))
	}
	h := adaptor.HTTPHandler(m.monitor)
	app.All("/monitoring", h)
	app.All("/monitoring/*", h)

	m.orch.routes(app)
	m.buffer.routes(app)
	return m.booking.routes(app, m.Config.NodeRedBasePath)
}

type readiness struct {
	Ready  bool              `json:"ready"`
	Reason string            `json:"reason,omitempty"`
	Checks map[string]string `json:"checks"`
}

// readyz: 200 when Redis answers and the Asynq dequeuers run; 503 with the
// reason otherwise (also from the moment shutdown begins).
func (m *Main) readyz(c *fiber.Ctx) error {
	r := readiness{Ready: true, Checks: map[string]string{"redis": "ok", "asynq": "ok"}}
	ctx, cancel := context.WithTimeout(c.UserContext(), time.Second)
	defer cancel()
	var reasons []error
	if err := m.redis.ping(ctx); err != nil {
		r.Checks["redis"] = err.Error()
		reasons = append(reasons, errors.New("redis unreachable"))
	}
	if !m.rt.Running() {
		r.Checks["asynq"] = "stopped"
		reasons = append(reasons, errors.New("asynq server not running"))
	}
	if !m.ready.Load() {
		r.Checks["lifecycle"] = "not serving"
		reasons = append(reasons, errors.New("starting or shutting down"))
	}
	if len(reasons) > 0 {
		r.Ready, r.Reason = false, errors.Join(reasons...).Error()
		return c.Status(fiber.StatusServiceUnavailable).JSON(r)
	}
	return c.JSON(r)
}
