package booking_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// The operation status endpoint reads one operation from Asynq by its
// operationId: queued (attempts 0, next retry), then completed with its
// result; an unknown id is found false.
func TestOperationStatusFollowsTheQueuedBooking(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited())
	q := body[contracts.ApptQueuedResponse](t, a.s.CreateAppt(ctx, request(a.e)))
	op, found, err := a.w.Operation(ctx, q.OperationID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, contracts.OpPending, op.Status)
	require.Equal(t, 0, op.Attempts)
	require.Equal(t, contracts.OpSetAppointment, op.OperationType)
	require.NotNil(t, op.NextRetryAt)

	// The status endpoint answers anyone with the operationId: no names,
	// as queue-status for a caller without the operator's credentials.
	require.NotEmpty(t, op.ChildName, "the queue knows the child")
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: familytest.New(t, cloud9sim.Config{}).Client, Operations: a.w},
		booking.FamilyConfig{Logger: bt.Discard()})
	require.NoError(t, err)
	st := body[contracts.OperationStatusResponse](t, fam.OperationStatus(ctx, q.OperationID))
	require.NotNil(t, st.Operation)
	require.Empty(t, st.Operation.ChildName)
	require.Empty(t, st.Operation.PatientName)
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	require.NotContains(t, string(raw), op.ChildName)

	a.start(t)
	a.waitOp(t, q.OperationID, contracts.OpCompleted)
	op, found, err = a.w.Operation(ctx, q.OperationID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, contracts.OpCompleted, op.Status)
	require.Equal(t, 1, op.Attempts)
	require.NotNil(t, op.Result)
	require.NotEmpty(t, op.Result.AppointmentGUID)

	_, found, err = a.w.Operation(ctx, "op-1-unknown")
	require.NoError(t, err)
	require.False(t, found)
}

// A queued patient is an operation too; its status answer carries state,
// attempts, last error and result.
func TestOperationStatusOfAQueuedPatient(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	a.e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited())
	q := body[contracts.PatientQueuedResponse](t, a.s.CreatePatient(ctx, parent()))
	// The status endpoint reads Asynq only; its Cloud9 is never called.
	c9 := familytest.New(t, cloud9sim.Config{})
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client, Operations: a.w},
		booking.FamilyConfig{Logger: bt.Discard()})
	require.NoError(t, err)
	ans := fam.OperationStatus(ctx, q.OperationID)
	raw, err := json.Marshal(ans.Body)
	require.NoError(t, err)
	norm := contractstest.Normalizer{Keys: map[string]string{"operationId": "{operationId}", "id": "{operationId}"},
		Rules: []contractstest.Rule{{RE: contractstest.Time, Name: "time"}}}
	contractstest.Golden(t, "booking_family_operation_pending", norm.Normalize(t, raw))
	st := body[contracts.OperationStatusResponse](t, ans)
	require.True(t, st.Found)
	require.Equal(t, contracts.OpPending, st.Status)
	require.Equal(t, contracts.OpSetPatient, st.OperationType)
	require.Equal(t, "OPERATION_QUEUED", st.LLMGuidance.CurrentState)

	a.start(t)
	a.waitOp(t, q.OperationID, contracts.OpCompleted)
	st = body[contracts.OperationStatusResponse](t, fam.OperationStatus(ctx, q.OperationID))
	require.Equal(t, contracts.OpCompleted, st.Status)
	require.NotNil(t, st.Result)
	require.NotEmpty(t, st.Result.PatientGUID)
	require.GreaterOrEqual(t, st.Attempts, 1)

	st = body[contracts.OperationStatusResponse](t, fam.OperationStatus(ctx, "op-pat-1-nope"))
	require.False(t, st.Found)
	require.False(t, st.Success)
}
