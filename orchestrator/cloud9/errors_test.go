package cloud9_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code int
		text string
		want cloud9.Class
	}{
		// RATE_LIMIT: code 8 whatever the text, and the seed's pattern.
		{8, "Too many requests within the timeframe for procedure SetAppointment", cloud9.ClassRateLimit},
		{8, "", cloud9.ClassRateLimit},
		{8, "Patient GUID specified does not exist", cloud9.ClassRateLimit},
		{-1, "Too many requests", cloud9.ClassRateLimit},
		{-1, "TOO MANY REQUESTS", cloud9.ClassRateLimit},
		{-1, "Rate limit exceeded", cloud9.ClassRateLimit},
		// PATIENT_NOT_FOUND
		{-1, "Error: Patient GUID specified does not exist.", cloud9.ClassPatientNotFound},
		{-1, "patient with guid 123 does not exist", cloud9.ClassPatientNotFound},
		// SLOT_NOT_AVAILABLE: the seed's three and the documented Cloud9 text.
		{-1, "Error: This appointment cannot be scheduled in the specified time slot.", cloud9.ClassSlotNotAvailable},
		{-1, "Slot is not available", cloud9.ClassSlotNotAvailable},
		{-1, "The requested time is not available", cloud9.ClassSlotNotAvailable},
		{-1, "That chair is already booked", cloud9.ClassSlotNotAvailable},
		// INVALID_SCHEDULE_VIEW, INVALID_SCHEDULE_COLUMN, INVALID_APPT_TYPE
		{-1, "Schedule view is invalid", cloud9.ClassInvalidScheduleView},
		{-1, "schedule view not found", cloud9.ClassInvalidScheduleView},
		{-1, "Schedule column GUID invalid", cloud9.ClassInvalidScheduleColumn},
		{-1, "Column not found", cloud9.ClassInvalidScheduleColumn},
		{-1, "Appointment type is invalid", cloud9.ClassInvalidApptType},
		// "does not exist" for a view and a type: Cloud9's wording for an
		// unknown GUID (the booking path's table had it; now the one table).
		{-1, "Error: Schedule View/Column GUID specified does not exist.", cloud9.ClassInvalidScheduleView},
		{-1, "Error: Appointment Type GUID specified does not exist or does not allow online scheduling.", cloud9.ClassInvalidApptType},
		// AUTHORIZATION_ERROR: the pattern, then the credential codes.
		{6, "Not authorized to access client.", cloud9.ClassAuthorization},
		{7, "Not authorized to collect data outside of allowance window.", cloud9.ClassAuthorization},
		{10, "Procedure 'SetAppointment' is not authorized.", cloud9.ClassAuthorization},
		{-1, "Authorization failed", cloud9.ClassAuthorization},
		{1, "Invalid client / username / password combination.", cloud9.ClassAuthorization},
		{9, "Procedure GetPatientList not whitelisted for partner / client.", cloud9.ClassAuthorization},
		{11, "Token is unknown or has expired.", cloud9.ClassAuthorization},
		// First match wins, in the seed's order.
		{-1, "Too many requests; patient guid does not exist", cloud9.ClassRateLimit},
		{-1, "Patient GUID does not exist and the slot is not available", cloud9.ClassPatientNotFound},
		{-1, "Slot not available: schedule view invalid", cloud9.ClassSlotNotAvailable},
		{-1, "Schedule view invalid; not authorized", cloud9.ClassInvalidScheduleView},
		// Fallbacks: CLOUD9_ERROR when the text says error, else UNKNOWN.
		{-1, "Error: Appointments cannot be scheduled in the past.", cloud9.ClassCloud9},
		{-1, "Error: Minutes must be greater than 0.", cloud9.ClassCloud9},
		{0, "An unknown error occurred.", cloud9.ClassCloud9},
		{2, "A required parameter was not specified.", cloud9.ClassUnknown},
		{5, "Invalid GUID format for parameter: 'PatientGUID'", cloud9.ClassUnknown},
		{-1, "", cloud9.ClassUnknown},
	}
	for _, c := range cases {
		require.Equal(t, c.want, cloud9.Classify(c.code, c.text), "code %d %q", c.code, c.text)
	}
}

func TestClassStrings(t *testing.T) {
	t.Parallel()
	// The seed's error_type spellings.
	require.Equal(t, []string{"RATE_LIMIT", "PATIENT_NOT_FOUND", "SLOT_NOT_AVAILABLE", "INVALID_SCHEDULE_VIEW",
		"INVALID_SCHEDULE_COLUMN", "INVALID_APPT_TYPE", "AUTHORIZATION_ERROR", "TIMEOUT", "CLOUD9_ERROR", "UNKNOWN"},
		[]string{string(cloud9.ClassRateLimit), string(cloud9.ClassPatientNotFound), string(cloud9.ClassSlotNotAvailable),
			string(cloud9.ClassInvalidScheduleView), string(cloud9.ClassInvalidScheduleColumn), string(cloud9.ClassInvalidApptType),
			string(cloud9.ClassAuthorization), string(cloud9.ClassTimeout), string(cloud9.ClassCloud9), string(cloud9.ClassUnknown)})
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  *cloud9.Error
		want bool
	}{
		{&cloud9.Error{Kind: cloud9.KindStatus, Class: cloud9.ClassRateLimit, Code: 8}, true},
		{&cloud9.Error{Kind: cloud9.KindResult, Class: cloud9.ClassRateLimit}, true},
		{&cloud9.Error{Kind: cloud9.KindTransport, Class: cloud9.ClassTimeout}, true},
		{&cloud9.Error{Kind: cloud9.KindTransport, Class: cloud9.ClassUnknown}, true},
		{&cloud9.Error{Kind: cloud9.KindEmpty, Class: cloud9.ClassUnknown}, true},
		{&cloud9.Error{Kind: cloud9.KindResult, Class: cloud9.ClassSlotNotAvailable}, false},
		{&cloud9.Error{Kind: cloud9.KindResult, Class: cloud9.ClassPatientNotFound}, false},
		{&cloud9.Error{Kind: cloud9.KindStatus, Class: cloud9.ClassAuthorization, Code: 1}, false},
		{&cloud9.Error{Kind: cloud9.KindStatus, Class: cloud9.ClassUnknown, Code: 2}, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.err.Retryable(), "%+v", c.err)
		wrapped := fmt.Errorf("booking: %w", c.err)
		require.Equal(t, c.want, cloud9.IsRetryable(wrapped))
		require.Equal(t, c.err.Class, cloud9.ClassOf(wrapped))
	}

	limited := fmt.Errorf("x: %w", &cloud9.LimitedError{Procedure: "SetAppointment", RetryAfter: 7 * time.Second})
	require.True(t, cloud9.IsRetryable(limited))
	require.Equal(t, cloud9.ClassRateLimit, cloud9.ClassOf(limited), "held back by flowgate: the seed's rate-limit handling")
	require.Equal(t, 7*time.Second, cloud9.RetryAfter(limited))
	require.False(t, cloud9.IsUncertain(limited), "nothing was sent")
	require.Equal(t, cloud9.ClassUnknown, cloud9.ClassOf(errors.New("other")))
	require.False(t, cloud9.IsRetryable(errors.New("other")))
	require.Zero(t, cloud9.RetryAfter(errors.New("other")))
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	e := &cloud9.Error{Procedure: "SetAppointment", Kind: cloud9.KindStatus, Class: cloud9.ClassRateLimit, Code: 8,
		Message: "Too many requests", Uncertain: false}
	require.Equal(t, "cloud9 SetAppointment: status code 8 (RATE_LIMIT): Too many requests", e.Error())
	e = &cloud9.Error{Procedure: "SetAppointment", Kind: cloud9.KindTransport, Class: cloud9.ClassTimeout, Code: -1,
		Message: "context deadline exceeded", Uncertain: true}
	require.Equal(t, "cloud9 SetAppointment: transport (TIMEOUT): context deadline exceeded [uncertain]", e.Error())
}

// What a retry can change: the permanent classes and codes, and a
// transport failure that certainly never reached Cloud9.
func TestPermanentAndUnreached(t *testing.T) {
	t.Parallel()
	for _, c := range []cloud9.Class{cloud9.ClassSlotNotAvailable, cloud9.ClassPatientNotFound, cloud9.ClassInvalidScheduleView,
		cloud9.ClassInvalidScheduleColumn, cloud9.ClassInvalidApptType} {
		require.True(t, c.Permanent(), c)
	}
	for _, c := range []cloud9.Class{cloud9.ClassRateLimit, cloud9.ClassTimeout, cloud9.ClassCloud9, cloud9.ClassUnknown, cloud9.ClassAuthorization} {
		require.False(t, c.Permanent(), c)
	}
	for code, want := range map[int]bool{-1: false, 0: false, 2: true, 3: true, 4: true, 5: true, 8: false, 16: true} {
		require.Equal(t, want, cloud9.PermanentCode(code), code)
	}
	require.True(t, (&cloud9.Error{Kind: cloud9.KindTransport, Class: cloud9.ClassUnknown}).Unreached(), "connection refused")
	require.False(t, (&cloud9.Error{Kind: cloud9.KindTransport, Class: cloud9.ClassTimeout, Uncertain: true}).Unreached())
	require.False(t, (&cloud9.Error{Kind: cloud9.KindResult, Class: cloud9.ClassCloud9}).Unreached())
	require.False(t, (&cloud9.Error{Kind: cloud9.KindTransport, Class: cloud9.ClassAuthorization, Err: cloud9.ErrMalformed}).Unreached(),
		"an HTTP 401 without the envelope is an answer")
}
