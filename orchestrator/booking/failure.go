package booking

import (
	"context"
	"errors"
	"strings"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// failure is a failed Cloud9 call as the booking path sees it. The class is
// cloud9's (the one classifier of Cloud9 answers: cloud9.Classify, the
// seed's ERROR_PATTERNS); failure only adds what the booking path does
// with it (disposition).
type failure struct {
	class     cloud9.Class
	code      int // Cloud9's ErrorCode, -1 when there is none
	msg       string
	uncertain bool // the call may have been executed
	unreached bool // certainly never reached Cloud9
	answered  bool // msg is Cloud9's own text (a ResponseStatus error or a Result)
	replied   bool // Cloud9 answered something (answered, or an answer flowgate could not read)
}

// What the booking path does with a failure.
type disposition int

const (
	// Cloud9 said "too many requests" (or flowgate's limiter held the call
	// back) — certain, nothing created.
	dispRateLimited disposition = iota
	// The call may have been executed; never re-send before checking
	// GetAppointmentListByPatient.
	dispUncertain
	// Not reached (connection refused, timeout before sending): certain,
	// retryable.
	dispUnavailable
	// Permanent for this booking (slot taken, patient unknown, bad GUIDs).
	dispPermanent
	// Other Cloud9 errors: the sync path reports them (transfer), the
	// async path retries them (docs/reference/nodered-endpoints.md §2: "Other error" is retried).
	dispOther
)

// classify turns a Cloud9 call's error into a failure. A *cloud9.Error
// keeps its class; a *cloud9.LimitedError is a certain rate limit; input
// the client refused before sending is a certain CLOUD9_ERROR; anything
// else is uncertain: the request may have gone out.
func classify(err error) failure {
	var ce *cloud9.Error
	if errors.As(err, &ce) {
		f := failure{class: ce.Class, code: ce.Code, msg: ce.Message, uncertain: ce.Uncertain, unreached: ce.Unreached(),
			answered: ce.Kind == cloud9.KindStatus || ce.Kind == cloud9.KindResult}
		f.replied = f.answered || errors.Is(ce.Err, cloud9.ErrMalformed)
		if f.class == cloud9.ClassRateLimit {
			f.uncertain = false // an answer, so certainly not executed
		}
		return f
	}
	var le *cloud9.LimitedError
	switch {
	case errors.As(err, &le):
		return failure{class: cloud9.ClassRateLimit, code: -1, msg: err.Error()}
	case errors.Is(err, cloud9.ErrInvalidInput):
		return failure{class: cloud9.ClassCloud9, code: -1, msg: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return failure{class: cloud9.ClassTimeout, code: -1, msg: err.Error(), uncertain: true}
	}
	return failure{class: cloud9.ClassUnknown, code: -1, msg: err.Error(), uncertain: true}
}

func (f failure) disposition() disposition {
	switch {
	case f.class == cloud9.ClassRateLimit:
		return dispRateLimited
	case f.uncertain:
		return dispUncertain
	case f.unreached || f.class == cloud9.ClassTimeout:
		return dispUnavailable
	case f.class.Permanent():
		return dispPermanent
	}
	return dispOther
}

// final reports a certain Cloud9 refusal that retrying the same request
// cannot change: the permanent classes, or a permanent code.
func (f failure) final() bool {
	d := f.disposition()
	return d == dispPermanent || (d == dispOther && cloud9.PermanentCode(f.code))
}

// queuedType is the `_debug.error_type` of a booking queued after f, named
// by its cause: TIMEOUT_QUEUED when no answer came (a timeout, a
// connection dropped after the request was sent), UNREACHABLE_QUEUED when
// Cloud9 was never reached (nothing sent), UNCERTAIN_QUEUED when Cloud9
// answered without saying whether it booked (code 0 "An unknown error
// occurred", an answer flowgate could not read). The original transferred
// on the last two (CLOUD9_ERROR); flowgate queues them (docs/differences.md).
func (f failure) queuedType() string {
	switch {
	case f.class == cloud9.ClassTimeout:
		return contracts.BookingErrTimeoutQueued
	case f.unreached:
		return contracts.BookingErrUnreachableQueued
	case f.replied:
		return contracts.BookingErrUncertainQueued
	}
	return contracts.BookingErrTimeoutQueued
}

// errType is the class: flowgate's error type (queue-status, events,
// metrics, and the answers' flowgate_error_type).
func (f failure) errType() string { return string(f.class) }

// answerType is the answers' error_type: the original's name for Cloud9's
// message (contracts.OriginalErrorType) when Cloud9 answered, else the
// class (a timeout, a transport failure, input refused before sending).
func (f failure) answerType() string {
	if !f.answered || strings.TrimSpace(f.msg) == "" {
		return string(f.class)
	}
	return contracts.OriginalErrorType(f.msg)
}

// text is the failure for logs and lastError: "Rate limited" for a rate
// limit (the seed's wording), else "<CLASS>: <message>".
func (f failure) text() string {
	if f.class == cloud9.ClassRateLimit {
		return "Rate limited"
	}
	if f.msg == "" {
		return string(f.class)
	}
	return string(f.class) + ": " + f.msg
}
