package holdshttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp/holdshttptest"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/logtest"
)

// typeC9 is an appointment type booked in Cloud9 (External).
const (
	typeC9  = "type-c9"
	patient = "0f6a4b2e-1111-4222-8333-444455556666"
)

// fakeBooker stands in for the sidecar's booker: Book takes the web hold
// over as the booking's reservation (the engine's Adopt, as the real one
// does through the reservation store) and makes (or queues) one booking
// per hold; Resume finds it through the takeover's record.
type fakeBooker struct {
	eng    *holds.Engine
	queued bool
	err    error

	mu    sync.Mutex
	books []holdshttp.ExternalBooking
	made  map[string]holdshttp.Booked // by hold id
}

func (f *fakeBooker) Book(ctx context.Context, b holdshttp.ExternalBooking) (holdshttp.Booked, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.books = append(f.books, b)
	if f.err != nil {
		return holdshttp.Booked{}, f.err
	}
	h := b.Hold
	_, err := f.eng.Adopt(ctx, holds.AdoptRequest{ClaimRequest: holds.ClaimRequest{AppointmentTypeID: h.AppointmentTypeID,
		ClientID: "web-" + h.HoldID, SlotStart: h.SlotStartDate, SlotEnd: h.SlotEndDate, SpecialistID: h.SpecialistID,
		Face: holds.FaceIVA, TTL: 90 * time.Second, FaceKey: "SlotReservation:test:" + h.HoldID, Refresh: true},
		FromClientID: h.ClientID, FromHoldID: h.HoldID, Memo: b.PatientGUID})
	if err != nil {
		return holdshttp.Booked{}, err
	}
	out := holdshttp.Booked{Hold: h}
	if f.queued {
		out.Operation = &contracts.QueueOperation{ID: "op-1-" + h.HoldID, Status: contracts.OpPending, MaxAttempts: 10}
		out.StatusEndpoint = "/chord/ortho-prd/checkOperationStatus?operationId=" + out.Operation.ID
	} else {
		out.Cloud9AppointmentGUID = "c9-" + h.HoldID
	}
	f.made[h.HoldID] = out
	return out, nil
}

func (f *fakeBooker) Resume(ctx context.Context, b holdshttp.ExternalBooking) (holdshttp.Booked, bool, error) {
	a, found, err := f.eng.Adopted(ctx, b.Hold.ClientID, b.Hold.HoldID)
	if err != nil || !found {
		return holdshttp.Booked{}, false, err
	}
	if a.Memo != b.PatientGUID {
		return holdshttp.Booked{}, false, contracts.Errorf(contracts.CodeConflict, "this hold was booked for another patient")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.made[b.Hold.HoldID]
	out.Hold = a.From
	return out, true, nil
}

func (f *fakeBooker) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.books)
}

// external is the bundle serving typeA (local) and typeC9 (Cloud9) with
// booker (nil: none configured).
func (b *bundle) external(t *testing.T, booker holdshttp.Booker) {
	t.Helper()
	b.cat = holdshttptest.New(holdshttptest.Type{ID: typeA, Specialists: map[string]int{specX: 1, specY: 1, specZ: 0}},
		holdshttptest.Type{ID: typeC9, External: true, CooldownMinutes: 60, Specialists: map[string]int{specX: 1, specY: 1}})
	logger := slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))
	app, err := web.New(web.Options{Logger: logger})
	require.NoError(t, err)
	h, err := holdshttp.New(holdshttp.Config{Engine: b.eng, Catalog: b.cat, Booker: booker, Now: b.clock.Now, Logger: logger,
		RequestTimeout: 20 * time.Second})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	b.app = app
}

func (b *bundle) holdC9(t *testing.T, client, spec string) holdshttp.HoldResponse {
	t.Helper()
	r := b.do(t, "POST", "/v1/holds", map[string]string{"appointmentTypeId": typeC9, "clientId": client,
		"slotStartDate": holds.FormatStart(slot9), "specialistId": spec})
	require.Equal(t, 201, r.Status, string(r.Body))
	var h holdshttp.HoldResponse
	r.decode(t, &h)
	return h
}

func bookC9(client, holdID, patientGUID string) map[string]string {
	m := map[string]string{"clientId": client, "holdId": holdID}
	if patientGUID != "" {
		m["patientGUID"] = patientGUID
	}
	return m
}

// Without a patient a Cloud9 type's /book is 422 PATIENT_REQUIRED and
// changes nothing (the hold is kept); with one it is booked through the
// booker: 201, status booked, the Cloud9 appointment, the cooldown set
// under it. The hold was taken over: a retry is answered with the same
// booking (Resume), and nobody else can hold the slot.
func TestBookExternalNeedsThePatientThenBooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := &fakeBooker{eng: b.eng, made: map[string]holdshttp.Booked{}}
	b.external(t, fb)
	hd := b.holdC9(t, "c1", specX)
	before := b.snapshot(t)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, ""))
	require.Equal(t, 422, r.Status, string(r.Body))
	e := r.errBody(t)
	require.Equal(t, contracts.CodePatientRequired, e.Code)
	require.Equal(t, "patientGUID", e.Details["field"])
	require.Equal(t, before, b.snapshot(t), "nothing changed: the hold is kept")
	require.Zero(t, fb.calls())
	r = b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c1", "holdId": hd.HoldID})
	require.Equal(t, 200, r.Status)
	require.Contains(t, string(r.Body), `"ok":true`, "the hold is still live")

	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 201, r.Status, string(r.Body))
	var bk holdshttp.BookResponse
	r.decode(t, &bk)
	require.Equal(t, holdshttp.Appointment{AppointmentID: hd.HoldID, AppointmentTypeID: typeC9, SpecialistID: specX, ClientID: "c1",
		SlotStartDate: slot9, SlotEndDate: slot9.Add(30 * time.Minute), BookedAt: t0, PatientGUID: patient,
		Cloud9AppointmentGUID: "c9-" + hd.HoldID, Status: holdshttp.StatusBooked}, bk.Appointment)
	require.Equal(t, 1, fb.calls())
	require.Equal(t, hd.HoldID, fb.books[0].Hold.HoldID, "the live hold is handed to the booker")
	require.Empty(t, b.cat.Appointments(), "not recorded in the catalogue: Cloud9 keeps it")
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeC9)
	require.NoError(t, err)
	require.Equal(t, time.Hour, left.Round(time.Minute))
	cleared, err := b.eng.ClearCooldown(b.ctx, "c9-"+hd.HoldID)
	require.NoError(t, err)
	require.True(t, cleared, "the cooldown is found by the Cloud9 appointment (cancelAppt)")

	r = b.do(t, "POST", "/v1/holds", map[string]string{"appointmentTypeId": typeC9, "clientId": "c2",
		"slotStartDate": holds.FormatStart(slot9), "specialistId": specX})
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Equal(t, "slot_taken", r.errBody(t).Details["reason"])

	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 201, r.Status, "a retry answers the same booking: %s", r.Body)
	var again holdshttp.BookResponse
	r.decode(t, &again)
	require.Equal(t, bk.Appointment.Cloud9AppointmentGUID, again.Appointment.Cloud9AppointmentGUID)
	require.Equal(t, bk.Appointment.SlotStartDate, again.Appointment.SlotStartDate)
	require.Equal(t, 1, fb.calls(), "not booked again")
	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, strings.Replace(patient, "0f", "1f", 1)))
	require.Equal(t, 409, r.Status, "a retry for another patient: %s", r.Body)
	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c2", hd.HoldID, patient))
	require.Equal(t, 409, r.Status, "another client's retry finds nothing: %s", r.Body)
}

// A booking the core queued is answered 202 with the operation (queue-
// status' shape) and where to follow it; the appointment says queued.
func TestBookExternalQueuedIs202(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := &fakeBooker{eng: b.eng, made: map[string]holdshttp.Booked{}, queued: true}
	b.external(t, fb)
	hd := b.holdC9(t, "c1", specY)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 202, r.Status, string(r.Body))
	var q holdshttp.BookQueuedResponse
	r.decode(t, &q)
	require.Equal(t, holdshttp.StatusQueued, q.Appointment.Status)
	require.Empty(t, q.Appointment.Cloud9AppointmentGUID)
	require.Equal(t, "op-1-"+hd.HoldID, q.Operation.ID)
	require.Equal(t, contracts.OpPending, q.Operation.Status)
	require.Contains(t, q.StatusEndpoint, "operationId="+q.Operation.ID)
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeC9)
	require.NoError(t, err)
	require.Positive(t, left, "the cooldown is set for a queued booking too")
	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 202, r.Status, "the retry follows the same operation: %s", r.Body)
}

// The booker's refusal is answered as it is, the hold is left as the
// booker left it; without a booker the type cannot be booked (503); an
// expired hold that was never taken over is 409; a local type ignores
// patientGUID.
func TestBookExternalRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	refusal := &contracts.Error{Code: contracts.CodeNotFound, Message: "Cloud9 does not know this patient",
		Details: map[string]any{"field": "patientGUID", "errorType": "PATIENT_NOT_FOUND"}}
	fb := &fakeBooker{eng: b.eng, made: map[string]holdshttp.Booked{}, err: refusal}
	b.external(t, fb)
	hd := b.holdC9(t, "c1", specX)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 404, r.Status, string(r.Body))
	require.Equal(t, "PATIENT_NOT_FOUND", r.errBody(t).Details["errorType"])

	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", "never-held", patient))
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Equal(t, "holdId", r.errBody(t).Details["field"])
	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, "has space"))
	require.Equal(t, 400, r.Status, string(r.Body))

	b.external(t, nil)
	r = b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
	require.Equal(t, 503, r.Status, string(r.Body))

	local := b.hold(t, "c3", specZ, slot9)
	r = b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", bookC9("c3", local.HoldID, patient))
	require.Equal(t, 201, r.Status, string(r.Body))
	var bk holdshttp.BookResponse
	r.decode(t, &bk)
	require.Empty(t, bk.Appointment.PatientGUID, "a local type records no patient")
	require.Empty(t, bk.Appointment.Status)
	require.Len(t, b.cat.Appointments(), 1)
	require.NotContains(t, string(r.Body), "patientGUID", "the local answer is unchanged")
}

// Retries of one Cloud9 /book racing each other all answer the one
// booking: before the takeover through Book (the booker's Adopt of its
// own reservation is a refresh), after it through Resume.
func TestBookExternalRetriesAnswerOneBooking(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := &fakeBooker{eng: b.eng, made: map[string]holdshttp.Booked{}}
	b.external(t, fb)
	hd := b.holdC9(t, "c1", specX)
	var wg sync.WaitGroup
	answers := make(chan string, 10)
	for range 10 {
		wg.Go(func() {
			r := b.do(t, "POST", "/v1/appointment-types/"+typeC9+"/book", bookC9("c1", hd.HoldID, patient))
			var bk holdshttp.BookResponse
			_ = json.Unmarshal(r.Body, &bk)
			answers <- fmt.Sprint(r.Status, " ", bk.Appointment.Cloud9AppointmentGUID)
		})
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		require.Equal(t, "201 c9-"+hd.HoldID, a)
	}
}
