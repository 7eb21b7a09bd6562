package holdstream

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// maxIDLen bounds clientId and appointmentTypeId.
const maxIDLen = 128

// Register mounts GET and DELETE /v1/holds/stream (DELETE:
// ?clientId=&streamToken=, the token of the stream's init event).
func Register(app fiber.Router, h *Hub) {
	app.Get("/v1/holds/stream", h.Handler())
	app.Delete("/v1/holds/stream", h.CancelHandler())
}

func invalid(field, format string, args ...any) error {
	return contracts.FieldErrorf(contracts.CodeInvalid, field, format, args...)
}

// id reads a required identifier query parameter (a copy: Fiber's is borrowed).
func id(c *fiber.Ctx, name string) (string, error) {
	v := c.Query(name)
	switch {
	case v == "":
		return "", invalid(name, "%s is required", name)
	case len(v) > maxIDLen || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", invalid(name, "%s must be at most %d printable characters", name, maxIDLen)
	}
	return strings.Clone(v), nil
}

// lease reads leaseMs: the default when absent; a larger one than
// MaxLease is clamped to it, as docs/holds.md#the-live-stream-sse says ("max 1 hour"; the init
// event's leaseMs is the lease in force); not an integer, or below
// MinLease, is refused.
func (h *Hub) lease(c *fiber.Ctx) (time.Duration, error) {
	v := c.Query("leaseMs")
	if v == "" {
		return h.cfg.DefaultLease, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && ms == math.MaxInt64 {
		err = nil // an integer, only too large for int64: clamped below
	}
	if err != nil || ms < h.cfg.MinLease.Milliseconds() {
		return 0, invalid("leaseMs", "leaseMs must be an integer of at least %d (a larger one than %d is clamped to it)",
			h.cfg.MinLease.Milliseconds(), h.cfg.MaxLease.Milliseconds())
	}
	if ms >= h.cfg.MaxLease.Milliseconds() {
		return h.cfg.MaxLease, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Handler serves GET /v1/holds/stream?appointmentTypeId=&clientId=&leaseMs=.
// Bad input answers 400 naming the field, an unknown type what Validate
// says (404), Redis down or shutting down 503 — all before the stream
// starts; a failing snapshot later ends the stream with init-failed.
func (h *Hub) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		typeID, err := id(c, "appointmentTypeId")
		if err != nil {
			return err
		}
		clientID, err := id(c, "clientId")
		if err != nil {
			return err
		}
		lease, err := h.lease(c)
		if err != nil {
			return err
		}
		if !sse.Hijackable(c) {
			return invalid("Connection", "a stream needs a keep-alive HTTP/1.1 connection (no Connection: close)")
		}
		if h.cfg.Validate != nil {
			if err := h.cfg.Validate(c.UserContext(), typeID); err != nil {
				return err
			}
		}
		s, err := h.open(c.UserContext(), clientID, typeID, lease)
		if errors.Is(err, errClosed) {
			return contracts.Errorf(contracts.CodeUnavailable, "the server is shutting down")
		}
		if err != nil {
			return contracts.Wrap(contracts.CodeUnavailable, "holdstream.open", err, "the holds store could not answer")
		}
		sse.Detach(c, h.cfg.WriteTimeout, func(conn *sse.Conn) { h.serve(s, conn) })
		return nil
	}
}

// CancelHandler serves DELETE /v1/holds/stream?clientId=&streamToken=:
// the client's stream whose init event gave that streamToken ends with
// client-cancel wherever it is served; 204 either way (another client's
// stream, or a wrong token, is left alone: a clientId proves nothing).
func (h *Hub) CancelHandler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		clientID, err := id(c, "clientId")
		if err != nil {
			return err
		}
		token, err := id(c, "streamToken")
		if err != nil {
			return err
		}
		if err := h.Cancel(c.UserContext(), clientID, token); err != nil {
			return contracts.Wrap(contracts.CodeUnavailable, "holdstream.cancel", err, "the holds store could not answer")
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}
