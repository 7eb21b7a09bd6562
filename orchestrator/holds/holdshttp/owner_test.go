package holdshttp_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// A clientId proves nothing: a POST for a slot the clientId already holds
// is 409 slot_taken, as for anyone, and never answers that hold's id (its
// secret) or ref; nothing changes.
func TestARepeatedHoldDoesNotHandOutTheHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hold(t, "c1", specX, slot9)
	before := b.snapshot(t)
	r := b.do(t, "POST", "/v1/holds", holdBody("c1", specX, slot9))
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Equal(t, "slot_taken", r.errBody(t).Details["reason"])
	require.NotContains(t, string(r.Body), h.HoldID)
	require.NotContains(t, string(r.Body), h.HoldRef)
	require.Equal(t, before, b.snapshot(t), "nothing changed")
}

// The web routes act on web holds only: an IVA reservation on the same
// type is neither heartbeated, released nor booked through them, even with
// its real id and session id (which the stream no longer shows anyway).
func TestWebRoutesRefuseIVAReservations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := holds.ClaimRequest{AppointmentTypeID: typeA, ClientID: "call-1", SlotStart: slot9, SlotEnd: slot9.Add(30 * time.Minute),
		SpecialistID: specX, Face: holds.FaceIVA, TTL: 90 * time.Second, MaxHolds: -1, Cooldown: -1,
		FaceKey: "SlotReservation:loc:20250315:0900:" + specX, FaceValue: `{"sessionId":"call-1"}`}
	iva, err := b.eng.Claim(b.ctx, r)
	require.NoError(t, err)
	before := b.snapshot(t)
	ref := map[string]string{"clientId": "call-1", "holdId": iva.HoldID}
	hb := b.do(t, "PATCH", "/v1/holds", ref)
	require.Equal(t, 200, hb.Status)
	require.JSONEq(t, `{"ok":false}`, string(hb.Body), "no web hold: the web face's false (docs/holds.md)")
	require.Equal(t, 409, b.do(t, "DELETE", "/v1/holds/"+iva.HoldID+"?clientId=call-1", nil).Status)
	require.Equal(t, 409, b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", ref).Status)
	require.Equal(t, before, b.snapshot(t), "nothing changed")
	require.Empty(t, b.cat.Appointments())
}

// A hold id and an appointment id are secrets: the access log shows a
// route's path with its Ref instead.
func TestSecretPathsAreLoggedAsRefs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hold(t, "c1", specX, slot9)
	require.Equal(t, 200, b.do(t, "DELETE", "/v1/holds/"+h.HoldID+"?clientId=c1", nil).Status)
	require.Equal(t, 404, b.do(t, "DELETE", "/v1/appointments/appt-secret-1", nil).Status)
	logs := b.logs.String()
	require.Contains(t, logs, "/v1/holds/"+h.HoldRef)
	require.Contains(t, logs, "/v1/appointments/"+holds.Ref("appt-secret-1"))
	require.NotContains(t, logs, "/v1/holds/"+h.HoldID)
	require.NotContains(t, logs, "appt-secret-1")
}
