package cloud9

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Kind says where a call failed.
type Kind string

// The kinds of Error.
const (
	// KindTransport: no usable answer (dial, timeout, reset, an HTTP status
	// without an envelope, an answer that is not the envelope).
	KindTransport Kind = "transport"
	// KindStatus: ResponseStatus Error with ErrorCode and ErrorMessage.
	KindStatus Kind = "status"
	// KindResult: ResponseStatus Success but a Result beginning "Error:"
	// (Cloud9's business-rule failures), or a write's Result flowgate could
	// not read.
	KindResult Kind = "result"
	// KindEmpty: Success with no records from a read that always has data;
	// seen under load, worth retrying.
	KindEmpty Kind = "empty"
)

// Class is the seed's error type (createAppt's ERROR_PATTERNS), the value
// the booking endpoints report as error_type.
type Class string

// The classes, with the seed's spelling.
const (
	ClassRateLimit             Class = "RATE_LIMIT"
	ClassPatientNotFound       Class = "PATIENT_NOT_FOUND"
	ClassSlotNotAvailable      Class = "SLOT_NOT_AVAILABLE"
	ClassInvalidScheduleView   Class = "INVALID_SCHEDULE_VIEW"
	ClassInvalidScheduleColumn Class = "INVALID_SCHEDULE_COLUMN"
	ClassInvalidApptType       Class = "INVALID_APPT_TYPE"
	ClassAuthorization         Class = "AUTHORIZATION_ERROR"
	ClassTimeout               Class = "TIMEOUT"
	ClassCloud9                Class = "CLOUD9_ERROR"
	ClassUnknown               Class = "UNKNOWN"
)

// CodeRateLimited is Cloud9's "Too many requests within the timeframe for
// procedure <name>".
const CodeRateLimited = 8

// errorPatterns are the seed's ERROR_PATTERNS in its order (first match
// wins) — the one classifier of Cloud9 answers in flowgate (the booking
// path uses it through Error.Class) — with additions the original lacked:
// Cloud9's documented slot-conflict text "…cannot be scheduled in the
// specified time slot" (the original classed it UNKNOWN), and "does not
// exist" for a schedule view and an appointment type (Cloud9's wording for
// an unknown GUID). Code 8 is RATE_LIMIT before any pattern (Classify).
var errorPatterns = []struct {
	class Class
	re    *regexp.Regexp
}{
	{ClassRateLimit, regexp.MustCompile(`(?i)too many requests|rate limit`)},
	{ClassPatientNotFound, regexp.MustCompile(`(?i)patient.*guid.*does not exist`)},
	{ClassSlotNotAvailable, regexp.MustCompile(`(?i)slot.*not available|time.*not available|already.*booked|cannot be scheduled in the specified time slot`)},
	{ClassInvalidScheduleView, regexp.MustCompile(`(?i)schedule.*view.*(invalid|not found|does not exist)`)},
	{ClassInvalidScheduleColumn, regexp.MustCompile(`(?i)schedule.*column.*invalid|column.*not found`)},
	{ClassInvalidApptType, regexp.MustCompile(`(?i)appointment.*type.*(invalid|does not exist)`)},
	{ClassAuthorization, regexp.MustCompile(`(?i)not authorized|authorization`)},
}

// authCodes are the credential and permission codes (1 bad credentials,
// 6 client, 7 allowance window, 9 not whitelisted, 10 procedure, 11 token).
// Their messages mostly match "not authorized" already; the codes catch the
// rest.
var authCodes = map[int]bool{1: true, 6: true, 7: true, 9: true, 10: true, 11: true}

// Classify maps a Cloud9 answer to a Class: code 8 is RATE_LIMIT whatever the
// text; then the seed's patterns on the text, first match wins; then the
// authorization codes; then CLOUD9_ERROR if the text contains "error", else
// UNKNOWN. Pass code -1 when there is none.
func Classify(code int, text string) Class {
	if code == CodeRateLimited {
		return ClassRateLimit
	}
	for _, p := range errorPatterns {
		if p.re.MatchString(text) {
			return p.class
		}
	}
	if authCodes[code] {
		return ClassAuthorization
	}
	if strings.Contains(strings.ToLower(text), "error") {
		return ClassCloud9
	}
	return ClassUnknown
}

// timeoutText is the seed's timeout detector (timeout, ETIMEDOUT,
// ECONNRESET) in Go's wording too.
var timeoutText = regexp.MustCompile(`(?i)timeout|timed out|etimedout|econnreset|connection reset|deadline exceeded`)

// classifyTransport classes a transport failure: TIMEOUT for the seed's
// timeout texts, otherwise as an answer's text would be.
func classifyTransport(timedOut bool, err error) Class {
	if timedOut || timeoutText.MatchString(err.Error()) {
		return ClassTimeout
	}
	return Classify(-1, err.Error())
}

// Error is a failed Cloud9 call.
type Error struct {
	Procedure string
	Kind      Kind
	Class     Class
	Code      int    // ErrorCode of a status error, else -1
	Message   string // ErrorMessage, the Result text, or the transport failure
	// Uncertain: the request may have reached Cloud9 and been committed
	// (a timeout or a broken connection after the body was sent, an answer
	// flowgate could not read, an unknown-error code 0). A write that failed
	// uncertainly must be checked for before it is sent again. False when
	// Cloud9 certainly did not act (dial failure, a rejection).
	Uncertain bool
	// Response is the decoded answer when there was one.
	Response *Response
	Err      error // the transport cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cloud9 ")
	b.WriteString(e.Procedure)
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	if e.Code >= 0 {
		fmt.Fprintf(&b, " code %d", e.Code)
	}
	fmt.Fprintf(&b, " (%s)", e.Class)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Uncertain {
		b.WriteString(" [uncertain]")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Unreached reports a certain transport failure: the request never reached
// Cloud9 (connection refused, a timeout before sending), so nothing was
// created and it may be sent again at once. An HTTP refusal without the
// envelope (401, 403, 404, another 4xx but 408) is not one: it is an answer
// — certain, and definite, like a refusal in the envelope.
func (e *Error) Unreached() bool {
	return e.Kind == KindTransport && !e.Uncertain && !errors.Is(e.Err, ErrMalformed)
}

// Permanent reports a refusal no retry of the same request changes: the
// slot is taken, the patient is unknown, a GUID is invalid (the seed's
// non-retryable classes).
func (c Class) Permanent() bool {
	switch c {
	case ClassSlotNotAvailable, ClassPatientNotFound, ClassInvalidScheduleView, ClassInvalidScheduleColumn, ClassInvalidApptType:
		return true
	}
	return false
}

// PermanentCode reports a ResponseStatus Error code of a request that no
// retry fixes (codes 2–5 and 16: the request's parameters or records).
func PermanentCode(code int) bool {
	switch code {
	case 2, 3, 4, 5, 16:
		return true
	}
	return false
}

// Retryable reports whether the same call may succeed later: a rate limit, a
// timeout, any transport failure, or an empty answer to a read. Whether a
// retried write could duplicate is a separate question: see Uncertain.
func (e *Error) Retryable() bool {
	return e.Class == ClassRateLimit || e.Class == ClassTimeout || e.Kind == KindTransport || e.Kind == KindEmpty
}

// LimitedError is returned when flowgate's own limiter did not let the call
// go: nothing was sent. Try again after RetryAfter.
type LimitedError struct {
	Procedure  string
	RetryAfter time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("cloud9 %s: held back by the shared rate limiter, retry after %s", e.Procedure, e.RetryAfter)
}

// Retryable is always true.
func (e *LimitedError) Retryable() bool { return true }

// ErrInvalidInput is wrapped by the typed procedures when their input is
// incomplete or out of Cloud9's bounds; nothing was sent.
var ErrInvalidInput = errors.New("cloud9: invalid input")

// ClassOf returns the class of err: an *Error's Class, RATE_LIMIT for a
// *LimitedError (the seed's rate-limit handling applies: queue, do not
// fail), UNKNOWN otherwise.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	var l *LimitedError
	if errors.As(err, &l) {
		return ClassRateLimit
	}
	return ClassUnknown
}

// IsRetryable reports whether err is an *Error or *LimitedError worth
// retrying.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable()
	}
	var l *LimitedError
	return errors.As(err, &l)
}

// IsUncertain reports whether err leaves it unknown whether Cloud9 acted.
func IsUncertain(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Uncertain
}

// RetryAfter is the delay a *LimitedError asks for, or 0.
func RetryAfter(err error) time.Duration {
	var l *LimitedError
	if errors.As(err, &l) {
		return l.RetryAfter
	}
	return 0
}
