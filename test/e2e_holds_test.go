package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp/holdshttptest"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

const simZone = "America/New_York" // cloud9-sim's default -tz

type holdsE2E struct {
	t       *testing.T
	c       *bookingClient
	sim     *simProc
	webAddr string
	eng     *holds.Engine
	iva     *reservation.Store // the IVA face in this process, to hold a slot without booking it
	cat     *holdshttptest.Catalog
	events  chan holds.Event
}

func startHoldsE2E(t *testing.T) *holdsE2E {
	t.Helper()
	db := newTestRedis(t)
	sim := startSim(t, 60, "5/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "100/min", map[string]string{"PRACTICE_TIME_ZONE": simZone}))
	x := &holdsE2E{t: t, c: newBookingClient(t, p), sim: sim, events: make(chan holds.Event, 256)}
	cat := holdshttptest.New(holdshttptest.Type{ID: cloud9.SeedAppointmentTypeGUID, Minutes: 45,
		Specialists: map[string]int{}, Open: func(time.Time) bool { return true }})
	x.webAddr, x.eng = holdsServer(t, db.Client, cat, holdsConfigFor(db, holds.Config{}))
	x.cat = cat
	loc, err := time.LoadLocation(simZone)
	require.NoError(t, err)
	x.iva, err = reservation.New(nil, reservation.Config{Engine: x.eng, Location: loc, ReserveTTL: 1500 * time.Millisecond})
	require.NoError(t, err)

	sub := db.Client.Subscribe(context.Background(), x.eng.EventChannel(cloud9.SeedAppointmentTypeGUID))
	_, err = sub.Receive(context.Background())
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			var ev holds.Event
			if json.Unmarshal([]byte(m.Payload), &ev) == nil {
				x.events <- ev
			}
		}
	}()
	t.Cleanup(func() { _ = sub.Close(); <-done })
	return x
}

// utc is a Cloud9 slot start (the simulator's wall clock) in UTC.
func utc(t *testing.T, startTime string) time.Time {
	t.Helper()
	w, err := cloud9.ParseTime(startTime)
	require.NoError(t, err)
	loc, err := time.LoadLocation(simZone)
	require.NoError(t, err)
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc).UTC()
}

func col(s contracts.ApptSlot) string { return strings.ToLower(s.ScheduleColumnGUID) }

// webHold posts /v1/holds for slot s and returns the status and answer.
func (x *holdsE2E) webHold(client string, s contracts.ApptSlot) (int, holdshttp.HoldResponse) {
	x.t.Helper()
	x.cat.AddSpecialist(cloud9.SeedAppointmentTypeGUID, col(s))
	body, _ := json.Marshal(map[string]string{"appointmentTypeId": cloud9.SeedAppointmentTypeGUID, "clientId": client,
		"slotStartDate": holds.FormatStart(utc(x.t, s.StartTime)), "specialistId": col(s)})
	resp, err := http.Post("http://"+x.webAddr+"/v1/holds", "application/json", bytes.NewReader(body))
	require.NoError(x.t, err)
	defer resp.Body.Close()
	var h holdshttp.HoldResponse
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return resp.StatusCode, h
}

func (x *holdsE2E) webRelease(client, holdID string) {
	x.t.Helper()
	req, err := http.NewRequest(http.MethodDelete, "http://"+x.webAddr+"/v1/holds/"+holdID+"?clientId="+client, nil)
	require.NoError(x.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(x.t, err)
	_ = resp.Body.Close()
	require.Equal(x.t, 200, resp.StatusCode)
}

// offered reports whether getApptSlots for the session uui offers s.
func (x *holdsE2E) offered(uui string, s contracts.ApptSlot) bool {
	x.t.Helper()
	for _, o := range x.c.slots(uui, 0) {
		if sameStart(o.StartTime, s.StartTime) && strings.EqualFold(o.ScheduleColumnGUID, s.ScheduleColumnGUID) {
			return true
		}
	}
	return false
}

// event waits for client's typ event on slot s. Pub/sub channels are not
// per database: other tests' flowgates running in parallel publish on the
// same appointment type's channel for the simulator's same slots, so the
// client (this test's session) is part of the match.
// eventWait bounds how long event waits for one hold event.
const eventWait = 30 * time.Second

func (x *holdsE2E) event(typ, client string, s contracts.ApptSlot) holds.Event {
	x.t.Helper()
	start := utc(x.t, s.StartTime)
	// An expiry reaches the stream through the binary's once-a-second
	// holds_expiry job; on a CI machine running every package at once it
	// once took over 10 s, so the wait is generous.
	deadline := time.After(eventWait)
	var seen []string // the events passed over, for the failure message
	for {
		select {
		case ev := <-x.events:
			if ev.Type == typ && ev.ClientID == client && strings.EqualFold(ev.SpecialistID, col(s)) && ev.SlotStartDate.Equal(start) {
				return ev
			}
			seen = append(seen, fmt.Sprintf("%s %s %s %s", ev.Type, ev.ClientID, ev.SpecialistID, ev.SlotStartDate.Format(time.RFC3339)))
		case <-deadline:
			x.t.Fatalf("no %s event of %s for %s %s (%s) within %s; passed over: %v", typ, client, s.StartTime, col(s),
				start.Format(time.RFC3339), eventWait, seen)
		}
	}
}

func slotOf(s contracts.ApptSlot) slots.Slot {
	return slots.Slot{StartTime: s.StartTime, ScheduleColumnGUID: s.ScheduleColumnGUID, LocationGUID: s.LocationGUID,
		ScheduleViewGUID: s.ScheduleViewGUID, Minutes: s.MinutesInt()}
}

// TestHoldsBothFaces: the IVA face's reservations
// (docs/holds.md#the-hold-engine) and the cross-face cases end to end: a
// flowgate binary serves createAppt / getApptSlots against the Cloud9
// simulator; a web face in this process (/v1/holds over an in-memory
// catalogue that opens any slot) runs on the same Redis DB with the
// binary's key prefix, so both faces share one engine. The binary's own
// /v1/holds, stream and cancelAppt: TestHoldsBinaryCrossFaceAndCancel.
// Reproduce: go test -run TestHoldsBothFaces -v ./test/
func TestHoldsBothFaces(t *testing.T) {
	t.Parallel()
	x := startHoldsE2E(t)
	c := x.c
	patA := c.createPatient("Ann", "Alpha", "call-a")
	time.Sleep(1100 * time.Millisecond) // flowgate's SetPatient spacing
	patB := c.createPatient("Bob", "Beta", "call-b")
	list := distinctSlots(t, c.slots("call-a", 6), 6)

	// Cross-face 1: a web hold refuses createAppt and leaves other sessions' lists.
	status, web := x.webHold("web-1", list[0])
	require.Equal(t, 201, status)
	require.False(t, x.offered("call-b", list[0]), "a web-held slot is offered to a phone caller")
	raw, et := c.appt(apptReq(patB.PatientGUID, patB.BookingAuthToken, list[0], "Bea Beta", "call-b"))
	require.Equal(t, contracts.BookingErrSlotReserved, et, truncate(raw))
	strictDecode[contracts.ApptSlotReservedResponse](t, raw)
	require.Zero(t, x.sim.state().Calls["SetAppointment"], "SLOT_RESERVED reached Cloud9")
	x.webRelease("web-1", web.HoldID)
	require.True(t, x.offered("call-b", list[0]), "released: offered again")

	// Cross-face 2 and seed case 1: session A books through createAppt; its
	// reservation is published (hold, then confirm), refuses a web hold and
	// keeps the slot out of session B's list.
	c.booked(apptReq(patA.PatientGUID, patA.BookingAuthToken, list[1], "Al Alpha", "call-a"))
	ev := x.event("hold", "call-a", list[1])
	require.Equal(t, holds.FaceIVA, ev.Face)
	require.Equal(t, "call-a", ev.ClientID)
	x.event("confirm", "call-a", list[1])
	status, _ = x.webHold("web-2", list[1])
	require.Equal(t, 409, status, "a createAppt reservation refuses a web hold")
	require.False(t, x.offered("call-b", list[1]))
	raw, et = c.appt(apptReq(patB.PatientGUID, patB.BookingAuthToken, list[1], "Bea Beta", "call-b"))
	require.Equal(t, contracts.BookingErrSlotReserved, et, truncate(raw))

	// Seed case 1 as the seed tells it: while session A's createAppt is in
	// flight (Cloud9 answers SetAppointment after 3 s) session B's list
	// already lacks the slot; after A's booking it still does.
	x.sim.setFaults(cloud9sim.FaultsJSON{Latency: "3s", Procedures: []string{"SetAppointment"}})
	inFlight := make(chan []byte, 1)
	body, err := json.Marshal(apptReq(patA.PatientGUID, patA.BookingAuthToken, list[5], "Al Alpha", "call-a"))
	require.NoError(t, err)
	go func() { // no require off the test goroutine: the answer is checked below
		var out []byte
		if resp, err := c.http.Post(c.p.Base+bookingBase+"/createAppt", "application/json", bytes.NewReader(body)); err == nil {
			out, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		inFlight <- out
	}()
	x.event("hold", "call-a", list[5])
	require.False(t, x.offered("call-b", list[5]), "offered to B while A books it")
	raw5 := <-inFlight
	require.Empty(t, errorType(t, raw5), truncate(raw5))
	strictDecode[contracts.ApptBookedResponse](t, raw5)
	x.sim.setFaults(cloud9sim.FaultsJSON{})
	x.event("confirm", "call-a", list[5])
	require.False(t, x.offered("call-b", list[5]))

	// Seed case 2: a reservation expires; the slot is offered again and the
	// expiry reaches the stream as release (the binary's holds_expiry job).
	_, err = x.iva.Reserve(context.Background(), slotOf(list[2]), "call-a", "Ann Alpha")
	require.NoError(t, err)
	require.False(t, x.offered("call-b", list[2]))
	x.event("release", "call-a", list[2])
	require.True(t, x.offered("call-b", list[2]), "expired: offered again")

	// Seed case 3: the reserving session still sees its slot; others do not.
	_, err = x.iva.Reserve(context.Background(), slotOf(list[3]), "call-a", "Ann Alpha")
	require.NoError(t, err)
	require.True(t, x.offered("call-a", list[3]), "own reservation hidden from its session")
	require.False(t, x.offered("call-b", list[3]))

	// Seed case 4: a booking Cloud9 refuses releases the reservation. The
	// slot is booked behind flowgate's back, so Cloud9 says it is taken.
	c9, err := cloud9.New(cloud9.Config{Endpoint: x.sim.URL, ClientID: "x", Username: "x", Password: "x", VendorUsername: "e2e"})
	require.NoError(t, err)
	defer c9.Close()
	_, _, err = c9.SetAppointment(context.Background(), cloud9.AppointmentInput{PatientGUID: patB.PatientGUID,
		StartTime: list[4].StartTime, ScheduleViewGUID: list[4].ScheduleViewGUID, ScheduleColumnGUID: list[4].ScheduleColumnGUID,
		AppointmentTypeGUID: list[4].AppointmentTypeGUID, Minutes: list[4].MinutesInt()})
	require.NoError(t, err)
	raw, et = c.appt(apptReq(patA.PatientGUID, patA.BookingAuthToken, list[4], "Al Alpha", "call-a"))
	require.NotEmpty(t, et, "Cloud9 refused: %s", truncate(raw))
	x.event("hold", "call-a", list[4])
	x.event("release", "call-a", list[4])
	h, _, found, err := x.eng.HolderOf(context.Background(), col(list[4]), utc(t, list[4].StartTime))
	require.NoError(t, err)
	require.False(t, found, "reservation left after a failed booking: %+v", h)
	status, _ = x.webHold("web-4", list[4])
	require.Equal(t, 201, status, "the released slot can be held by the next caller")
}
