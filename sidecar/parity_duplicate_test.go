package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// DUPLICATE_SLOT_BLOCKED ("already booked for another child in this
// call") only for a sibling in the same call, through the real wiring
// (Redis marks, simulator): a child created as a patient of its own on its
// sibling's slot is refused and never sent (before: sent, refused
// SLOT_NOT_AVAILABLE); the same parent's slot booked for another child in
// another call is answered SLOT_NOT_AVAILABLE, as Cloud9 refuses it to the
// original (before: DUPLICATE_SLOT_BLOCKED). children[] results carry the
// original's date and time text, and so does the voice_response.
func TestDuplicateSlotOnlyInTheCall(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	st, body := p.post(t, "/createPatient", map[string]any{"patientFirstName": "Mary", "patientLastName": "Smith",
		"phoneNumber": "412-555-0100", "uui": "call-a"})
	require.Equal(t, http.StatusOK, st, "%s", body)
	parent := obj(t, body)
	kid := func(first string) map[string]any {
		_, body := p.post(t, "/createPatient", map[string]any{"patientFirstName": first, "patientLastName": "Smith", "isChild": true,
			"parentPatientGUID": parent["patientGUID"], "familyId": parent["familyId"], "birthDate": "01/15/2015", "uui": "call-a"})
		return obj(t, body)
	}
	johnny, jane := kid("Johnny"), kid("Jane")
	require.NotEqual(t, johnny["patientGUID"], jane["patientGUID"])
	_, body = p.post(t, "/getApptSlots", map[string]any{"startDate": simDay(p.sim, 2), "endDate": simDay(p.sim, 4), "sessionId": "call-a"})
	offered := obj(t, body)["slots"].([]any)
	book := func(who map[string]any, child, call string, slot int) map[string]any {
		req := rawSlot(offered[slot].(map[string]any))
		req["patientGUID"], req["bookingAuthToken"], req["childName"], req["uui"] = who["patientGUID"], who["bookingAuthToken"], child, call
		st, body := p.post(t, "/createAppt", req)
		require.Equal(t, http.StatusOK, st)
		return obj(t, body)
	}
	errType := func(m map[string]any) any { return m["_debug"].(map[string]any)["error_type"] }

	require.Equal(t, true, book(johnny, "Johnny Smith", "call-a", 0)["success"])
	done, err := p.db.Client.Keys(context.Background(), "*booking:{*}:done").Result()
	require.NoError(t, err)
	require.NotEmpty(t, done)
	for _, k := range done { // booking.Config.MarksDoneTTL: longer than a queued booking's retries
		ttl, err := p.db.Client.PTTL(context.Background(), k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 74*time.Minute, k)
	}
	dup := book(jane, "Jane Smith", "call-a", 0)
	require.Equal(t, "DUPLICATE_SLOT_BLOCKED", errType(dup), "%v", dup)
	require.Len(t, p.sim.Appointments(), 1, "the sibling was never sent")
	require.Equal(t, 1, p.sim.Calls("SetAppointment"))

	require.Equal(t, true, book(parent, "Jill Smith", "call-a", 1)["success"])
	other := book(parent, "Kim Smith", "call-b", 1)
	require.Equal(t, "SLOT_NOT_AVAILABLE", errType(other), "another call's booked slot: %v", other)
	require.Equal(t, "offer_alternative_slot", other["llm_guidance"].(map[string]any)["action_required"])
	require.Equal(t, 2, p.sim.Calls("SetAppointment"))

	// children[] in call-a: a child on Johnny's slot is refused; the other
	// is booked and read back as the original writes it.
	s2 := offered[2].(map[string]any)
	joe, jimReq := rawSlot(offered[0].(map[string]any)), rawSlot(s2)
	joe["childName"], jimReq["childName"] = "Joe Smith", "Jim Smith"
	st, body = p.post(t, "/createAppt", map[string]any{"patientGUID": parent["patientGUID"], "bookingAuthToken": parent["bookingAuthToken"],
		"uui": "call-a", "children": []any{joe, jimReq}})
	require.Equal(t, http.StatusOK, st)
	batch := obj(t, body)
	results := batch["results"].([]any)
	require.Equal(t, "DUPLICATE_SLOT_BLOCKED", results[0].(map[string]any)["error_type"], "%s", body)
	jim := results[1].(map[string]any)
	require.Equal(t, true, jim["success"], "%s", body)
	start, err := time.Parse("01/02/2006 3:04 PM", s2["startTime"].(string))
	if err != nil {
		start, err = time.Parse("1/2/2006 3:04:05 PM", s2["startTime"].(string))
	}
	require.NoError(t, err)
	require.Equal(t, start.Format("1/2/2006"), jim["date"])
	require.Equal(t, start.Format("3:04:05 PM"), jim["time"])
	require.Equal(t, start.Weekday().String(), jim["day"])
	require.Contains(t, batch["llm_guidance"].(map[string]any)["voice_response"],
		"Jim on "+start.Weekday().String()+" "+start.Format("1/2/2006")+" at "+start.Format("3:04:05 PM"))
}

// rawSlot is an offered slot's fields as a createAppt request names them.
func rawSlot(s map[string]any) map[string]any {
	return map[string]any{"startTime": s["startTime"], "scheduleViewGUID": s["scheduleViewGUID"],
		"scheduleColumnGUID": s["scheduleColumnGUID"], "appointmentTypeGUID": s["appointmentTypeGUID"], "minutes": 45}
}
