// Package bookinghttp serves the Node-RED booking endpoints over Fiber,
// under a base path (NODERED_BASE_PATH, default /chord/ortho-prd):
//
//	POST {base}/createPatient         → booking.Service.CreatePatient
//	POST {base}/createAppt            → booking.Service.CreateAppt (single or children[])
//	POST {base}/getApptSlots          → booking.Service.GetApptSlots
//	POST {base}/getGroupedApptSlots   → booking.Service.GetGroupedApptSlots
//	GET  {base}/queue-status          → booking.Service.QueueStatus (?page, ?pageSize, ?cursor,
//	                                    ?operationId, ?sessionId, ?uui)
//	POST {base}/bookConsultation      → booking.Service.BookConsultation (200/202/207/500: consultation.go)
//
// Node-RED semantics are kept: createAppt answers 200 for every outcome —
// also for a body that is not JSON, has a field of the wrong type, is
// compressed or is larger than Config.MaxBody: those get the
// VALIDATION_ERROR shape (error_message says what was wrong). createPatient
// does the same with its failure shape (error_type VALIDATION_ERROR, 200).
// The IVA's text fields may come as JSON numbers (sessionId, uui,
// phoneNumber: their text), and an optional field of a wrong type falls
// back to its default, logged at debug, as the original read them
// (contracts/booking_lenient.go). The slot endpoints have no documented
// error shape for bad input: a body that is not JSON is a 400 flowgate
// error envelope (an empty body, or a JSON value that is not an object,
// means all defaults). queue-status answers {"error": …} with 200 when the queue
// cannot be read, as the production flow does; a bad page or cursor, or a
// malformed or empty lookup key, is a 400 envelope (code invalid,
// details.field). Who sees what of the queue is Config.Operator's call:
// the whole queue with names for the operator, otherwise only the
// operations the caller names, without names (contracts.QueueStatusQuery);
// a request without the operator's credentials is never refused for it. Bodies above the app's own limit (web.Options.BodyLimit,
// 1 MiB by default) are refused by the server before any route runs, with
// the 413 envelope; keep MaxBody below it so the booking shapes apply.
package bookinghttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// DefaultBasePath is NODERED_BASE_PATH's default.
const DefaultBasePath = booking.DefaultBasePath

// DefaultMaxBody bounds a booking request body: far above any real one
// (a batch of children with notes is a few KB).
const DefaultMaxBody = 64 << 10

// Service is what the handlers need; *booking.Service implements it.
type Service interface {
	CreatePatient(ctx context.Context, req contracts.CreatePatientRequest) booking.Answer
	MalformedPatient(err error) booking.Answer
	CreateAppt(ctx context.Context, req contracts.CreateApptRequest) booking.Answer
	MalformedAppt(err error) booking.Answer
	GetApptSlots(ctx context.Context, req contracts.GetApptSlotsRequest) booking.Answer
	GetGroupedApptSlots(ctx context.Context, req contracts.GetGroupedApptSlotsRequest) booking.Answer
	QueueStatus(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error)
}

// Config configures the handlers.
type Config struct {
	// MaxBody bounds request bodies; larger ones get the endpoint's
	// validation answer. Default DefaultMaxBody.
	MaxBody int
	// Context is the base of every request's context; cancel it at
	// shutdown. Default context.Background(). Cloud9 calls are not tied
	// to the client connection: a caller hanging up must not abandon a
	// booking half made.
	Context context.Context
	// RequestTimeout is each request's deadline (web.Deadline on
	// Context): it bounds one request's work (limiter waits, Cloud9
	// calls). Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Operator reports whether a request carries the operator's
	// credentials (the monitoring basic auth): queue-status then shows the
	// whole queue with names. nil: no request is the operator's. It must
	// not refuse or answer the request itself.
	Operator func(c *fiber.Ctx) bool
}

// DefaultRequestTimeout is Config.RequestTimeout's default: the sync
// budget plus Cloud9's own timeouts.
const DefaultRequestTimeout = 60 * time.Second

// Handlers serve the booking endpoints.
type Handlers struct {
	svc Service
	cfg Config
}

// New returns the handlers.
func New(svc Service, cfg Config) (*Handlers, error) {
	if svc == nil {
		return nil, errors.New("bookinghttp: nil Service")
	}
	cfg.MaxBody = valutil.ValOrDefault(cfg.MaxBody, DefaultMaxBody)
	if cfg.MaxBody < 1 {
		return nil, fmt.Errorf("bookinghttp: MaxBody must be positive, got %d", cfg.MaxBody)
	}
	cfg.Context = valutil.ValOrDefault(cfg.Context, context.Background())
	cfg.RequestTimeout = valutil.ValOrDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	return &Handlers{svc: svc, cfg: cfg}, nil
}

// NormalizeBasePath returns p with one leading slash and no trailing one;
// "" is DefaultBasePath. "/" mounts at the root.
func NormalizeBasePath(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return DefaultBasePath, nil
	}
	if strings.ContainsAny(p, " ?#:*") {
		return "", fmt.Errorf("bookinghttp: base path %q must be a plain path such as /chord/ortho-prd", p)
	}
	p = "/" + strings.Trim(p, "/")
	if p == "/" {
		return "", nil
	}
	return p, nil
}

// Register mounts the endpoints on r under basePath ("" = DefaultBasePath).
func Register(r fiber.Router, h *Handlers, basePath string) error {
	base, err := NormalizeBasePath(basePath)
	if err != nil {
		return err
	}
	d := deadline(h.cfg)
	r.Post(base+"/createPatient", d, h.createPatient)
	r.Post(base+"/createAppt", d, h.createAppt)
	r.Post(base+"/getApptSlots", d, h.getApptSlots)
	r.Post(base+"/getGroupedApptSlots", d, h.getGroupedApptSlots)
	r.Get(base+"/queue-status", d, h.queueStatus)
	r.Post(base+"/bookConsultation", d, h.bookConsultation)
	return nil
}

// deadline is every route's web.Deadline, on Config.Context instead of
// the connection's context: a caller hanging up must not abandon a
// booking half made.
func deadline(cfg Config) fiber.Handler {
	d := web.Deadline(cfg.RequestTimeout)
	return func(c *fiber.Ctx) error {
		c.SetUserContext(cfg.Context)
		return d(c)
	}
}

// send writes a's body with the status this layer chooses: 200 for every
// answer, 500 when the endpoint could not do its work (the original's
// createPatient and slot answers, docs/reference/nodered-endpoints.md §1 when Cloud9 or the queue is down).
func send(c *fiber.Ctx, a booking.Answer) error {
	status := fiber.StatusOK
	if a.Failed {
		status = fiber.StatusInternalServerError
	}
	return c.Status(status).JSON(a.Body)
}

// decode reads the body into v: identity encoding only, at most MaxBody
// bytes, one JSON value. optional: an empty body leaves v as it is.
func (h *Handlers) decode(c *fiber.Ctx, v any, optional bool) error {
	body, err := web.PlainBody(c)
	if err != nil {
		return err
	}
	if len(body) > h.cfg.MaxBody {
		return contracts.Errorf(contracts.CodeInvalid, "request body is %d bytes; at most %d are accepted", len(body), h.cfg.MaxBody)
	}
	if optional && len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	return contracts.DecodeJSON(body, v)
}

func (h *Handlers) createPatient(c *fiber.Ctx) error {
	var req contracts.CreatePatientRequest
	if err := h.decode(c, &req, false); err != nil {
		return send(c, h.svc.MalformedPatient(err))
	}
	h.ignored(c, req.Ignored)
	ctx := c.UserContext()
	return send(c, h.svc.CreatePatient(ctx, req))
}

func (h *Handlers) createAppt(c *fiber.Ctx) error {
	var req contracts.CreateApptRequest
	if err := h.decode(c, &req, false); err != nil {
		return send(c, h.svc.MalformedAppt(err))
	}
	h.ignored(c, req.Ignored)
	ctx := c.UserContext()
	return send(c, h.svc.CreateAppt(ctx, req))
}

func (h *Handlers) getApptSlots(c *fiber.Ctx) error {
	var req contracts.GetApptSlotsRequest
	if err := h.decode(c, &req, true); err != nil {
		return err
	}
	h.ignored(c, req.Ignored)
	ctx := c.UserContext()
	return send(c, h.svc.GetApptSlots(ctx, req))
}

func (h *Handlers) getGroupedApptSlots(c *fiber.Ctx) error {
	var req contracts.GetGroupedApptSlotsRequest
	if err := h.decode(c, &req, true); err != nil {
		return err
	}
	h.ignored(c, req.Ignored)
	ctx := c.UserContext()
	return send(c, h.svc.GetGroupedApptSlots(ctx, req))
}

// ignored logs, at debug, the optional fields of a wrong type a request
// decoded without (contracts' lenient decoding): their defaults apply, as
// in the original.
func (h *Handlers) ignored(c *fiber.Ctx, fields []string) {
	if len(fields) > 0 {
		h.cfg.Logger.Debug("request fields of a wrong type ignored; their defaults apply",
			"path", strings.Clone(c.Path()), "fields", fields)
	}
}

// queueError is queue-status' answer when the queue cannot be read.
type queueError struct {
	Error string `json:"error"`
}

// queueKeys are queue-status' lookup parameters.
var queueKeys = []string{"operationId", "sessionId", "uui"}

func (h *Handlers) queueStatus(c *fiber.Ctx) error {
	// Every answer is one caller's own view (or the operator's): no shared
	// cache may keep it.
	c.Set(fiber.HeaderCacheControl, "no-store")
	var q contracts.QueueStatusQuery
	for name, dst := range map[string]*int{"page": &q.Page, "pageSize": &q.PageSize} {
		s := strings.TrimSpace(c.Query(name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return contracts.FieldErrorf(contracts.CodeInvalid, name, "%s must be a positive integer", name)
		}
		*dst = n
	}
	// Copies: fasthttp reuses the request's memory once the handler
	// returns, and the queue read may outlive it (booking's budget).
	q.Cursor = strings.Clone(strings.TrimSpace(c.Query("cursor")))
	args := c.Context().QueryArgs()
	for i, dst := range []*string{&q.OperationID, &q.SessionID, &q.UUI} {
		name := queueKeys[i]
		if !args.Has(name) {
			continue
		}
		if len(args.PeekMulti(name)) > 1 {
			return contracts.FieldErrorf(contracts.CodeInvalid, name, "%s may be given once", name)
		}
		*dst = strings.Clone(strings.TrimSpace(c.Query(name)))
		if *dst == "" { // named but empty: a caller that lost its key, not one that wants nothing
			return contracts.FieldErrorf(contracts.CodeInvalid, name, "%s must not be empty", name)
		}
	}
	q.Operator = h.cfg.Operator != nil && h.cfg.Operator(c)
	ctx := c.UserContext()
	resp, err := h.svc.QueueStatus(ctx, q)
	if contracts.ErrorCode(err) == contracts.CodeInvalid {
		return err
	}
	if err != nil {
		h.cfg.Logger.Warn("queue-status: queue unreadable", "err", err)
		return c.JSON(queueError{Error: "queue status is unavailable"})
	}
	return c.JSON(resp)
}
