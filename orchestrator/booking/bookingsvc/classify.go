package bookingsvc

import (
	"context"
	"errors"
	"regexp"
	"strings"
)

// failure is a classified Cloud9 failure.
type failure struct {
	class     string
	code      int
	msg       string
	uncertain bool
}

// What the booking path does with a failure.
type disposition int

const (
	// retryLater: Cloud9 said "too many requests" — certain, nothing created.
	dispRateLimited disposition = iota
	// uncertain: the call may have been executed; never re-send before
	// checking GetAppointmentListByPatient.
	dispUncertain
	// unavailable: not reached (connection refused, timeout before
	// sending): certain, retryable.
	dispUnavailable
	// permanent for this booking (slot taken, patient unknown, bad GUIDs).
	dispPermanent
	// other Cloud9 errors: the sync path reports them (transfer), the
	// async path retries them (seed 000 §4.5: "Other error" is retried).
	dispOther
)

// errorPatterns are createAppt's ERROR_PATTERNS (reference §4), applied
// when the client's class is generic, plus the documented slot-conflict
// text Node-RED missed ("…cannot be scheduled in the specified time slot").
var errorPatterns = []struct {
	class string
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

// classify turns a Cloud9 call's error into a failure. An error that is not
// a *Cloud9Error is taken as uncertain: the request may have gone out.
func classify(err error) failure {
	var ce *Cloud9Error
	if errors.As(err, &ce) {
		f := failure{class: ce.Class, code: ce.Code, msg: ce.Message, uncertain: ce.Uncertain}
		if f.code == 8 {
			f.class = ClassRateLimit
		}
		switch f.class {
		case "", ClassCloud9, ClassUnknown:
			f.class = ClassUnknown
			if strings.Contains(strings.ToLower(f.msg), "error") {
				f.class = ClassCloud9
			}
			for _, p := range errorPatterns {
				if p.re.MatchString(f.msg) {
					f.class = p.class
					break
				}
			}
		}
		if f.class == ClassRateLimit {
			f.uncertain = false // an answer, so certainly not executed
		}
		return f
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failure{class: ClassTimeout, msg: err.Error(), uncertain: true}
	}
	return failure{class: ClassUnknown, msg: err.Error(), uncertain: true}
}

func (f failure) disposition() disposition {
	switch {
	case f.class == ClassRateLimit:
		return dispRateLimited
	case f.uncertain:
		return dispUncertain
	case f.class == ClassTimeout || f.class == ClassUnavailable:
		return dispUnavailable
	case f.class == ClassSlotNotAvailable || f.class == ClassPatientNotFound || f.class == ClassInvalidScheduleView ||
		f.class == ClassInvalidScheduleColumn || f.class == ClassInvalidApptType:
		return dispPermanent
	}
	return dispOther
}

// permanentCodes are Cloud9 ResponseStatus Error codes of a request that
// no retry fixes (codes 2–5 and 16: the request's parameters or records).
var permanentCodes = map[int]bool{2: true, 3: true, 4: true, 5: true, 16: true}

// final reports a certain Cloud9 refusal that retrying the same request
// cannot change: the permanent classes, or a permanent code.
func (f failure) final() bool {
	d := f.disposition()
	return d == dispPermanent || (d == dispOther && permanentCodes[f.code])
}

// text is the failure for logs and lastError: "Rate limited" for a rate
// limit (the seed's wording), else "<CLASS>: <message>".
func (f failure) text() string {
	if f.class == ClassRateLimit {
		return "Rate limited"
	}
	if f.msg == "" {
		return f.class
	}
	return f.class + ": " + f.msg
}
