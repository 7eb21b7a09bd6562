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
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
)

// Both faces and cancelAppt over ONE flowgate binary against the Cloud9
// simulator: its /v1/holds (the Cloud9 catalogue source: chairs as
// specialists, the Cloud9 appointment type GUID as the type), its
// /v1/holds/stream, and the Node-RED createAppt / getApptSlots /
// cancelAppt. TestHoldsBothFaces covers the seed-003 cases with an
// in-process web face; this one proves the binary's own wiring.
// Reproduce: go test -run TestHoldsBinaryCrossFaceAndCancel -v ./test/
func TestHoldsBinaryCrossFaceAndCancel(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 60, "5/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "100/min", map[string]string{"PRACTICE_TIME_ZONE": simZone}))
	c := newBookingClient(t, p)
	patA := c.createPatient("Ann", "Alpha", "call-a")
	time.Sleep(1100 * time.Millisecond) // flowgate's SetPatient spacing
	patB := c.createPatient("Bob", "Beta", "call-b")
	list := distinctSlots(t, c.slots("call-a", 3), 3)
	typ := list[0].AppointmentTypeGUID
	require.NotEmpty(t, typ)
	stream, _ := sseEvents(t, fmt.Sprintf("%s/v1/holds/stream?appointmentTypeId=%s&clientId=board-1&leaseMs=120000", p.Base, typ))
	nextOf(t, stream, "connected")
	onSlot := func(typName string, s contracts.ApptSlot) map[string]any {
		t.Helper()
		start := holds.FormatStart(utc(t, s.StartTime))
		for {
			ev := nextOf(t, stream, typName)
			if strings.EqualFold(fmt.Sprint(ev["specialistId"]), col(s)) && ev["slotStartDate"] == start {
				return ev
			}
		}
	}

	// A web hold (binary's POST /v1/holds) shows on the stream and refuses createAppt.
	status, web := binaryHold(t, p.Base, typ, "web-1", list[0])
	require.Equal(t, http.StatusCreated, status)
	ev := onSlot("hold", list[0])
	require.Equal(t, holds.FaceWeb, ev["face"])
	raw, et := c.appt(apptReq(patB.PatientGUID, patB.BookingAuthToken, list[0], "Bea Beta", "call-b"))
	require.Equal(t, contracts.BookingErrSlotReserved, et, truncate(raw))
	require.Contains(t, string(raw), "reserved by another session")
	require.Zero(t, sim.state().Calls["SetAppointment"], "SLOT_RESERVED reached Cloud9")
	binaryRelease(t, p.Base, "web-1", web.HoldID)
	onSlot("release", list[0])

	// createAppt books: while it is in flight (Cloud9 answers SetAppointment
	// after 3 s) its reservation is a hold event carrying the Cloud9
	// appointment type GUID and refuses a web hold (409 from the engine);
	// then it confirms, and the booked slot leaves the tiered cache (even
	// for the booking session, which would still see a mere reservation of
	// its own) and Cloud9's list, so the catalogue refuses it as booked
	// (409 slot_taken: on the type's grid, no longer open).
	sim.setFaults(cloud9sim.FaultsJSON{Latency: "3s", Procedures: []string{"SetAppointment"}})
	inFlight := make(chan contracts.ApptBookedResponse, 1)
	go func() { // the answer is checked below
		var r contracts.ApptBookedResponse
		body, _ := json.Marshal(apptReq(patA.PatientGUID, patA.BookingAuthToken, list[1], "Al Alpha", "call-a"))
		if resp, err := c.http.Post(p.Base+bookingBase+"/createAppt", "application/json", bytes.NewReader(body)); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&r)
			_ = resp.Body.Close()
		}
		inFlight <- r
	}()
	ev = onSlot("hold", list[1])
	require.Equal(t, holds.FaceIVA, ev["face"])
	require.Equal(t, typ, ev["appointmentTypeId"])
	require.NotContains(t, ev, "clientId", "the caller's session id is not published")
	status, _ = binaryHold(t, p.Base, typ, "web-2", list[1])
	require.Equal(t, http.StatusConflict, status, "a createAppt reservation refuses a web hold")
	booked := <-inFlight
	sim.setFaults(cloud9sim.FaultsJSON{})
	require.True(t, booked.Success)
	require.NotEmpty(t, booked.AppointmentGUID)
	onSlot("confirm", list[1])
	require.False(t, offeredTo(c, "call-a", list[1]), "booked slot still in the cache")
	require.False(t, offeredTo(c, "call-b", list[1]))
	status, _ = binaryHold(t, p.Base, typ, "web-2", list[1])
	require.Equal(t, http.StatusConflict, status, "a slot booked in Cloud9 is taken")

	// cancelAppt: the hold is released (release on the stream), the slot
	// goes back into the cache and is offered again.
	status, raw = c.post("cancelAppt", contracts.CancelApptRequest{AppointmentGUID: booked.AppointmentGUID, PatientGUID: patA.PatientGUID})
	require.Equal(t, http.StatusOK, status, string(raw))
	cr := strictDecode[contracts.CancelResponse](t, raw)
	require.True(t, cr.Success, string(raw))
	require.True(t, cr.SlotReleased, string(raw))
	require.True(t, cr.CacheRevalidated, string(raw))
	onSlot("release", list[1])
	require.True(t, offeredTo(c, "call-b", list[1]), "cancelled slot not offered again")
	status, _ = binaryHold(t, p.Base, typ, "web-3", list[1])
	require.Equal(t, http.StatusCreated, status, "the cancelled slot can be held on the web")
}

// binaryHold posts /v1/holds on base for slot s (the Cloud9 catalogue's
// specialist is the chair GUID).
func binaryHold(t *testing.T, base, typ, client string, s contracts.ApptSlot) (int, holdshttp.HoldResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"appointmentTypeId": typ, "clientId": client,
		"slotStartDate": holds.FormatStart(utc(t, s.StartTime)), "specialistId": col(s)})
	require.NoError(t, err)
	resp, err := http.Post(base+"/v1/holds", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var h holdshttp.HoldResponse
	_ = json.Unmarshal(raw, &h)
	t.Logf("POST /v1/holds %s → %d %s", client, resp.StatusCode, raw)
	return resp.StatusCode, h
}

func binaryRelease(t *testing.T, base, client, holdID string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, base+"/v1/holds/"+holdID+"?clientId="+client, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// offeredTo reports whether getApptSlots for the session uui offers s.
func offeredTo(c *bookingClient, uui string, s contracts.ApptSlot) bool {
	for _, o := range c.slots(uui, 0) {
		if sameStart(o.StartTime, s.StartTime) && strings.EqualFold(o.ScheduleColumnGUID, s.ScheduleColumnGUID) {
			return true
		}
	}
	return false
}
