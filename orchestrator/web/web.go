// Package web builds flowgate's Fiber application shell: the one error
// handler that maps contracts error codes to HTTP status, request ids,
// panic recovery, one structured log line per request, and the HTTP
// request metrics. Domain packages register their routes on the app it
// returns; their tests use the same shell so errors render identically.
package web

import (
	"errors"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
)

// HeaderRequestID is honoured when a client sends it and echoed otherwise.
const HeaderRequestID = "X-Request-ID"

// Options configure the app shell.
type Options struct {
	BodyLimit    int          // bytes; default 1 MiB
	Logger       *slog.Logger // default slog.Default()
	Registerer   prometheus.Registerer
	ReadTimeout  time.Duration // default 30s
	WriteTimeout time.Duration // default 30s (SSE routes manage their own)
	// ReduceMemoryUsage releases a connection's 4 KB read buffer between
	// requests and before a stream takes the connection over (fasthttp's
	// option): idle keep-alive connections and long streams hold none.
	ReduceMemoryUsage bool
}

// New returns a Fiber app with flowgate's error model and middleware.
func New(o Options) (*fiber.App, error) {
	if o.BodyLimit <= 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 30 * time.Second
	}
	var m *httpMetrics
	if o.Registerer != nil {
		var err error
		if m, err = newHTTPMetrics(o.Registerer); err != nil {
			return nil, err
		}
	}
	app := fiber.New(fiber.Config{
		AppName:               "flowgate",
		BodyLimit:             o.BodyLimit,
		DisableStartupMessage: true,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ReduceMemoryUsage:     o.ReduceMemoryUsage,
		ErrorHandler:          errorHandler(o.Logger, m),
	})
	// A hijacked connection (an SSE stream, sse.Detach) outlives its
	// hijack handler: the stream closes it itself on every path, and
	// fasthttp drops the request context, read buffer and goroutine it
	// would otherwise keep for the stream's whole life.
	app.Server().KeepHijackedConns = true
	app.Use(requestID)
	app.Use(accessLog(o.Logger, m))
	app.Use(recover.New(recover.Config{
		EnableStackTrace: true,
		StackTraceHandler: func(c *fiber.Ctx, e any) {
			o.Logger.Error("panic recovered", "request_id", RequestID(c), "panic", e, "stack", string(debug.Stack()))
		},
	}))
	return app, nil
}

type ridKey struct{}

// requestID honours a well-formed X-Request-ID (≤ 128 of [A-Za-z0-9._:-]) and
// otherwise generates one; it is echoed in the response header.
func requestID(c *fiber.Ctx) error {
	rid := c.Get(HeaderRequestID)
	if validRequestID(rid) {
		rid = utils.CopyString(rid) // borrowed from the request buffer; handlers keep it
	} else {
		rid = utils.UUIDv4()
	}
	c.Set(HeaderRequestID, rid)
	c.Locals(ridKey{}, rid)
	return c.Next()
}

func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if (b < 'a' || b > 'z') && (b < 'A' || b > 'Z') && (b < '0' || b > '9') && b != '.' && b != '_' && b != ':' && b != '-' {
			return false
		}
	}
	return true
}

// logPathKey is the Locals key of a path to log instead of the request's.
type logPathKey struct{}

// SetLogPath makes the request's log lines (access log, error logs) show
// path instead of the request's path: a route whose path carries a secret
// (a hold id, an appointment id) logs it redacted.
func SetLogPath(c *fiber.Ctx, path string) { c.Locals(logPathKey{}, path) }

// logPath is the path a request's log lines show (a copy: Fiber's is borrowed).
func logPath(c *fiber.Ctx) string {
	if p, ok := c.Locals(logPathKey{}).(string); ok {
		return p
	}
	return strings.Clone(c.Path())
}

// RequestID returns the request's id.
func RequestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(ridKey{}).(string); ok {
		return id
	}
	return ""
}

// ErrorHandler is the single place where an error becomes an HTTP status
// and the JSON envelope. *contracts.Error carries its code; Fiber's own
// errors (404 route, 413 body) are mapped by status; anything else is an
// internal error, logged with the request id and never shown.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler { return errorHandler(log, nil) }

// errorHandler is ErrorHandler; a request the HTTP server refused before
// any middleware ran (a body over the limit) gets its access-log line and
// metrics here, since accessLog never saw it.
func errorHandler(log *slog.Logger, m *httpMetrics) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		rid := RequestID(c)
		early := rid == ""
		var fe *fiber.Error
		if errors.As(err, &fe) {
			err = &contracts.Error{Code: contracts.CodeForStatus(fe.Code), Message: frameworkMessage(fe, early), Err: err}
		}
		code := contracts.ErrorCode(err)
		if early { // rejected before the middleware ran (body too large)
			rid = utils.UUIDv4()
			c.Set(HeaderRequestID, rid)
			defer func() {
				status := code.HTTPStatus()
				if m != nil {
					m.observe("rejected", methodLabel(c.Method()), strconv.Itoa(status), 0)
				}
				log.Warn("http request", "method", methodLabel(c.Method()), "route", "rejected", "path", strings.Clone(c.Path()),
					"status", status, "request_id", rid, "ip", c.IP(), "err", err.Error())
			}()
		}
		if code == contracts.CodeInternal {
			log.Error("internal error", "request_id", rid, "method", methodLabel(c.Method()), "path", logPath(c), "err", err)
		}
		if code == contracts.CodeUnavailable {
			log.Warn("dependency unavailable", "request_id", rid, "path", logPath(c), "err", err)
		}
		return c.Status(code.HTTPStatus()).JSON(contracts.NewErrorResponse(err, rid))
	}
}

// frameworkMessage is the message of an error Fiber or fasthttp raised.
// The HTTP server's own refusals (early: before any middleware ran) get a
// stable text per status — the parser's text ("error when reading request
// headers: …") is logged, never answered.
func frameworkMessage(fe *fiber.Error, early bool) string {
	if !early {
		return fe.Message
	}
	switch fe.Code {
	case fiber.StatusRequestTimeout:
		return "the request was not received within the server's read timeout"
	case fiber.StatusRequestHeaderFieldsTooLarge:
		return "the request line or headers are larger than the server accepts"
	case fiber.StatusBadRequest:
		return "malformed HTTP request"
	}
	return fe.Message
}

// accessLog writes one line per request and feeds the HTTP metrics. It
// runs the rest of the chain and the error handler first, so it sees the
// final status.
func accessLog(log *slog.Logger, m *httpMetrics) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		status := c.Response().StatusCode()
		route := c.Route().Path
		if status == fiber.StatusNotFound && route == "/" && c.Path() != "/" {
			route = "unmatched" // keep label cardinality bounded
		}
		lat := time.Since(start)
		method := methodLabel(c.Method())
		if m != nil {
			m.observe(route, method, strconv.Itoa(status), lat)
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		if !log.Enabled(c.UserContext(), level) { // the line's fields are not even built
			return nil
		}
		log.Log(c.UserContext(), level, "http request",
			"method", method, "route", route, "path", logPath(c), "status", status,
			"latency_ms", float64(lat.Microseconds())/1000, "request_id", RequestID(c), "ip", c.IP())
		return nil
	}
}
