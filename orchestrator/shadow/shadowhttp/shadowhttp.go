// Package shadowhttp is the shadow mode's HTTP face: the kit's mirror
// (POST /api/shadow/mirror), the report (GET /api/shadow/report) and the
// /switch-over page. A mirror is replayed through the dry instance's own
// Fiber handler in process (no socket, no second listener), timed, and
// compared with the original's answer it carries.
package shadowhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/shadow"
)

// Recorder is what the handlers need of *shadow.Recorder.
type Recorder interface {
	Record(ctx context.Context, r shadow.Result, dropped int) error
	Report(ctx context.Context) (contracts.ShadowReport, error)
	Now() time.Time
}

// Config wires the handlers.
type Config struct {
	// Dry answers a replayed request (the dry instance's Fiber handler).
	Dry fasthttp.RequestHandler
	// Recorder keeps the comparisons.
	Recorder Recorder
	// Metrics counts them (nil: none).
	Metrics *shadow.Metrics
	// Auth guards every route (the monitoring credentials).
	Auth fiber.Handler
	// Timeout bounds one dry run. Default 30 s.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Handlers are the shadow routes.
type Handlers struct{ cfg Config }

// New checks cfg.
func New(cfg Config) (*Handlers, error) {
	if cfg.Dry == nil || cfg.Recorder == nil || cfg.Auth == nil {
		return nil, errors.New("shadowhttp: Dry, Recorder and Auth are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Handlers{cfg: cfg}, nil
}

// PagePath is the HTML report.
const PagePath = "/switch-over"

// Register mounts the routes.
func Register(app *fiber.App, h *Handlers) {
	app.Post(contracts.ShadowMirrorPath, h.cfg.Auth, h.Mirror)
	app.Get(contracts.ShadowReportPath, h.cfg.Auth, h.Report)
	app.Get(PagePath, h.cfg.Auth, h.Page)
}

// passHeaders are the request headers a replay keeps (as the kit forwards
// them to flowgate).
var passHeaders = map[string]bool{"content-type": true, "accept": true, "authorization": true, "x-request-id": true,
	"user-agent": true, "traceparent": true, "x-forwarded-for": true}

// Mirror compares flowgate's dry answer to the mirrored request with the
// original's: 200 ShadowMirrorAnswer; 400 for a malformed envelope or an
// endpoint the kit does not have; 422 for one never shadowed.
func (h *Handlers) Mirror(c *fiber.Ctx) error {
	var env contracts.ShadowMirror
	if err := json.Unmarshal(c.Body(), &env); err != nil { // the parser's text stays out of the answer
		return contracts.Wrap(contracts.CodeInvalid, "shadow.Mirror", err, "malformed mirror envelope: not the kit's JSON")
	}
	ep, ok := shadow.Lookup(env.Endpoint)
	switch {
	case !ok:
		return contracts.Errorf(contracts.CodeInvalid, "endpoint %q is not one of the kit's", env.Endpoint)
	case !ep.Shadowed:
		return contracts.Errorf(contracts.CodeInvalid, "endpoint %q is never shadowed (it acts on Redis itself)", env.Endpoint)
	case env.Original.Status < 100 || env.Original.Status > 599 || !strings.HasPrefix(env.Path, "/") || env.Dropped < 0:
		return contracts.Errorf(contracts.CodeInvalid, "the envelope needs original.status, an absolute path and dropped ≥ 0")
	}
	status, body, took := h.replay(c.UserContext(), env)
	res := shadow.Compare(ep.Name, h.cfg.Recorder.Now(),
		shadow.Answer{Status: env.Original.Status, Body: env.Original.Body, Latency: time.Duration(env.Original.MS * float64(time.Millisecond))},
		shadow.Answer{Status: status, Body: body, Latency: took})
	if err := h.cfg.Recorder.Record(c.UserContext(), res, env.Dropped); err != nil {
		return fmt.Errorf("shadow mirror: %w", err)
	}
	if h.cfg.Metrics != nil {
		h.cfg.Metrics.Observe(res, env.Dropped)
	}
	return c.JSON(contracts.ShadowMirrorAnswer{Endpoint: ep.Name, Compared: true, Identical: res.Identical,
		Superset: res.Superset, Status: status})
}

// replay runs the mirrored request through the dry instance.
func (h *Handlers) replay(ctx context.Context, env contracts.ShadowMirror) (int, []byte, time.Duration) {
	var req fasthttp.Request
	req.Header.SetMethod(env.Method)
	q := env.Query
	if q != "" && !strings.HasPrefix(q, "?") {
		q = "?" + q
	}
	req.SetRequestURI(env.Path + q)
	for k, v := range env.Headers {
		if passHeaders[strings.ToLower(k)] {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set(contracts.ShadowHeader, "1")
	req.SetBody(env.Body)
	var fctx fasthttp.RequestCtx
	fctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.cfg.Dry(&fctx)
	}()
	t := time.NewTimer(h.cfg.Timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		h.cfg.Logger.Warn("shadow: the dry run did not answer in time", "endpoint", env.Endpoint, "timeout", h.cfg.Timeout)
		<-done // the handler owns fctx until it returns
	case <-ctx.Done():
		<-done
	}
	took := time.Since(start)
	return fctx.Response.StatusCode(), append([]byte(nil), fctx.Response.Body()...), took
}

// Report answers the report as JSON.
func (h *Handlers) Report(c *fiber.Ctx) error {
	rep, err := h.report(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(rep)
}

func (h *Handlers) report(ctx context.Context) (contracts.ShadowReport, error) {
	rep, err := h.cfg.Recorder.Report(ctx)
	if err != nil {
		return rep, fmt.Errorf("shadow report: %w", err)
	}
	return rep, nil
}
