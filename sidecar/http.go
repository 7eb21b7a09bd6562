package main

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/orchestrator/web"
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
	// fasthttp's ReduceMemoryUsage stays off: a holds stream frees its
	// request's read buffer and context once it owns the connection
	// (KeepHijackedConns, sse.Detach), and the option cost every request an
	// extra read and its buffers re-acquired: 66-79 -> 53-56 µs of flowgate
	// CPU per HTTP enqueue (TestLoadBufferThroughput).
	app, err := web.New(web.Options{BodyLimit: m.Config.BodyLimit, Logger: m.Logger, Registerer: m.registry})
	if err != nil {
		return err
	}
	m.app = app
	if err := m.routes(app); err != nil {
		return err
	}
	m.Logger.Debug("route table", "routes", routeTable(app))
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
	// First, so that it wraps every route below that writes.
	if dur, err := m.durability(); err != nil { // durability.go
		return err
	} else if dur != nil {
		app.Use(dur)
	}
	app.Get("/", landing) // landing.go
	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	})
	app.Get("/readyz", m.readyz)
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(renamingGatherer{m.registry}, promhttp.HandlerOpts{}))) // metricnames.go

	m.monitor = asynqmon.New(asynqmon.Options{
		RootPath:     "/monitoring",
		RedisConnOpt: m.redis.ConnOpt,
		ReadOnly:     m.Config.MonitoringRO,
	})
	mon := app.Group("/monitoring")
	mon.Use(m.monitoringAudit)
	if m.Config.MonitoringAuth == "none" && !m.Config.Embedded() {
		m.Logger.Warn("MONITORING_AUTH=none: /monitoring (Asynqmon: pause, delete, replay queues) is open to anyone who reaches this port")
	}
	mon.Use(m.opsAuth()) // opsauth.go
	h := m.monitorErrors(adaptor.HTTPHandler(m.monitor))
	app.All("/monitoring", h)
	app.All("/monitoring/*", h)

	if err := m.openapiRoute(app); err != nil {
		return err
	}
	m.orch.routes(app)
	m.buffer.routes(app)
	if err := m.availabilityRoutes(app); err != nil {
		return err
	}
	if err := m.holdsRoutes(app); err != nil {
		return err
	}
	m.tiers.routes(app, m.Config.NodeRedBasePath) // slotcache.go
	m.shadow.routes(app)                          // shadow.go
	if err := m.holdStreamRoutes(app); err != nil {
		return err
	}
	return m.booking.routes(app, m.Config.NodeRedBasePath)
}

// monitoringAudit logs every request to /monitoring that can change
// something (anything but GET and HEAD), after it ran, with the status it
// was answered and the basic-auth user if any. An error of the routes
// after it (a refused credential, an Asynqmon failure) is answered here,
// by the app's error handler, so that the status logged is the one sent:
// a refused write reads 401, not 200.
func (m *Main) monitoringAudit(c *fiber.Ctx) error {
	c.Set(fiber.HeaderXFrameOptions, "DENY") // Asynqmon's writes are buttons: no framing (clickjacking)
	c.Set(fiber.HeaderContentSecurityPolicy, "frame-ancestors 'none'")
	method := c.Method()
	if method == fiber.MethodGet || method == fiber.MethodHead {
		return c.Next()
	}
	if err := c.Next(); err != nil {
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	user, _ := c.Locals("username").(string)
	m.Logger.Warn("monitoring write", "method", strings.Clone(method), "path", strings.Clone(c.Path()),
		"status", c.Response().StatusCode(), "user", strings.Clone(user), "request_id", web.RequestID(c))
	return nil
}

type readiness struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	// Degraded names what fails while the instance still serves most
	// requests (ready stays true): redis_master_unreachable.
	Degraded string            `json:"degraded,omitempty"`
	Checks   map[string]string `json:"checks"`
}

// Readiness reason codes: /readyz answers these only — never an address or
// an error text, which go to the log.
const (
	reasonRedis     = "redis_unavailable"
	reasonAsynq     = "asynq_stopped"
	reasonLifecycle = "not_serving"

	degradedMaster = "redis_master_unreachable"
)

// readyzTimeout is /readyz's own budget for its Redis ping.
const readyzTimeout = time.Second

// readyz: 200 when Redis answers and the Asynq dependencies run; 503 with
// reason codes otherwise (also from the moment shutdown begins). The cause
// of a failed check is logged, not answered: /readyz is unauthenticated.
func (m *Main) readyz(c *fiber.Ctx) error {
	r := readiness{Ready: true, Checks: map[string]string{"redis": "ok", "asynq": "ok"}}
	ctx, cancel := context.WithTimeout(c.UserContext(), readyzTimeout)
	defer cancel()
	var reasons []string
	switch up, down, err := m.redis.pingMasters(ctx); {
	case err != nil:
		r.Checks["redis"] = "unavailable"
		reasons = append(reasons, reasonRedis)
		m.Logger.Warn("readyz: redis check failed", "redis", m.redis.Mode, "err", err)
	case len(down) > 0:
		// A cluster with a master down still serves the slots of the
		// others; every instance sees the same cluster, so answering 503
		// would take them all out and turn a partial outage into a full
		// one. Ready, degraded, and said.
		r.Checks["redis"] = "degraded"
		r.Degraded = degradedMaster
		m.Logger.Warn("readyz: redis cluster master unreachable; the keys of its slots answer 503 until it or a replica is back",
			"masters_up", up, "masters_down", strings.Join(down, ","))
	}
	if !m.rt.Running() {
		r.Checks["asynq"] = "stopped"
		reasons = append(reasons, reasonAsynq)
	}
	if !m.ready.Load() {
		r.Checks["lifecycle"] = "not_serving"
		reasons = append(reasons, reasonLifecycle)
	}
	if len(reasons) > 0 {
		r.Ready, r.Reason = false, strings.Join(reasons, ",")
		return c.Status(fiber.StatusServiceUnavailable).JSON(r)
	}
	return c.JSON(r)
}
