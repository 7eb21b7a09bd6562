package booking_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func parent() contracts.CreatePatientRequest {
	return contracts.CreatePatientRequest{PatientFirstName: "Mary", PatientLastName: "Smith", PhoneNumber: "412-555-0100",
		EmailAddress: "mary@example.com", BirthDate: "03/04/1985", UUI: "call-session-123", SessionID: "flowise-session-456"}
}

func TestCreatePatientParent(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	r := body[contracts.PatientCreatedResponse](t, s.CreatePatient(ctx, parent()))
	require.True(t, r.Success)
	require.False(t, r.IsChild)
	require.False(t, r.Cached)
	require.NotEmpty(t, r.FamilyID)
	require.NoError(t, e.Tokens.Validate(r.BookingAuthToken, r.PatientGUID), "a token for this patient")
	require.Equal(t, contracts.StateParentCreated, r.LLMGuidance.CurrentState)
	require.Equal(t, r.PatientGUID, r.LLMGuidance.MustIncludeInBookChild.PatientGUID)

	in := e.Cloud9.Calls(cloud9.ProcSetPatient)[0].Args.(cloud9.PatientInput)
	require.Equal(t, booking.DefaultLocationGUID, in.LocationGUID)
	require.Equal(t, "03/04/1985", in.BirthDate)

	// Cached by patientGUID and uui: createAppt finds the token by either.
	for _, k := range [][2]string{{r.PatientGUID, ""}, {"", "call-session-123"}} {
		sess, found, err := e.Sessions.Lookup(ctx, k[0], k[1])
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, r.BookingAuthToken, sess.BookingAuthToken)
		require.Equal(t, bt.T0.Add(15*60e9), sess.ExpiresAt)
	}

	// The same call asks again: the cached patient, no second SetPatient.
	again := body[contracts.PatientCreatedResponse](t, s.CreatePatient(ctx, parent()))
	require.True(t, again.Cached)
	require.Equal(t, r.PatientGUID, again.PatientGUID)
	require.Equal(t, r.BookingAuthToken, again.BookingAuthToken)
	require.NotEmpty(t, again.LLMGuidance.Important)
	require.Len(t, e.Cloud9.Calls(cloud9.ProcSetPatient), 1)

	// Another name in the same call is another patient.
	other := parent()
	other.PatientFirstName = "John"
	created := body[contracts.PatientCreatedResponse](t, s.CreatePatient(ctx, other))
	require.False(t, created.Cached)
	require.NotEqual(t, r.PatientGUID, created.PatientGUID)

	// Once the token has expired the cache is not used.
	e.Clock.Advance(16 * 60e9)
	require.False(t, body[contracts.PatientCreatedResponse](t, s.CreatePatient(ctx, other)).Cached)
}

func TestCreatePatientChild(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	req := contracts.CreatePatientRequest{PatientFirstName: "Johnny", PatientLastName: "Smith", IsChild: true,
		ParentPatientGUID: bt.Patient, FamilyID: "fam-1", UUI: "call-1"}
	r := body[contracts.PatientCreatedResponse](t, e.Service(t).CreatePatient(ctx, req))
	require.True(t, r.IsChild)
	require.Equal(t, "fam-1", r.FamilyID)
	require.Equal(t, bt.Patient, r.ParentPatientGUID)
	require.Equal(t, contracts.StateChildCreated, r.LLMGuidance.CurrentState)
	_, byUUI, _ := e.Sessions.Lookup(ctx, "", "call-1")
	require.False(t, byUUI, "a child does not replace the call's parent session")
}

func TestCreatePatientQueuedAndFailed(t *testing.T) {
	t.Parallel()
	t.Run("rate limited on every try", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited())
		r := body[contracts.PatientQueuedResponse](t, e.Service(t).CreatePatient(ctx, parent()))
		require.True(t, r.Queued)
		require.Regexp(t, `^op-pat-\d{13}-[0-9a-z]{20}$`, r.OperationID)
		require.Equal(t, "/chord/ortho-prd/queue-status", r.LLMGuidance.CheckStatusEndpoint)
		require.False(t, r.LLMGuidance.CanProceedToBooking)
		require.Len(t, e.Cloud9.Calls(cloud9.ProcSetPatient), 3)
		require.Len(t, e.Queue.Patients, 1)
		require.Equal(t, r.OperationID, e.Queue.Patients[0].OperationID)
		require.Equal(t, r.FamilyID, e.Queue.Patients[0].FamilyID)
	})
	t.Run("timeout", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetPatient, bt.Timeout())
		body[contracts.PatientQueuedResponse](t, e.Service(t).CreatePatient(ctx, parent()))
	})
	t.Run("refused", func(t *testing.T) {
		e := bt.NewEnv()
		e.Cloud9.Script(cloud9.ProcSetPatient, bt.StatusError(cloud9.ProcSetPatient, 16, "Procedure validation failure"))
		a := e.Service(t).CreatePatient(ctx, parent())
		require.True(t, a.Failed, "answered as a server error (500) by bookinghttp")
		r := a.Body.(contracts.PatientFailedResponse)
		require.Nil(t, r.PatientGUID)
		require.Equal(t, contracts.StatePatientCreateFailed, r.CurrentState)
	})
	t.Run("queue down: no Redis error in the answer", func(t *testing.T) {
		e := bt.NewEnv()
		e.Queue.Err = errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")
		e.Cloud9.Script(cloud9.ProcSetPatient, bt.Timeout())
		a := e.Service(t).CreatePatient(ctx, parent())
		require.True(t, a.Failed, "answered as a server error (500) by bookinghttp")
		r := a.Body.(contracts.PatientFailedResponse)
		require.Equal(t, "could not queue the patient", r.Error)
		require.Equal(t, contracts.BookingErrException, r.ErrorType)
	})
	t.Run("invalid input", func(t *testing.T) {
		e := bt.NewEnv()
		req := contracts.CreatePatientRequest{PatientLastName: "Smith", IsChild: true}
		r := body[contracts.PatientFailedResponse](t, e.Service(t).CreatePatient(ctx, req))
		require.Equal(t, contracts.BookingErrValidation, r.ErrorType)
		require.Equal(t, []string{"patientFirstName", "parentPatientGUID"}, r.MissingFields)
		require.Equal(t, contracts.StateChildCreateFailed, r.CurrentState)
		require.Empty(t, e.Cloud9.Calls(""))
	})
}
