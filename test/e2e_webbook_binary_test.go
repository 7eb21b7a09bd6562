package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/test/redistest"
)

// Web bookings of a Cloud9-sourced appointment type reach Cloud9, through
// ONE flowgate binary against the Cloud9 simulator (`flowgate cloud9-sim`):
//
//   - hold a Cloud9 slot → /book without patientGUID → 422
//     PATIENT_REQUIRED, the hold kept → /book with the patient → 201, the
//     appointment in the simulator (and in Cloud9's
//     GetAppointmentListByPatient through getPatientAppts);
//   - a second client's hold on that slot → 409 slot_taken (booked in
//     Cloud9, not "not on the grid");
//   - the /book retried with the same hold → 201, the same appointment,
//     no second SetAppointment;
//   - a booking whose SetAppointment answer is lost (the simulator commits
//     and drops the connection) → 202 with the operation; the worker
//     checks Cloud9 first and completes it without sending again; the
//     /book retried → 201 with that appointment, which exists once.
//
// Reproduce: go test -run TestWebBookReachesCloud9 -v ./test/
func TestWebBookReachesCloud9(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 60, "100/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{"PRACTICE_TIME_ZONE": simZone,
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms", "BOOKING_UNCERTAIN_GRACE": "1s"}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Wendy", "Web", "call-web")
	list := distinctSlots(t, c.slots("call-web", 2), 2)
	typ := list[0].AppointmentTypeGUID
	require.NotEmpty(t, typ)
	s := list[0]

	status, h := binaryHold(t, p.Base, typ, "web-1", s)
	require.Equal(t, http.StatusCreated, status)

	// No patient: 422 PATIENT_REQUIRED, nothing sent, the hold kept.
	status, raw := webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
		holdshttp.BookRequest{HoldID: h.HoldID, ClientID: "web-1"})
	require.Equal(t, http.StatusUnprocessableEntity, status, string(raw))
	e := strictDecode[contracts.ErrorResponse](t, raw).Error
	require.Equal(t, contracts.CodePatientRequired, e.Code)
	require.Equal(t, "patientGUID", e.Details["field"])
	require.Zero(t, sim.state().Calls["SetAppointment"])
	status, raw = webPost(t, http.MethodPatch, p.Base+"/v1/holds", map[string]string{"holdId": h.HoldID, "clientId": "web-1"})
	require.Equal(t, http.StatusOK, status, string(raw))
	require.Contains(t, string(raw), `"ok":true`, "the hold is kept")

	// With the patient: booked in Cloud9 through the booking core.
	status, raw = webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
		holdshttp.BookRequest{HoldID: h.HoldID, ClientID: "web-1", PatientGUID: pat.PatientGUID})
	require.Equal(t, http.StatusCreated, status, string(raw))
	bk := strictDecode[holdshttp.BookResponse](t, raw).Appointment
	require.Equal(t, holdshttp.StatusBooked, bk.Status)
	require.NotEmpty(t, bk.Cloud9AppointmentGUID)
	require.Equal(t, pat.PatientGUID, bk.PatientGUID)
	require.True(t, strings.EqualFold(col(s), bk.SpecialistID))
	require.Equal(t, utc(t, s.StartTime), bk.SlotStartDate)
	got := apptsAt(sim.state(), pat.PatientGUID, s.StartTime, s.ScheduleColumnGUID)
	require.Len(t, got, 1, "the appointment is in Cloud9")
	require.True(t, strings.EqualFold(got[0].GUID, bk.Cloud9AppointmentGUID))
	require.True(t, patientHas(t, c, pat.PatientGUID, bk.Cloud9AppointmentGUID), "GetAppointmentListByPatient lists it")

	// Another client: the booked Cloud9 slot is taken (409), not off the grid.
	status, _ = binaryHold(t, p.Base, typ, "web-2", s)
	require.Equal(t, http.StatusConflict, status)
	status, raw = webPost(t, http.MethodPost, p.Base+"/v1/holds", map[string]string{"appointmentTypeId": typ, "clientId": "web-2",
		"slotStartDate": bk.SlotStartDate.Format(time.RFC3339), "specialistId": bk.SpecialistID})
	require.Equal(t, http.StatusConflict, status, string(raw))
	require.Equal(t, "slot_taken", strictDecode[contracts.ErrorResponse](t, raw).Error.Details["reason"])

	// The same /book again: the same appointment, one SetAppointment.
	status, raw = webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
		holdshttp.BookRequest{HoldID: h.HoldID, ClientID: "web-1", PatientGUID: pat.PatientGUID})
	require.Equal(t, http.StatusCreated, status, string(raw))
	require.Equal(t, bk.Cloud9AppointmentGUID, strictDecode[holdshttp.BookResponse](t, raw).Appointment.Cloud9AppointmentGUID)
	st := sim.state()
	require.Equal(t, 1, st.Calls["SetAppointment"], "booked once")
	require.Len(t, apptsAt(st, pat.PatientGUID, s.StartTime, s.ScheduleColumnGUID), 1)

	// Cloud9 commits the next booking but its answer is lost: the core
	// queues it (check first) → 202 with the operation.
	q := list[1]
	status, h2 := binaryHold(t, p.Base, typ, "web-3", q)
	require.Equal(t, http.StatusCreated, status)
	sim.setFaults(cloud9sim.FaultsJSON{DropAfterCommit: map[string]int{"SetAppointment": 1}})
	status, raw = webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
		holdshttp.BookRequest{HoldID: h2.HoldID, ClientID: "web-3", PatientGUID: pat.PatientGUID})
	require.Equal(t, http.StatusAccepted, status, string(raw))
	qr := strictDecode[holdshttp.BookQueuedResponse](t, raw)
	require.Equal(t, holdshttp.StatusQueued, qr.Appointment.Status)
	require.True(t, strings.HasPrefix(qr.Operation.ID, "op-"), qr.Operation.ID)
	require.Equal(t, contracts.OpSetAppointment, qr.Operation.OperationType)
	require.Contains(t, qr.StatusEndpoint, "operationId="+qr.Operation.ID)
	require.Equal(t, 2, sim.state().Calls["SetAppointment"])
	status, _ = binaryHold(t, p.Base, typ, "web-4", q)
	require.Equal(t, http.StatusConflict, status, "held for the queued booking")

	op, _ := c.waitOp(qr.Operation.ID, contracts.OpCompleted, 60*time.Second)
	require.NotNil(t, op.Result)
	status, raw = webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
		holdshttp.BookRequest{HoldID: h2.HoldID, ClientID: "web-3", PatientGUID: pat.PatientGUID})
	require.Equal(t, http.StatusCreated, status, "the retry finds the queued booking made: %s", raw)
	done := strictDecode[holdshttp.BookResponse](t, raw).Appointment
	require.True(t, strings.EqualFold(op.Result.AppointmentGUID, done.Cloud9AppointmentGUID))
	st = sim.state()
	require.Equal(t, 2, st.Calls["SetAppointment"], "the worker checked Cloud9 first and did not send again")
	require.Len(t, apptsAt(st, pat.PatientGUID, q.StartTime, q.ScheduleColumnGUID), 1, "the queued booking exists once")
	require.Len(t, st.Appointments, 2)
}

// With BOOKING_AUTH_MODE=token, a web booking of a Cloud9 type needs the
// patient's bookingAuthToken as createAppt does: without one (or with
// another patient's) /book is 401, nothing is sent to Cloud9 and the hold
// is kept; with it, 201. Before, /v1 booked any patientGUID in token mode.
func TestWebBookHonoursTokenMode(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 60, "100/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "600/min", map[string]string{"PRACTICE_TIME_ZONE": simZone,
		"BOOKING_AUTH_MODE": "token"}))
	c := newBookingClient(t, p)
	pat := c.createPatient("Tina", "Token", "call-tok")
	other := c.createPatient("Otto", "Other", "call-other")
	s := c.slots("call-tok", 1)[0]
	typ := s.AppointmentTypeGUID
	status, h := binaryHold(t, p.Base, typ, "web-tok", s)
	require.Equal(t, http.StatusCreated, status)

	book := func(token string) (int, contracts.ErrorBody) {
		status, raw := webPost(t, http.MethodPost, p.Base+"/v1/appointment-types/"+typ+"/book",
			holdshttp.BookRequest{HoldID: h.HoldID, ClientID: "web-tok", PatientGUID: pat.PatientGUID, BookingAuthToken: token})
		if status >= 400 {
			return status, strictDecode[contracts.ErrorResponse](t, raw).Error
		}
		return status, contracts.ErrorBody{}
	}
	status, e := book("")
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, contracts.CodeUnauthorized, e.Code)
	require.Equal(t, contracts.BookingAuthMissing, e.Details["errorType"])
	status, e = book(other.BookingAuthToken)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, contracts.BookingAuthGUIDMismatch, e.Details["errorType"])
	require.Zero(t, sim.state().Calls["SetAppointment"], "nothing reached Cloud9")

	status, _ = book(pat.BookingAuthToken)
	require.Equal(t, http.StatusCreated, status, "the hold was kept and booked with the patient's token")
	require.Len(t, apptsAt(sim.state(), pat.PatientGUID, s.StartTime, s.ScheduleColumnGUID), 1)
}

// webPost sends body as JSON with method and returns the status and body.
func webPost(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	t.Logf("%s %s → %d %s", method, url, resp.StatusCode, truncate(raw))
	return resp.StatusCode, raw
}

// patientHas reports whether getPatientAppts (Cloud9's
// GetAppointmentListByPatient) lists appointment guid for patient.
func patientHas(t *testing.T, c *bookingClient, patient, guid string) bool {
	t.Helper()
	status, raw := c.post("getPatientAppts", contracts.GetPatientApptsRequest{PatientGUID: patient})
	require.Equal(t, http.StatusOK, status, string(raw))
	r := strictDecode[contracts.PatientApptsResponse](t, raw)
	for _, a := range r.Appointments {
		for _, v := range a {
			if strings.EqualFold(fmt.Sprint(v), guid) {
				return true
			}
		}
	}
	return false
}
