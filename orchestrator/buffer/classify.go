package buffer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/flowgate/flowgate/contracts"
)

// ValidationError is a payload that can never be processed: never retried.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "Invalid message: " + e.Reason
	}
	return fmt.Sprintf("Invalid message: %s: %s", e.Field, e.Reason)
}

// StatusError is a downstream HTTP answer: 5xx, 429 and 408 are retried,
// other 4xx and every 3xx are not (flowgate follows no redirect, so the
// same request would get the same 3xx).
type StatusError struct {
	StatusCode int
	Body       string // first bytes of the answer, for the record
	Location   string // a 3xx's Location, for the record
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("downstream answered HTTP %d", e.StatusCode)
	if e.StatusCode >= 300 && e.StatusCode <= 399 {
		s += fmt.Sprintf(", a redirect to %q (not followed)", e.Location)
	}
	if e.Body == "" {
		return s
	}
	return s + ": " + e.Body
}

// CodedError gives a handler error a code (the seed's error.code) and says
// whether it may be retried.
type CodedError struct {
	Code  string
	Retry bool
	Err   error
}

func (e *CodedError) Error() string { return e.Code + ": " + e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }

// Bounds of a recovered panic: the value in the message, the stack in
// errors[].stack.
const (
	maxPanicValue = 256
	maxPanicStack = 4 << 10
)

// CodeHandlerPanic is the code of a panicking handler's attempt.
const CodeHandlerPanic = "HANDLER_PANIC"

// PanicError is a handler that panicked (code HANDLER_PANIC, never
// retried). Error() is "panic: <value>" (at most 256 bytes of the value),
// so the text that reaches lastError, events, the dead-letter record and
// HTTP answers carries no stack; the stack (at most 4 KiB) goes to the
// seed's errors[].stack only.
type PanicError struct {
	Value string
	Stack string
}

func newPanicError(v any, stack []byte) *PanicError {
	return &PanicError{Value: truncate(fmt.Sprint(v), maxPanicValue), Stack: truncate(string(stack), maxPanicStack)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(truncated)"
}

func (e *PanicError) Error() string { return "panic: " + e.Value }

// timeoutError is a handler that outlived Timeout().
type timeoutError struct{ after string }

func (e *timeoutError) Error() string { return "handler exceeded its timeout of " + e.after }

// Retryable is the seed's retry decision logic as a classifier:
// validation errors → no; network errors (timeouts, refused, reset, DNS) →
// yes; HTTP 5xx, 429, 408 → yes; other 4xx → no; anything else → yes.
// flowgate adds: HTTP 3xx → no (a redirect is never followed, so a retry
// gets the same answer; it is a target to correct, not an outage).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var ve *ValidationError
	var ce *CodedError
	var se *StatusError
	switch {
	case errors.As(err, &ve), errors.Is(err, ErrNotImplemented):
		return false
	case errors.As(err, &ce):
		return ce.Retry
	case errors.As(err, new(*PanicError)):
		return false
	case strings.Contains(err.Error(), "Invalid"):
		return false // the seed: error.message.includes('Invalid')
	case isNetwork(err):
		return true
	case errors.As(err, &se):
		return se.StatusCode >= 500 || se.StatusCode == 429 || se.StatusCode == 408 || se.StatusCode < 300
	}
	return true
}

// isNetwork reports ETIMEDOUT / ECONNREFUSED / ENOTFOUND / ECONNRESET-like
// errors.
func isNetwork(err error) bool {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EPIPE),
		errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &dns):
		return true
	case errors.As(err, &ne):
		return true
	}
	return false
}

// ErrorCode is the code recorded for a failed attempt.
func ErrorCode(err error) string {
	var ve *ValidationError
	var ce *CodedError
	var te *timeoutError
	var se *StatusError
	var dns *net.DNSError
	switch {
	case errors.As(err, &ve):
		return string(contracts.CodeInvalidMessage)
	case errors.As(err, &te):
		return string(contracts.CodeMessageTimeout)
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, new(*PanicError)):
		return CodeHandlerPanic
	case errors.As(err, &se):
		return fmt.Sprintf("HTTP_%d", se.StatusCode)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.As(err, &dns):
		return "ENOTFOUND"
	case isNetwork(err):
		return "ETIMEDOUT"
	case errors.Is(err, ErrNotImplemented):
		return "NOT_IMPLEMENTED"
	}
	return "HANDLER_ERROR"
}
