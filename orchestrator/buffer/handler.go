package buffer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// Message is the seed's BufferMessage.
type Message = contracts.BufferMessage

// Defaults of a handler built on Base, and of Config.DefaultMaxRetries.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxRetries = 3
)

// Unset is what Handler.MaxRetries answers to leave the count to the
// buffer, and NoRetries what Config.DefaultMaxRetries holds for none (its
// zero value means DefaultMaxRetries).
const (
	Unset     = -1
	NoRetries = -1
)

// ErrNotImplemented is what Base.Process returns: a handler must implement
// Process.
var ErrNotImplemented = errors.New("buffer: handler does not implement Process")

// Handler processes the messages of one type (seed MessageHandler).
type Handler interface {
	Type() string
	// Timeout bounds one Process call; past it the attempt fails with
	// MESSAGE_TIMEOUT.
	Timeout() time.Duration
	// Idempotent says a repeated Process is harmless. A non-idempotent
	// handler's timed-out attempt may have taken effect, so it is not
	// retried: it goes to the DLQ for an operator to replay.
	Idempotent() bool
	// MaxRetries is the retries after the first attempt (a message's own
	// maxRetries, when set, wins); negative: unset, the buffer's
	// Config.DefaultMaxRetries (BUFFER_MAX_RETRIES) applies.
	MaxRetries() int
	// Validate checks a payload at enqueue and again before processing; a
	// *ValidationError (or any error) makes the message INVALID_MESSAGE.
	Validate(payload json.RawMessage) error
	// Process does the work; its result is kept with the completed message.
	Process(ctx context.Context, msg *Message) (any, error)
	// OnError decides whether a failed attempt is retried.
	OnError(err error, msg *Message) (retry bool)
	OnBeforeProcess(ctx context.Context, msg *Message) error
	OnAfterProcess(ctx context.Context, msg *Message, result any) error
}

// ContextHonourer is implemented by a handler whose Process returns
// promptly once its context is done (all its waiting takes the context:
// an HTTP request, a Redis command). The buffer calls such a handler on
// the worker's own goroutine and takes its answer as it comes: an error
// once Timeout() has passed is MESSAGE_TIMEOUT, a result is kept. Any
// other handler is called on a goroutine of its own, so that one that
// ignores its context still fails at Timeout() and frees its worker; that
// goroutine costs each message a hand-off and a wake-up, which on busy
// cores is time the message holds its type's place (docs/buffer.md
// "Handlers and their context").
type ContextHonourer interface {
	HonoursContext() bool
}

// honoursContext says whether h is called inline.
func honoursContext(h Handler) bool {
	c, ok := h.(ContextHonourer)
	return ok && c.HonoursContext()
}

// ConcurrencyCapper is implemented by a handler whose type has a
// concurrency cap of its own (a declared type's `concurrency:`), read
// per message so that a reloaded file applies at once; 0 or less: the
// buffer's Config.TypeConcurrency.
type ConcurrencyCapper interface {
	MaxConcurrency() int
}

// VisibilityTimeouter is implemented by a handler whose type has a
// visibility timeout of its own (a declared type's visibilityTimeout:):
// how long one attempt may hold a message before it is taken as stuck —
// cut and retried — applied at enqueue as the Asynq task's timeout. 0 or
// less, or not implemented: Timeout() + 10 s. A crashed instance's
// messages come back after Asynq's lease (30 s) whatever this says.
type VisibilityTimeouter interface {
	VisibilityTimeout() time.Duration
}

// visibility is h's visibility timeout.
func visibility(h Handler) time.Duration {
	if v, ok := h.(VisibilityTimeouter); ok {
		if d := v.VisibilityTimeout(); d > 0 {
			return d
		}
	}
	return h.Timeout() + 10*time.Second
}

// Base gives a handler every method but the ones it needs: embed it and
// write Process (and Validate when the payload has a shape).
type Base struct {
	Name          string
	TimeoutAfter  time.Duration // 0 → DefaultTimeout
	Retries       int           // 0 → the buffer's default (Config.DefaultMaxRetries); negative → no retries
	NotIdempotent bool
}

// Type implements Handler.
func (b Base) Type() string { return b.Name }

// Timeout implements Handler.
func (b Base) Timeout() time.Duration {
	if b.TimeoutAfter <= 0 {
		return DefaultTimeout
	}
	return b.TimeoutAfter
}

// Idempotent implements Handler.
func (b Base) Idempotent() bool { return !b.NotIdempotent }

// MaxRetries implements Handler: Unset for Retries 0, 0 for a negative
// Retries.
func (b Base) MaxRetries() int {
	switch {
	case b.Retries < 0:
		return 0
	case b.Retries == 0:
		return Unset
	}
	return b.Retries
}

// Validate implements Handler: the payload must be a JSON object (seed
// "Payload must be an object").
func (b Base) Validate(payload json.RawMessage) error {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || p[0] != '{' || !json.Valid(p) {
		return &ValidationError{Field: "payload", Reason: "Payload must be an object"}
	}
	return nil
}

// Process implements Handler; a handler must override it.
func (b Base) Process(context.Context, *Message) (any, error) { return nil, ErrNotImplemented }

// OnError implements Handler with the seed's retry decision logic.
func (b Base) OnError(err error, _ *Message) bool { return Retryable(err) }

// OnBeforeProcess implements Handler.
func (b Base) OnBeforeProcess(context.Context, *Message) error { return nil }

// OnAfterProcess implements Handler.
func (b Base) OnAfterProcess(context.Context, *Message, any) error { return nil }

// Func is a handler from a process function over Base.
type Func struct {
	Base
	Fn func(ctx context.Context, msg *Message) (any, error)
}

// Process implements Handler.
func (f Func) Process(ctx context.Context, msg *Message) (any, error) {
	if f.Fn == nil {
		return nil, ErrNotImplemented
	}
	return f.Fn(ctx, msg)
}
