package test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestBookingBadInput: createAppt answers every bad input with its
// documented shape (200 and VALIDATION_ERROR, or the booking-auth refusal
// of each of the five checks; a 10 MB body exceeds the server's 1 MiB
// HTTP_BODY_LIMIT and is refused before any route with the 413 envelope)
// and nothing reaches Cloud9's SetAppointment. BOOKING_AUTH_MODE=token;
// BOOKING_SESSION_TTL=3s so that a real token expires within the test.
// The steps run in order on one fixture: those before expiredTokens take
// less than the token's TTL.
func TestBookingBadInput(t *testing.T) {
	t.Parallel()
	r := startBadInput(t)
	r.unreadableBodies(t)
	r.bodySizes(t)
	r.missingAndInvalidFields(t)
	r.badBookingTokens(t)
	r.authChecks(t)
	r.expiredTokens(t)
	r.createPatientBadInput(t)

	r.nothingBooked(t, "bad input")
	require.Equal(t, 2, r.sim.state().Patients, "only the two patients of the test")
	require.Zero(t, r.c.queueStatus().Total, "bad input was queued")
}

// badInputRig is TestBookingBadInput's fixture: flowgate and the simulator
// on one Redis database, two patients, and a valid createAppt request.
type badInputRig struct {
	sim        *simProc
	p          *proc
	c          *bookingClient
	pat, other contracts.PatientCreatedResponse
	issued     time.Time // when pat's token was issued
	slot       contracts.ApptSlot
	valid      contracts.CreateApptRequest
	validJSON  []byte
}

func startBadInput(t *testing.T) *badInputRig {
	t.Helper()
	db := redistest.New(t)
	sim := startSim(t, 1, "off")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_AUTH_MODE": "token", "BOOKING_SESSION_TTL": "3s",
	}))
	r := &badInputRig{sim: sim, p: p, c: newBookingClient(t, p)}
	r.pat = r.c.createPatient("Bea", "Bad", "call-bad")
	r.issued = time.Now()
	r.other = r.c.createPatient("Otto", "Other", "call-bad-other")
	r.slot = r.c.slots("call-bad", 1)[0]
	r.valid = apptReq(r.pat.PatientGUID, r.pat.BookingAuthToken, r.slot, "Bad Input", "call-bad-x")
	var err error
	r.validJSON, err = json.Marshal(r.valid)
	require.NoError(t, err)
	return r
}

// nothingBooked: no SetAppointment reached the simulator, nothing is booked.
func (r *badInputRig) nothingBooked(t *testing.T, what string) {
	t.Helper()
	st := r.sim.state()
	require.Zero(t, st.Calls["SetAppointment"], "%s reached SetAppointment", what)
	require.Empty(t, st.Appointments, "%s booked", what)
}

// validation sends body and expects the VALIDATION_ERROR shape.
func (r *badInputRig) validation(t *testing.T, what string, body any) contracts.ApptValidationResponse {
	t.Helper()
	raw, et := r.c.appt(body)
	require.Equal(t, contracts.BookingErrValidation, et, "%s: %s", what, truncate(raw))
	v := strictDecode[contracts.ApptValidationResponse](t, raw)
	require.False(t, v.Success)
	require.NotNil(t, v.Debug.MissingFields, "missing_fields is always a list")
	require.Equal(t, contracts.StateTransfer, v.LLMGuidance.CurrentState)
	require.Equal(t, contracts.ActionTransferToAgent, v.LLMGuidance.ActionRequired)
	require.Equal(t, "Do NOT tell the caller the appointment is booked.", v.LLMGuidance.Critical)
	r.nothingBooked(t, what)
	return v
}

// authRejected sends req and expects the booking-auth refusal code.
func (r *badInputRig) authRejected(t *testing.T, what, code string, req contracts.CreateApptRequest) contracts.ApptAuthRejectedResponse {
	t.Helper()
	raw, et := r.c.appt(req)
	require.Equal(t, code, et, "%s: %s", what, truncate(raw))
	a := strictDecode[contracts.ApptAuthRejectedResponse](t, raw)
	require.False(t, a.Success)
	require.Equal(t, contracts.AuthMessage(code), a.Message)
	require.Equal(t, "token", a.Debug.AuthMode)
	require.Equal(t, req.PatientGUID, a.Debug.ReceivedPatientGUID)
	require.Equal(t, "booking_auth_failed", a.LLMGuidance.ErrorType)
	require.Equal(t, "Call chord_ortho_patient action=create FIRST", a.LLMGuidance.Critical)
	require.Len(t, a.LLMGuidance.RecoverySteps, 3)
	r.nothingBooked(t, what)
	return a
}

// unreadableBodies: bodies flowgate cannot read get VALIDATION_ERROR,
// reason invalid_request.
func (r *badInputRig) unreadableBodies(t *testing.T) {
	pat, validJSON := r.pat, r.validJSON
	for name, body := range map[string]string{
		"malformed JSON":          `{"patientGUID":"` + pat.PatientGUID + `","startTime":`,
		"not an object":           `["createAppt"]`,
		"two values":              string(validJSON) + string(validJSON),
		"wrong type: minutes":     strings.Replace(string(validJSON), `"minutes":45`, `"minutes":"forty-five"`, 1),
		"wrong type: patientGUID": strings.Replace(string(validJSON), `"patientGUID":"`+pat.PatientGUID+`"`, `"patientGUID":12345`, 1),
		"wrong type: children":    strings.Replace(string(validJSON), `{`, `{"children":"Tommy",`, 1),
		"empty body":              ``,
	} {
		v := r.validation(t, name, body)
		require.Equal(t, "invalid_request", v.LLMGuidance.TransferReason, name)
		require.NotEmpty(t, v.Debug.ErrorMessage, name)
		require.True(t, strings.HasPrefix(v.Message, "Invalid request: "), "%s: %s", name, v.Message)
	}
	v := r.validation(t, "wrong type", strings.Replace(string(validJSON), `"minutes":45`, `"minutes":"forty-five"`, 1))
	require.Contains(t, v.Debug.ErrorMessage, "minutes", "the field is named")
}

// bodySizes: over the booking endpoints' 64 KiB (bookinghttp.DefaultMaxBody)
// but under the server's 1 MiB, the VALIDATION_ERROR shape, 200; 10 MB is
// over HTTP_BODY_LIMIT (1 MiB), refused by the HTTP server before the route
// runs — the flowgate error envelope with 413 (HTTP_BODY_LIMIT: "larger
// bodies get 413 too_large"), not a booking shape.
func (r *badInputRig) bodySizes(t *testing.T) {
	big := r.valid
	big.Note = strings.Repeat("n", 100<<10)
	v := r.validation(t, "100 KiB body", big)
	require.Contains(t, v.Debug.ErrorMessage, "at most 65536")

	huge := append([]byte(`{"note":"`), append([]byte(strings.Repeat("x", 10<<20)), `"}`...)...)
	status, raw := rawPost(t, r.p, bookingBase+"/createAppt", huge)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, truncate(raw))
	env := strictDecode[errorEnvelope](t, raw)
	require.False(t, env.Success)
	require.Equal(t, contracts.CodeTooLarge, env.Error.Code)
	r.nothingBooked(t, "10 MB body")
}

// missingAndInvalidFields: every field not sent is named, as the original,
// even those a configured default fills; defaulted_fields says which. An
// invalid GUID is named, and the token is never echoed.
func (r *badInputRig) missingAndInvalidFields(t *testing.T) {
	pat := r.pat
	v := r.validation(t, "missing startTime", contracts.CreateApptRequest{PatientGUID: pat.PatientGUID, BookingAuthToken: pat.BookingAuthToken})
	require.Equal(t, []string{"startTime", "scheduleViewGUID", "scheduleColumnGUID"}, v.Debug.MissingFields)
	require.Equal(t, []string{"scheduleViewGUID", "scheduleColumnGUID"}, v.Debug.DefaultedFields)
	bad := r.valid
	bad.ScheduleColumnGUID = "not-a-guid"
	v = r.validation(t, "invalid column", bad)
	require.Equal(t, []string{"scheduleColumnGUID"}, v.Debug.InvalidFields)
	require.Equal(t, false, v.Debug.ReceivedParams["hasBookingToken"])
	require.NotContains(t, string(mustJSON(t, v)), pat.BookingAuthToken, "the token is echoed")
}

// badBookingTokens: garbage, a well-formed one naming a slot that was never
// offered (the slot cache does not hold it), and a tampered one.
func (r *badInputRig) badBookingTokens(t *testing.T) {
	pat, slot := r.pat, r.slot
	for name, tok := range map[string]string{
		"garbage bookingToken": "!!not-a-booking-token!!",
		"unknown bookingToken": base64JSON(t, map[string]any{"startTime": "1/5/2099 9:00:00 AM",
			"scheduleViewGUID": slot.ScheduleViewGUID, "scheduleColumnGUID": slot.ScheduleColumnGUID,
			"appointmentTypeGUID": slot.AppointmentTypeGUID, "minutes": 45}),
		"tampered bookingToken": strings.Replace(slot.BookingToken, slot.BookingToken[10:14], "AAAA", 1),
	} {
		req := tokenReq(pat.PatientGUID, pat.BookingAuthToken, slot, "Bad Token", "call-bad-x")
		req.BookingToken = tok
		v := r.validation(t, name, req)
		require.Equal(t, []string{"bookingToken"}, v.Debug.InvalidFields, name)
		require.Equal(t, "invalid_scheduling_data", v.LLMGuidance.TransferReason, name)
	}
}

// authChecks: the booking-auth checks (§4.2) before EXPIRED, in the seed's
// order: missing, malformed, signature invalid, GUID mismatch (the answer
// names the token's patient).
func (r *badInputRig) authChecks(t *testing.T) {
	pat, other, valid := r.pat, r.other, r.valid
	noToken := valid
	noToken.BookingAuthToken = ""
	noToken.PatientGUID = strings.ToUpper(uuid.NewString()) // no cached session to inject from
	r.authRejected(t, "no token", contracts.BookingAuthMissing, noToken)

	for name, tok := range map[string]string{
		"no dot":            "eyJwYXRpZW50R1VJRCI6IngifQ",
		"three parts":       pat.BookingAuthToken + ".x",
		"empty signature":   strings.SplitN(pat.BookingAuthToken, ".", 2)[0] + ".",
		"signed, not JSON":  signToken([]byte("not json at all")),
		"signed, no expiry": signToken([]byte(`{"sessionId":"s","patientGUID":"` + pat.PatientGUID + `","createdAt":1,"nonce":"ab"}`)),
	} {
		req := valid
		req.BookingAuthToken = tok
		r.authRejected(t, name, contracts.BookingAuthMalformed, req)
	}

	payload, sig, _ := strings.Cut(pat.BookingAuthToken, ".")
	flipped := []byte(sig)
	flipped[3] ^= 0x01
	raw2, err := base64URLDecode(payload)
	require.NoError(t, err)
	forgedPayload := strings.Replace(string(raw2), pat.PatientGUID, other.PatientGUID, 1)
	for name, tok := range map[string]string{
		"signature changed": payload + "." + string(flipped),
		"payload changed":   base64URLEncode([]byte(forgedPayload)) + "." + sig,
		"other secret":      payload + "." + base64URLEncode(make([]byte, 32)),
	} {
		req := valid
		req.BookingAuthToken = tok
		r.authRejected(t, name, contracts.BookingAuthSignatureInvalid, req)
	}

	mismatch := valid
	mismatch.BookingAuthToken = other.BookingAuthToken
	rej := r.authRejected(t, "another patient's token", contracts.BookingAuthGUIDMismatch, mismatch)
	require.Equal(t, other.PatientGUID, string(rej.Debug.CorrectPatientGUID))
	require.Equal(t, other.PatientGUID, rej.LLMGuidance.CorrectPatientGUID)
	require.Less(t, time.Since(r.issued), 3*time.Second, "the checks before EXPIRED took longer than the token TTL")
}

// expiredTokens: EXPIRED for a forged token that expired long ago, and for
// the real one once BOOKING_SESSION_TTL has passed; the session cache
// expired with it, so there is no token to inject any more.
func (r *badInputRig) expiredTokens(t *testing.T) {
	pat, valid := r.pat, r.valid
	expired := valid
	expired.BookingAuthToken = signToken([]byte(fmt.Sprintf(`{"sessionId":"call-bad","patientGUID":%q,"createdAt":%d,"expiresAt":%d,"nonce":"0123456789ab"}`,
		pat.PatientGUID, time.Now().Add(-time.Hour).UnixMilli(), time.Now().Add(-time.Minute).UnixMilli())))
	r.authRejected(t, "forged expired token", contracts.BookingAuthExpired, expired)
	time.Sleep(time.Until(r.issued.Add(3500 * time.Millisecond))) // the real BOOKING_SESSION_TTL passes
	r.authRejected(t, "token past BOOKING_SESSION_TTL", contracts.BookingAuthExpired, valid)
	afterTTL := valid
	afterTTL.BookingAuthToken = ""
	afterTTL.UUI = "call-bad"
	r.authRejected(t, "no token after the session expired", contracts.BookingAuthMissing, afterTTL)
}

// createPatientBadInput: createPatient's bad input has its own failure
// shape (200).
func (r *badInputRig) createPatientBadInput(t *testing.T) {
	status, raw := r.c.post("createPatient", `{"patientFirstName":`)
	require.Equal(t, http.StatusOK, status, string(raw))
	pf := strictDecode[contracts.PatientFailedResponse](t, raw)
	require.Equal(t, contracts.BookingErrValidation, pf.ErrorType)
	status, raw = r.c.post("createPatient", `{"patientLastName":"NoFirst"}`)
	require.Equal(t, http.StatusOK, status, string(raw))
	pf = strictDecode[contracts.PatientFailedResponse](t, raw)
	require.Equal(t, []string{"patientFirstName"}, pf.MissingFields)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func base64JSON(t *testing.T, v any) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(mustJSON(t, v)) // as slots.EncodeToken
}
