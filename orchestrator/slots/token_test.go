package slots_test

import (
	"encoding/base64"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

func TestEncodeTokenShape(t *testing.T) {
	t.Parallel()
	s := slot("1/20/2026 10:00:00 AM")
	token := slots.EncodeToken(s)
	raw, err := base64.StdEncoding.DecodeString(token)
	require.NoError(t, err, "standard base64 with padding")
	require.Equal(t, `{"startTime":"1/20/2026 10:00:00 AM","scheduleViewGUID":"`+view+`","scheduleColumnGUID":"`+chair8+
		`","appointmentTypeGUID":"`+apptTy+`","minutes":45}`, string(raw), "keys in order, compact, only the five")
	contractstest.Golden(t, "booking_token_payload", raw)

	got, err := slots.DecodeToken(token)
	require.NoError(t, err)
	require.Equal(t, s.TokenSlot(), got)
}

func TestEncodeTokenMatchesNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	s := slot("1/20/2026 10:00:00 AM")
	out, err := exec.Command(node, "-e", `process.stdout.write(Buffer.from(JSON.stringify({startTime: "1/20/2026 10:00:00 AM",
 scheduleViewGUID: "`+view+`", scheduleColumnGUID: "`+chair8+`", appointmentTypeGUID: "`+apptTy+`", minutes: 45})).toString('base64'))`).Output()
	require.NoError(t, err)
	require.Equal(t, string(out), slots.EncodeToken(s))
}

func enc(json string) string      { return base64.StdEncoding.EncodeToString([]byte(json)) }
func encNoPad(json string) string { return base64.RawStdEncoding.EncodeToString([]byte(json)) }

func TestDecodeTokenAccepts(t *testing.T) {
	t.Parallel()
	full := slots.TokenSlot{StartTime: "1/20/2026 10:00 AM", ScheduleViewGUID: view, ScheduleColumnGUID: chair8,
		AppointmentTypeGUID: apptTy, Minutes: 45}
	for name, c := range map[string]struct {
		token string
		want  slots.TokenSlot
	}{
		"long keys":         {enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `","appointmentTypeGUID":"` + apptTy + `","minutes":45}`), full},
		"old short keys":    {enc(`{"st":"1/20/2026 10:00 AM","sv":"` + view + `","sc":"` + chair8 + `","at":"` + apptTy + `","mn":"45"}`), full},
		"unpadded":          {encNoPad(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `","appointmentTypeGUID":"` + apptTy + `","minutes":45}`), full},
		"surrounding space": {"  " + enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"`+view+`","scheduleColumnGUID":"`+chair8+`","appointmentTypeGUID":"`+apptTy+`","minutes":"45"}`) + "\n", full},
		"minutes 0 is unknown": {enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `","minutes":0}`),
			slots.TokenSlot{StartTime: "1/20/2026 10:00 AM", ScheduleViewGUID: view, ScheduleColumnGUID: chair8}},
		"optional absent": {enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `"}`),
			slots.TokenSlot{StartTime: "1/20/2026 10:00 AM", ScheduleViewGUID: view, ScheduleColumnGUID: chair8}},
		"optional null and unknown keys": {enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `","appointmentTypeGUID":null,"minutes":null,"chair":"CHAIR 8"}`),
			slots.TokenSlot{StartTime: "1/20/2026 10:00 AM", ScheduleViewGUID: view, ScheduleColumnGUID: chair8}},
	} {
		got, err := slots.DecodeToken(c.token)
		require.NoError(t, err, name)
		require.Equal(t, c.want, got, name)
	}
}

func TestDecodeTokenRefuses(t *testing.T) {
	t.Parallel()
	body := func(fields string) string {
		return enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `"` + fields + `}`)
	}
	cases := []struct {
		name, token string
		reason      slots.TokenReason
		field       string
	}{
		{"empty", "", slots.ReasonEmpty, ""},
		{"blank", "  \n", slots.ReasonEmpty, ""},
		{"too long", strings.Repeat("A", slots.MaxTokenLen+4), slots.ReasonTooLong, ""},
		{"not base64", "not base64!", slots.ReasonBase64, ""},
		{"url-safe alphabet", strings.NewReplacer("+", "-", "/", "_").Replace(enc(`{"x":"???>>>"}`)), slots.ReasonBase64, ""},
		{"not JSON", enc("hello"), slots.ReasonJSON, ""},
		{"array", enc(`[1,2,3]`), slots.ReasonJSON, ""},
		{"null", enc(`null`), slots.ReasonJSON, ""},
		{"string", enc(`"x"`), slots.ReasonJSON, ""},
		{"trailing data", enc(`{"startTime":"1/20/2026 10:00 AM"} {}`), slots.ReasonJSON, ""},
		{"truncated", enc(`{"startTime":"1/20/2026`), slots.ReasonJSON, ""},
		{"no startTime", enc(`{"scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonMissingField, "startTime"},
		{"empty view", enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"","scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonMissingField, "scheduleViewGUID"},
		{"no column", enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `"}`), slots.ReasonMissingField, "scheduleColumnGUID"},
		{"null column", enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view + `","scheduleColumnGUID":null}`), slots.ReasonMissingField, "scheduleColumnGUID"},
		{"startTime a number", enc(`{"startTime":1768903200000,"scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonWrongType, "startTime"},
		{"view an object", enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":{},"scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonWrongType, "scheduleViewGUID"},
		{"minutes a bool", body(`,"minutes":true`), slots.ReasonWrongType, "minutes"},
		{"minutes an array", body(`,"minutes":[45]`), slots.ReasonWrongType, "minutes"},
		{"type a number", body(`,"appointmentTypeGUID":5`), slots.ReasonWrongType, "appointmentTypeGUID"},
		{"bad startTime", enc(`{"startTime":"tomorrow at 10","scheduleViewGUID":"` + view + `","scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonInvalidValue, "startTime"},
		{"truncated GUID", enc(`{"startTime":"1/20/2026 10:00 AM","scheduleViewGUID":"` + view[:30] + `","scheduleColumnGUID":"` + chair8 + `"}`), slots.ReasonInvalidValue, "scheduleViewGUID"},
		{"bad type GUID", body(`,"appointmentTypeGUID":"chair 8"`), slots.ReasonInvalidValue, "appointmentTypeGUID"},
		{"minutes negative", body(`,"minutes":-45`), slots.ReasonInvalidValue, "minutes"},
		{"minutes fraction", body(`,"minutes":44.5`), slots.ReasonInvalidValue, "minutes"},
		{"minutes huge", body(`,"minutes":1e9`), slots.ReasonInvalidValue, "minutes"},
		{"minutes words", body(`,"minutes":"forty"`), slots.ReasonInvalidValue, "minutes"},
	}
	for _, c := range cases {
		_, err := slots.DecodeToken(c.token)
		require.Error(t, err, c.name)
		require.ErrorIs(t, err, slots.ErrMalformedToken, c.name)
		var te *slots.TokenError
		require.True(t, errors.As(err, &te), c.name)
		require.Equal(t, c.reason, te.Reason, "%s: %v", c.name, err)
		require.Equal(t, c.field, te.Field, c.name)
	}
}

func FuzzDecodeToken(f *testing.F) {
	f.Add(slots.EncodeToken(slot("1/20/2026 10:00:00 AM")))
	f.Add(enc(`{"st":"1/20/2026 10:00 AM","sv":"` + view + `","sc":"` + chair8 + `","mn":"45"}`))
	f.Add(enc(`{"startTime":null}`))
	f.Add(enc(`{"minutes":1e400}`))
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, token string) {
		ts, err := slots.DecodeToken(token)
		if err != nil {
			if !errors.Is(err, slots.ErrMalformedToken) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := ts.ID(); err != nil {
			t.Fatalf("accepted a token without a slot identity: %+v: %v", ts, err)
		}
		if ts.Minutes < 0 {
			t.Fatalf("negative minutes %+v", ts)
		}
		again, err := slots.DecodeToken(slots.EncodeToken(slots.Slot{StartTime: ts.StartTime, ScheduleViewGUID: ts.ScheduleViewGUID,
			ScheduleColumnGUID: ts.ScheduleColumnGUID, AppointmentTypeGUID: ts.AppointmentTypeGUID, Minutes: ts.Minutes}))
		if err != nil {
			t.Fatalf("re-encoded token refused: %v", err)
		}
		if again != ts {
			t.Fatalf("round trip changed %+v → %+v", ts, again)
		}
	})
}
