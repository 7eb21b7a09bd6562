package shadow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/shadow"
)

func TestShadowCompare(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	orig := `{"success":true,"patientGUID":"ABC","slots":[{"startTime":"12/01/2026 9:00:00 AM","scheduleColumnGUID":"c1"}],` +
		`"llm_guidance":{"action_required":"offer_slots","voice_response":"I have 9 AM available for Jane."},"count":1}`
	t.Run("identical", func(t *testing.T) {
		t.Parallel()
		r := shadow.Compare("getApptSlots", at, shadow.Answer{Status: 200, Body: []byte(orig)}, shadow.Answer{Status: 200, Body: []byte(orig)})
		require.True(t, r.Identical)
		require.True(t, r.Superset)
		require.Empty(t, r.Fields)
	})
	t.Run("superset with extra keys and other values", func(t *testing.T) {
		t.Parallel()
		fg := `{"success":true,"patientGUID":"DEF","extra":{"x":1},"slots":[{"startTime":"12/01/2026 9:00:00 AM","scheduleColumnGUID":"c1","bookingToken":"t"}],` +
			`"llm_guidance":{"action_required":"offer_slots","voice_response":"I have 9 AM available for John."},"count":1}`
		r := shadow.Compare("getApptSlots", at, shadow.Answer{Status: 200, Body: []byte(orig)}, shadow.Answer{Status: 200, Body: []byte(fg)})
		require.False(t, r.Identical)
		require.True(t, r.Superset)
		require.Empty(t, r.Fields, "names and GUIDs are no caller-relevant class change")
	})
	t.Run("missing, type and fields", func(t *testing.T) {
		t.Parallel()
		fg := `{"success":"true","slots":[],"llm_guidance":{"action_required":"transfer_to_agent","voice_response":"One moment while I transfer your call."},"count":"0"}`
		r := shadow.Compare("getApptSlots", at, shadow.Answer{Status: 200, Body: []byte(orig), Latency: 12 * time.Millisecond},
			shadow.Answer{Status: 500, Body: []byte(fg), Latency: 3 * time.Millisecond})
		require.False(t, r.Superset)
		require.Equal(t, []string{"$.patientGUID"}, r.Missing, "an empty slot list is a value difference (the slots field), not missing paths")
		require.Equal(t, []string{"$.count: number → string", "$.success: boolean → string"}, r.TypeMismatches)
		require.Equal(t, []shadow.FieldDiff{
			{Field: "status", Original: "200", Flowgate: "500"},
			{Field: "slots", Original: r.Fields[1].Original, Flowgate: r.Fields[1].Flowgate},
			{Field: "patient_found", Original: "true", Flowgate: "absent"},
			{Field: "action_required", Original: "offer_slots", Flowgate: "transfer_to_agent"},
			{Field: "voice_response", Original: "offer", Flowgate: "transfer"},
		}, r.Fields)
		require.Contains(t, r.Fields[1].Original, "n=1 h=")
		require.Contains(t, r.Fields[1].Flowgate, "n=0 h=")
		require.InDelta(t, 12.0, r.OriginalMS, 0.01)
		for _, f := range r.Fields {
			require.NotContains(t, f.Original+f.Flowgate, "Jane", "no patient data kept")
		}
	})
	t.Run("an array empty on flowgate's side", func(t *testing.T) {
		t.Parallel()
		// The dry queue of shadow mode is always empty: the original's
		// operations are a value difference, not a contract gap. An
		// element path missing from a non-empty array still is one, at
		// any depth.
		o := `{"success":true,"operations":[{"operationId":"op-1","attempts":2,"steps":[{"name":"a"}]}],"count":1}`
		r := shadow.Compare("queue-status", at, shadow.Answer{Status: 200, Body: []byte(o)},
			shadow.Answer{Status: 200, Body: []byte(`{"success":true,"operations":[],"count":0}`)})
		require.True(t, r.Superset, "%v", r.Missing)
		r = shadow.Compare("queue-status", at, shadow.Answer{Status: 200, Body: []byte(o)},
			shadow.Answer{Status: 200, Body: []byte(`{"success":true,"operations":[{"operationId":"op-2","steps":[]}],"count":1}`)})
		require.Equal(t, []string{"$.operations[].attempts"}, r.Missing)
		r = shadow.Compare("queue-status", at, shadow.Answer{Status: 200, Body: []byte(o)},
			shadow.Answer{Status: 200, Body: []byte(`{"success":true,"operations":{},"count":1}`)})
		require.Equal(t, []string{"$.operations: array → object"}, r.TypeMismatches, "an object where the array was is still a type mismatch")
		require.Equal(t, 6, r.MissingCount, "an object has no elements: every element path is missing")
	})
	t.Run("not JSON", func(t *testing.T) {
		t.Parallel()
		r := shadow.Compare("createAppt", at, shadow.Answer{Status: 500, Body: []byte("Internal Error")}, shadow.Answer{Status: 200, Body: []byte(`{"success":false}`)})
		require.Equal(t, []string{"$: text → object"}, r.TypeMismatches)
	})
}

func TestShadowVoiceClass(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"": "empty",
		"I want to connect you with a specialist who can assist you.": "transfer",
		"Your appointment is booked for Tuesday at 9.":                "booked",
		"Could you spell your last name?":                             "ask",
		"Blue.":                                                       "other",
	} {
		require.Equal(t, want, shadow.VoiceClass(text), text)
	}
}
