// Package bufferhttp serves the work buffer's HTTP API under /api/buffer:
// enqueue (single or batch), stats, message lookup, the DLQ and the
// circuit breakers, behind a bearer token compared in constant time.
// Errors are *contracts.Error values rendered by flowgate's one error
// handler (sidecar/web), with the seed's codes.
package bufferhttp

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// Prefix is where the API is mounted.
const Prefix = "/api/buffer"

// Config configures the API.
type Config struct {
	// Token is the bearer token every route requires. Required.
	Token string
	// Events serves GET /api/buffer/events; nil leaves the route out.
	Events fiber.Handler
	// RequestTimeout bounds every route but the event stream, so a hung
	// Redis answers 503 PERSISTENCE_FAILURE in time; 0: DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// DefaultRequestTimeout is Config.RequestTimeout's default.
const DefaultRequestTimeout = 2 * time.Second

// Buffer is what the API needs of the work buffer; *buffer.Buffer is the
// one implementation (a decorator, e.g. an audit log, can wrap it).
type Buffer interface {
	Enqueue(ctx context.Context, req contracts.BufferEnqueueRequest) (buffer.Enqueued, error)
	EnqueueBatch(ctx context.Context, reqs []contracts.BufferEnqueueRequest) ([]buffer.Enqueued, []error, error)
	Stats(ctx context.Context) (contracts.BufferStats, error)
	Get(ctx context.Context, id string) (*buffer.Message, error)
	List(ctx context.Context, q buffer.ListQuery) (contracts.BufferMessageList, error)
	DLQList(ctx context.Context, limit int, cursor string) (contracts.BufferDLQList, error)
	DLQCount(ctx context.Context) (int64, error)
	DLQStats(ctx context.Context) (contracts.BufferDLQStats, error)
	Replay(ctx context.Context, id string) error
	DeleteDLQ(ctx context.Context, id string) error
	Circuits() []contracts.BufferCircuit
	ResetCircuit(typ string) error
}

// Handlers serve the API on a Buffer.
type Handlers struct {
	buf   Buffer
	token []byte
	cfg   Config
}

// New validates cfg.
func New(b Buffer, cfg Config) (*Handlers, error) {
	if b == nil {
		return nil, errors.New("bufferhttp: a buffer is required")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("bufferhttp: the bearer token must be at least 16 characters")
	}
	cfg.RequestTimeout = valutil.PositiveOrDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	return &Handlers{buf: b, token: []byte(cfg.Token), cfg: cfg}, nil
}

// Register mounts the routes on r.
func Register(r fiber.Router, h *Handlers) {
	g := r.Group(Prefix, h.auth)
	if h.cfg.Events != nil {
		g.Get("/events", h.cfg.Events) // a stream: no request deadline
	}
	g.Use(web.Deadline(h.cfg.RequestTimeout))
	g.Post("/enqueue", h.enqueue)
	g.Get("/stats", h.stats)
	g.Get("/messages", h.messages)
	g.Get("/messages/:id", h.message)
	g.Get("/dlq", h.dlqList)
	g.Get("/dlq/count", h.dlqCount)
	g.Get("/dlq/stats", h.dlqStats)
	g.Post("/dlq/:id/replay", h.replay)
	g.Delete("/dlq/:id", h.dlqDelete)
	g.Get("/circuits", h.circuits)
	g.Post("/circuits/:type/reset", h.circuitReset)
}

// auth checks "Authorization: Bearer <token>" in constant time.
func (h *Handlers) auth(c *fiber.Ctx) error {
	got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), h.token) != 1 {
		return &contracts.Error{Code: contracts.CodeUnauthorized, Op: "bufferhttp.auth",
			Message: "a valid bearer token (BUFFER_API_TOKEN) is required"}
	}
	return c.Next()
}

// asInvalidMessage turns a body decoding error into INVALID_MESSAGE.
func asInvalidMessage(err error) error {
	var e *contracts.Error
	if errors.As(err, &e) && e.Code == contracts.CodeInvalid {
		return &contracts.Error{Code: contracts.CodeInvalidMessage, Op: "bufferhttp.enqueue", Message: e.Message, Details: e.Details, Err: e.Err}
	}
	return err
}

// queueFull adds Retry-After to a QUEUE_FULL answer.
func queueFull(c *fiber.Ctx, err error) error {
	if contracts.ErrorCode(err) == contracts.CodeBufferQueueFull {
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	return err
}

// enqueue takes one message, or {"messages":[...]} (≤ 1000).
func (h *Handlers) enqueue(c *fiber.Ctx) error {
	body, err := web.PlainBody(c)
	if err != nil {
		return asInvalidMessage(err)
	}
	// One decode for a single message: the batch probe runs only when the
	// body mentions "messages" at all.
	if bytes.Contains(body, []byte(`"messages"`)) {
		var probe struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := contracts.DecodeJSON(body, &probe); err != nil {
			return asInvalidMessage(err)
		}
		if len(probe.Messages) > 0 && !bytes.Equal(bytes.TrimSpace(probe.Messages), []byte("null")) {
			return h.enqueueBatch(c, probe.Messages)
		}
	}
	req, err := decodeOne(body)
	if err != nil {
		return asInvalidMessage(err)
	}
	e, err := h.buf.Enqueue(c.UserContext(), req)
	if err != nil {
		return queueFull(c, err)
	}
	return accepted(c, e)
}

// decodeOne decodes a single message. json.Unmarshal accepts exactly the
// bodies contracts.DecodeJSON accepts (the request has no interface
// fields, where DecodeJSON's UseNumber would matter) at less cost; a body
// it refuses is decoded again by DecodeJSON for its error.
func decodeOne(body []byte) (contracts.BufferEnqueueRequest, error) {
	var req contracts.BufferEnqueueRequest
	if json.Unmarshal(body, &req) == nil {
		return req, nil
	}
	req = contracts.BufferEnqueueRequest{}
	err := contracts.DecodeJSON(body, &req)
	return req, err
}

// accepted answers 202 with the BufferEnqueueResponse of e, written
// without reflection when its strings need no escaping (always, for the
// ids and queue names the buffer hands out).
func accepted(c *fiber.Ctx, e buffer.Enqueued) error {
	c.Status(fiber.StatusAccepted)
	if !plain(e.MessageID) || !plain(e.Queue) {
		return c.JSON(contracts.BufferEnqueueResponse{
			Success: true, MessageID: e.MessageID, State: contracts.BufferPending, Priority: e.Priority, Queue: e.Queue})
	}
	var a [192]byte
	b := append(a[:0], `{"success":true,"messageId":"`...)
	b = append(b, e.MessageID...)
	b = append(b, `","state":"`...)
	b = append(b, contracts.BufferPending...)
	b = append(b, `","priority":`...)
	b = strconv.AppendInt(b, int64(e.Priority), 10)
	b = append(b, `,"queue":"`...)
	b = append(b, e.Queue...)
	b = append(b, `"}`...)
	c.Response().AppendBody(b)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

// plain reports whether s is a JSON string body as it is: printable
// ASCII, none of the characters json.Marshal escapes (" \ < > &).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func (h *Handlers) enqueueBatch(c *fiber.Ctx, raw json.RawMessage) error {
	var items []json.RawMessage
	if err := contracts.DecodeJSON(raw, &items); err != nil {
		return &contracts.Error{Code: contracts.CodeInvalidMessage, Op: "bufferhttp.enqueue",
			Message: "messages must be an array of message objects", Details: map[string]any{"field": "messages"}}
	}
	if len(items) == 0 || len(items) > buffer.MaxBatch {
		return &contracts.Error{Code: contracts.CodeInvalidMessage, Op: "bufferhttp.enqueue",
			Message: "a batch holds 1 to " + strconv.Itoa(buffer.MaxBatch) + " messages, got " + strconv.Itoa(len(items)),
			Details: map[string]any{"field": "messages", "max": buffer.MaxBatch}}
	}
	reqs := make([]contracts.BufferEnqueueRequest, len(items))
	bad := make([]error, len(items))
	good := make([]contracts.BufferEnqueueRequest, 0, len(items))
	idx := make([]int, 0, len(items))
	for i, it := range items {
		if err := contracts.DecodeJSON(it, &reqs[i]); err != nil {
			bad[i] = itemError(i, it, err)
			continue
		}
		good = append(good, reqs[i])
		idx = append(idx, i)
	}
	out, errs, err := h.buf.EnqueueBatch(c.UserContext(), good)
	if err != nil {
		return queueFull(c, err)
	}
	done := make([]buffer.Enqueued, len(items))
	for j, i := range idx {
		bad[i], done[i] = errs[j], out[j]
	}
	res := contracts.BufferBatchResponse{Results: make([]contracts.BufferItemResult, len(items))}
	for i := range items {
		r := contracts.BufferItemResult{Index: i}
		if bad[i] != nil {
			body := contracts.NewErrorResponse(bad[i], "").Error
			r.Error = &body
			res.Failed++
		} else {
			r.Success, r.MessageID, r.Queue = true, done[i].MessageID, done[i].Queue
			res.Enqueued++
		}
		res.Results[i] = r
	}
	res.Success = res.Failed == 0
	return c.JSON(res)
}

// itemError names the batch item whose JSON did not decode.
func itemError(i int, raw json.RawMessage, err error) error {
	field := "messages[" + strconv.Itoa(i) + "]"
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return &contracts.Error{Code: contracts.CodeInvalidMessage, Op: "bufferhttp.enqueue", Err: err,
			Message: field + " must be a message object", Details: map[string]any{"field": field}}
	}
	return asInvalidMessage(err)
}

func param(c *fiber.Ctx, name string) string { return strings.Clone(c.Params(name)) }

func (h *Handlers) stats(c *fiber.Ctx) error {
	st, err := h.buf.Stats(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(st)
}

func (h *Handlers) message(c *fiber.Ctx) error {
	m, err := h.buf.Get(c.UserContext(), param(c, "id"))
	if err != nil {
		return err
	}
	// A panic's stack (errors[].stack) stays in the Go API and Redis: an
	// HTTP answer never carries handler internals.
	for i := range m.Errors {
		m.Errors[i].Stack = ""
	}
	return c.JSON(m)
}

func (h *Handlers) dlqList(c *fiber.Ctx) error {
	if err := knownParams(c, "limit", "cursor"); err != nil {
		return err
	}
	limit := 50
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return &contracts.Error{Code: contracts.CodeInvalid, Message: "limit must be an integer 1..500", Details: map[string]any{"field": "limit"}}
		}
		limit = n
	}
	l, err := h.buf.DLQList(c.UserContext(), limit, strings.Clone(c.Query("cursor")))
	if err != nil {
		return err
	}
	return c.JSON(l)
}

func (h *Handlers) dlqCount(c *fiber.Ctx) error {
	n, err := h.buf.DLQCount(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(contracts.BufferDLQCount{Count: n})
}

func (h *Handlers) dlqStats(c *fiber.Ctx) error {
	st, err := h.buf.DLQStats(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(st)
}

func (h *Handlers) replay(c *fiber.Ctx) error {
	id := param(c, "id")
	if err := h.buf.Replay(c.UserContext(), id); err != nil {
		return err
	}
	return c.JSON(contracts.BufferActionResponse{Success: true, MessageID: id, State: string(contracts.BufferPending)})
}

func (h *Handlers) dlqDelete(c *fiber.Ctx) error {
	id := param(c, "id")
	if err := h.buf.DeleteDLQ(c.UserContext(), id); err != nil {
		return err
	}
	return c.JSON(contracts.BufferActionResponse{Success: true, MessageID: id, State: "deleted"})
}

func (h *Handlers) circuits(c *fiber.Ctx) error {
	return c.JSON(contracts.BufferCircuitsResponse{Circuits: h.buf.Circuits()})
}

func (h *Handlers) circuitReset(c *fiber.Ctx) error {
	typ := param(c, "type")
	if err := h.buf.ResetCircuit(typ); err != nil {
		return err
	}
	return c.JSON(contracts.BufferActionResponse{Success: true, Type: typ, State: "CLOSED"})
}
