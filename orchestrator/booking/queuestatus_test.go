package booking_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
)

// queuedCall is what one call queued in the queue-status tests.
type queuedCall struct {
	sessionID, uui string
	appt, patient  string // operation ids
	child, parent  string // the names they carry
}

// queueCalls enqueues, for each of three calls, a booking and a patient
// operation, plus a booking queued without any call identity (its holder
// made up from the patient), and returns them.
func queueCalls(t *testing.T, a *async) ([]queuedCall, string) {
	t.Helper()
	calls := []queuedCall{
		{sessionID: "flowise-a-7f3c", uui: "uui-a-91d2", child: "Alice Child", parent: "Ann Parent"},
		{sessionID: "flowise-b-1e8a", uui: "uui-b-55c0", child: "Bob Child", parent: "Bea Parent"},
		{sessionID: "flowise-c-0b4d", child: "Cid Child", parent: "Cat Parent"}, // no uui
	}
	for i := range calls {
		c := &calls[i]
		at := bt.T0.Add(time.Duration(i) * time.Minute)
		c.appt = booking.NewOperationID("op", at)
		require.NoError(t, a.w.EnqueueAppointment(ctx, booking.AppointmentTask{OperationID: c.appt, CreatedAt: at,
			Appointment: booking.Appointment{PatientGUID: bt.Patient, StartTime: start, ChildName: c.child},
			SessionID:   c.sessionID, CallSessionID: c.sessionID, UUI: c.uui, PatientName: c.parent, PhoneNumber: "4125550100"}))
		c.patient = booking.NewOperationID("op-pat", at.Add(time.Second))
		first, last, _ := strings.Cut(c.parent, " ")
		require.NoError(t, a.w.EnqueuePatient(ctx, booking.PatientTask{OperationID: c.patient, CreatedAt: at.Add(time.Second),
			FirstName: first, LastName: last, UUI: c.uui, SessionID: c.sessionID, Phone: "4125550100"}))
	}
	// createAppt without sessionId or uui: the reservation holder is made up
	// ("patient:<guid>"); no call identity names it.
	anon := booking.NewOperationID("op", bt.T0.Add(time.Hour))
	require.NoError(t, a.w.EnqueueAppointment(ctx, booking.AppointmentTask{OperationID: anon, CreatedAt: bt.T0.Add(time.Hour),
		Appointment: booking.Appointment{PatientGUID: bt.Patient, StartTime: start, ChildName: "Dan Child"},
		SessionID:   "patient:" + strings.ToLower(bt.Patient)}))
	return calls, anon
}

func ids(st contracts.QueueStatusResponse) []string {
	out := []string{}
	for _, op := range st.Operations {
		out = append(out, op.ID)
	}
	return out
}

// noNames fails when an answer carries a patient's or a child's name.
func noNames(t *testing.T, st contracts.QueueStatusResponse) {
	t.Helper()
	for _, op := range st.Operations {
		require.Empty(t, op.ChildName, "%s", op.ID)
		require.Empty(t, op.PatientName, "%s", op.ID)
	}
}

// queue-status without the operator's credentials: only the operations
// the caller names (operationId, sessionId, uui), without names; nothing
// when it names nothing. With them: the whole queue, names included.
func TestQueueStatusScopes(t *testing.T) {
	t.Parallel()
	a := setupAsync(t)
	calls, anon := queueCalls(t, a)
	A, B, C := calls[0], calls[1], calls[2]
	status := func(q contracts.QueueStatusQuery) contracts.QueueStatusResponse {
		t.Helper()
		st, err := a.s.QueueStatus(ctx, q)
		require.NoError(t, err)
		if !q.Operator {
			noNames(t, st)
		}
		require.Equal(t, st.Total, st.Pending+st.Processing+st.Completed+st.Failed, "the counts cover the operations in scope")
		return st
	}

	t.Run("anonymous, nothing named: nothing", func(t *testing.T) {
		st := status(contracts.QueueStatusQuery{PageSize: contracts.MaxQueuePageSize})
		require.Empty(t, st.Operations)
		require.Zero(t, st.Total)
		require.Equal(t, contracts.QueueScopeLookup, st.Scope)
		require.Nil(t, st.NextCursor)
	})
	t.Run("by operationId: that operation, its shape without names", func(t *testing.T) {
		st := status(contracts.QueueStatusQuery{OperationID: A.appt})
		require.Equal(t, []string{A.appt}, ids(st))
		require.Equal(t, 1, st.Total)
		require.Equal(t, 1, st.Pending)
		op := st.Operations[0]
		require.Equal(t, contracts.OpSetAppointment, op.OperationType)
		require.Equal(t, start, op.StartTime)
		require.Equal(t, 10, op.MaxAttempts)
		require.Equal(t, contracts.QueueScopeLookup, st.Scope)
		st = status(contracts.QueueStatusQuery{OperationID: " " + B.patient + " "})
		require.Equal(t, []string{B.patient}, ids(st), "trimmed")
		require.Equal(t, contracts.OpSetPatient, st.Operations[0].OperationType)
		require.Equal(t, []string{anon}, ids(status(contracts.QueueStatusQuery{OperationID: anon})),
			"an operation without a call is still its operationId's")
	})
	t.Run("by sessionId or uui: that call's operations only", func(t *testing.T) {
		require.ElementsMatch(t, []string{A.appt, A.patient}, ids(status(contracts.QueueStatusQuery{SessionID: A.sessionID})))
		require.ElementsMatch(t, []string{A.appt, A.patient}, ids(status(contracts.QueueStatusQuery{UUI: A.uui})))
		require.ElementsMatch(t, []string{C.appt, C.patient}, ids(status(contracts.QueueStatusQuery{SessionID: C.sessionID})))
		st := status(contracts.QueueStatusQuery{SessionID: B.sessionID, UUI: B.uui})
		require.ElementsMatch(t, []string{B.appt, B.patient}, ids(st))
		require.Equal(t, 2, st.Total)
		require.Equal(t, []string{B.patient}, ids(status(contracts.QueueStatusQuery{SessionID: B.sessionID, OperationID: B.patient})))
		// Pages cover the call's operations only.
		p1 := status(contracts.QueueStatusQuery{SessionID: A.sessionID, PageSize: 1})
		require.Equal(t, 2, p1.Total)
		require.Equal(t, 2, p1.TotalPages)
		require.NotNil(t, p1.NextCursor)
		p2 := status(contracts.QueueStatusQuery{SessionID: A.sessionID, PageSize: 1, Cursor: *p1.NextCursor})
		require.ElementsMatch(t, []string{A.appt, A.patient}, append(ids(p1), ids(p2)...))
	})
	t.Run("what does not name a call's operation finds nothing", func(t *testing.T) {
		for name, q := range map[string]contracts.QueueStatusQuery{
			"another call's operation":    {OperationID: A.appt, SessionID: B.sessionID},
			"a sessionId as uui":          {UUI: A.sessionID},
			"a uui as sessionId":          {SessionID: A.uui},
			"case changed":                {SessionID: strings.ToUpper(A.sessionID)},
			"a prefix":                    {SessionID: A.sessionID[:len(A.sessionID)-1]},
			"the made-up holder":          {SessionID: "patient:" + strings.ToLower(bt.Patient)},
			"the patient's GUID":          {SessionID: bt.Patient},
			"the patient's GUID as uui":   {UUI: bt.Patient},
			"a phone":                     {SessionID: "4125550100"},
			"an operationId as sessionId": {SessionID: A.appt},
			"a well-formed unknown id":    {OperationID: booking.NewOperationID("op", bt.T0)},
			"the original's format":       {OperationID: "op-1705764600000-abc123"},
			"a child's name":              {SessionID: A.child},
		} {
			st := status(q)
			require.Empty(t, st.Operations, name)
			require.Zero(t, st.Total, name)
		}
	})
	t.Run("operator: the whole queue with names", func(t *testing.T) {
		st := status(contracts.QueueStatusQuery{Operator: true, PageSize: contracts.MaxQueuePageSize})
		require.Equal(t, 7, st.Total)
		require.Equal(t, contracts.QueueScopeAll, st.Scope)
		names := map[string]bool{}
		for _, op := range st.Operations {
			names[op.ChildName+op.PatientName] = true
		}
		for _, c := range calls {
			require.True(t, names[c.child], c.child)
			require.True(t, names[c.parent], c.parent)
		}
		st = status(contracts.QueueStatusQuery{Operator: true, SessionID: A.sessionID})
		require.ElementsMatch(t, []string{A.appt, A.patient}, ids(st), "the operator may look a call up too")
		require.Equal(t, contracts.QueueScopeLookup, st.Scope)
		st = status(contracts.QueueStatusQuery{Operator: true, OperationID: A.appt})
		require.Equal(t, A.child, st.Operations[0].ChildName)
	})
}

// Malformed lookup keys are refused with code invalid and the field, before
// Redis is read.
func TestQueueStatusBadLookup(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	s := e.Service(t)
	for name, c := range map[string]struct {
		q     contracts.QueueStatusQuery
		field string
	}{
		"operationId wildcard":   {contracts.QueueStatusQuery{OperationID: "op-*"}, "operationId"},
		"operationId with space": {contracts.QueueStatusQuery{OperationID: "op 1"}, "operationId"},
		"operationId too long":   {contracts.QueueStatusQuery{OperationID: strings.Repeat("a", 129)}, "operationId"},
		"operationId path":       {contracts.QueueStatusQuery{OperationID: "../op-1"}, "operationId"},
		"operationId list":       {contracts.QueueStatusQuery{OperationID: "op-1,op-2"}, "operationId"},
		"sessionId control":      {contracts.QueueStatusQuery{SessionID: "a\x00b"}, "sessionId"},
		"sessionId newline":      {contracts.QueueStatusQuery{SessionID: "a\nb"}, "sessionId"},
		"sessionId too long":     {contracts.QueueStatusQuery{SessionID: strings.Repeat("s", contracts.MaxQueueLookupKey+1)}, "sessionId"},
		"uui not UTF-8":          {contracts.QueueStatusQuery{UUI: "\xff\xfe"}, "uui"},
		"operator, bad uui":      {contracts.QueueStatusQuery{UUI: "\x7f", Operator: true}, "uui"},
	} {
		_, err := s.QueueStatus(ctx, c.q)
		var ce *contracts.Error
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, contracts.CodeInvalid, ce.Code, name)
		require.Equal(t, c.field, ce.Details["field"], name)
	}
	require.Empty(t, e.Queue.Queries(), "refused before the queue is read")
	_, err := s.QueueStatus(ctx, contracts.QueueStatusQuery{SessionID: strings.Repeat("s", contracts.MaxQueueLookupKey)})
	require.NoError(t, err, "the longest key is accepted")
}

// The service hides names from a caller without the operator's
// credentials whatever its Queue answers, and asks the Queue nothing for
// an anonymous caller that names nothing.
func TestQueueStatusServiceHidesNames(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	e.Queue.StatusResp = contracts.QueueStatusResponse{Total: 1, Pending: 1, Operations: []contracts.QueueOperation{{
		ID: "op-1705764600000-abc123", Status: contracts.OpPending, ChildName: "Johnny Smith", PatientName: "Mary Smith"}}}
	s := e.Service(t)
	st, err := s.QueueStatus(ctx, contracts.QueueStatusQuery{})
	require.NoError(t, err)
	require.Empty(t, st.Operations)
	require.Empty(t, e.Queue.Queries(), "nothing named: the queue is not read")

	st, err = s.QueueStatus(ctx, contracts.QueueStatusQuery{UUI: "call-1"})
	require.NoError(t, err)
	require.Len(t, st.Operations, 1)
	noNames(t, st)
	require.Equal(t, "Johnny Smith", e.Queue.StatusResp.Operations[0].ChildName, "the Queue's own answer is left alone")

	st, err = s.QueueStatus(ctx, contracts.QueueStatusQuery{Operator: true})
	require.NoError(t, err)
	require.Equal(t, "Johnny Smith", st.Operations[0].ChildName)
	require.Equal(t, []contracts.QueueStatusQuery{{UUI: "call-1"}, {Operator: true}}, e.Queue.Queries())
}

// Operation ids are the key to their operation: long and random.
func TestOperationIDsUnguessable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 2000 {
		id := booking.NewOperationID("op", bt.T0)
		require.Regexp(t, `^op-\d{13}-[0-9a-z]{20}$`, id)
		require.False(t, seen[id], "a repeated id")
		seen[id] = true
	}
	// Every character of the alphabet turns up in every position of the
	// random part (not a fixed or biased source).
	for pos := 0; pos < booking.OperationIDRandom; pos++ {
		chars := map[byte]bool{}
		for id := range seen {
			chars[id[len(id)-booking.OperationIDRandom+pos]] = true
		}
		require.Len(t, chars, 36, "position %d", pos)
	}
}
