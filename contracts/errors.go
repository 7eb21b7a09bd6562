package contracts

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a machine-readable error code. Each code maps to exactly one HTTP
// status through Code.HTTPStatus; that is the only such mapping in flowgate.
type Code string

// The error codes flowgate answers with.
const (
	CodeInvalid          Code = "invalid"            // 400: malformed or invalid input
	CodeUnauthorized     Code = "unauthorized"       // 401: missing, forged, expired or replayed credentials
	CodeForbidden        Code = "forbidden"          // 403: authenticated but not allowed (read-only UI)
	CodeProtectedKey     Code = "protected_key"      // 403: an ops key operation on flowgate's own state (orchestrator/keyspace)
	CodeNotFound         Code = "not_found"          // 404: no such resource or route
	CodeMethodNotAllowed Code = "method_not_allowed" // 405
	CodeTimeout          Code = "timeout"            // 408: the request was not received within the read timeout
	CodeConflict         Code = "conflict"           // 409: illegal state transition, lost race
	CodeTooLarge         Code = "too_large"          // 413: body over the configured limit
	CodePatientRequired  Code = "PATIENT_REQUIRED"   // 422: booking in Cloud9 needs a patient (patientGUID)
	CodeRateLimited      Code = "rate_limited"       // 429
	CodeHeadersTooLarge  Code = "headers_too_large"  // 431: request line or headers over the server's buffer
	CodeQueueFull        Code = "queue_full"         // 503: backpressure
	CodeUnavailable      Code = "unavailable"        // 503: a dependency (Redis, Cloud9) is down
	CodeInternal         Code = "internal"           // 500: a bug; logged with the request id
)

// HTTPStatus is the single code → HTTP status map.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, CodeProtectedKey:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeTimeout:
		return http.StatusRequestTimeout
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodePatientRequired:
		return http.StatusUnprocessableEntity
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeHeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case CodeQueueFull, CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	if s, ok := bufferStatus[c]; ok { // the work buffer's seed codes (buffer.go)
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the inverse used for errors raised by the HTTP framework
// itself (unknown route, body too large): it picks the code whose status it is.
func CodeForStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalid
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestTimeout:
		return CodeTimeout
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusRequestHeaderFieldsTooLarge:
		return CodeHeadersTooLarge
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	}
	if status >= 400 && status < 500 {
		return CodeInvalid
	}
	return CodeInternal
}

// Error is flowgate's error type: an operation, a code, a message safe to
// show to clients, optional details, and the wrapped cause (never shown).
type Error struct {
	Code    Code
	Message string
	Op      string         // where it happened, e.g. "tasks.Ack"
	Details map[string]any // extra machine-readable fields for the envelope
	Err     error          // cause; logged, never sent
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf is Errorf naming the request field (body field, query
// parameter or path segment) it is about in Details["field"].
func FieldErrorf(code Code, field, format string, args ...any) *Error {
	e := Errorf(code, format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

// Wrap builds an *Error around a cause.
func Wrap(code Code, op string, err error, message string) *Error {
	return &Error{Code: code, Op: op, Err: err, Message: message}
}

// ErrorCode returns the code carried by err, or CodeInternal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorResponse is the JSON envelope of every flowgate-native error:
//
//	{"success":false,"error":{"code":"invalid","message":"...","request_id":"..."}}
//
// Endpoint families that must keep a seed's error shape (Node-RED booking
// endpoints) answer their own shapes instead.
type ErrorResponse struct {
	Success bool      `json:"success"`
	Error   ErrorBody `json:"error"`
}

// ErrorBody is the inner object of ErrorResponse.
type ErrorBody struct {
	Code      Code           `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

// NewErrorResponse renders err into the envelope. Internal errors get a
// generic message so causes never leak.
func NewErrorResponse(err error, requestID string) ErrorResponse {
	body := ErrorBody{Code: CodeInternal, Message: "internal error", RequestID: requestID}
	var e *Error
	if errors.As(err, &e) {
		body.Code = e.Code
		if e.Code != CodeInternal && e.Message != "" {
			body.Message = e.Message
		}
		body.Details = e.Details
	}
	return ErrorResponse{Success: false, Error: body}
}
