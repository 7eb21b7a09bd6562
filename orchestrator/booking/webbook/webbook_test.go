package webbook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/webbook"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

const (
	typeGUID   = "8fc9d063-ae46-4975-a5ae-734c6efe341a"
	columnGUID = "dda0b40c-ace5-4427-8b76-493bf9f7fdc1"
	viewGUID   = "4c9e9333-4951-4eb0-8d97-e1ad83ef422d"
	patient    = "0f6a4b2e-1111-4222-8333-444455556666"
	location   = "1fef9297-7c8b-426b-b0d1-f2275136e48b"
)

var slot9 = time.Date(2026, 3, 16, 14, 0, 0, 0, time.UTC)

// fakes stands in for the booking core, the reservations, the adoption
// records and Cloud9's open slots.
type fakes struct {
	open     bool
	adoptErr error
	outcome  booking.HeldOutcome
	op       *contracts.QueueOperation
	adopted  *holds.Adoption

	adopts  []reservation.WebHold
	slots   []slots.Slot
	held    []booking.HeldBooking
	authErr error    // AuthorizeHeld's answer
	auths   []string // the tokens AuthorizeHeld saw
}

func (f *fakes) AuthorizeHeld(token, _ string) error {
	f.auths = append(f.auths, token)
	return f.authErr
}

func (f *fakes) OpenSlot(_ context.Context, typeID, column string, start time.Time) (slots.Slot, bool, error) {
	if !f.open || typeID != typeGUID || column != columnGUID || !start.Equal(slot9) {
		return slots.Slot{}, false, nil
	}
	return slots.Slot{StartTime: "03/16/2026 9:00:00 AM", ScheduleViewGUID: viewGUID, ScheduleColumnGUID: columnGUID,
		AppointmentTypeGUID: typeGUID, Minutes: 45, LocationGUID: location}, true, nil
}

func (f *fakes) Adopt(_ context.Context, s slots.Slot, sessionID, _ string, from reservation.WebHold) (reservation.Result, error) {
	f.adopts, f.slots = append(f.adopts, from), append(f.slots, s)
	if sessionID != webbook.Session(from.HoldID) {
		return reservation.Result{}, contracts.Errorf(contracts.CodeInvalid, "session %s", sessionID)
	}
	return reservation.Result{}, f.adoptErr
}

func (f *fakes) Adopted(_ context.Context, clientID, holdID string) (holds.Adoption, bool, error) {
	if f.adopted == nil || f.adopted.From.ClientID != clientID || f.adopted.From.HoldID != holdID {
		return holds.Adoption{}, false, nil
	}
	return *f.adopted, true, nil
}

func (f *fakes) BookHeld(_ context.Context, hb booking.HeldBooking) (booking.HeldOutcome, error) {
	f.held = append(f.held, hb)
	return f.outcome, nil
}

func (f *fakes) Operation(_ context.Context, id string) (contracts.QueueOperation, bool, error) {
	if f.op == nil || f.op.ID != id {
		return contracts.QueueOperation{}, false, nil
	}
	return *f.op, true, nil
}

func (f *fakes) booker(t *testing.T, withOps bool) *webbook.Booker {
	t.Helper()
	cfg := webbook.Config{Core: f, Reservations: f, Adoptions: f, Slots: f, LocationGUID: location,
		StatusEndpoint: "/chord/ortho-prd/checkOperationStatus"}
	if withOps {
		cfg.Operations = f
	}
	b, err := webbook.New(cfg)
	require.NoError(t, err)
	return b
}

func webHold() holds.Hold {
	return holds.Hold{HoldID: "0123456789abcdef0123456789abcdef", ClientID: "c1", AppointmentTypeID: typeGUID,
		SpecialistID: columnGUID, SlotStartDate: slot9, SlotEndDate: slot9.Add(45 * time.Minute)}
}

func external(h holds.Hold, patientGUID string) holds.ExternalBooking {
	return holds.ExternalBooking{AppointmentTypeID: typeGUID, Hold: h, PatientGUID: patientGUID, AppointmentID: h.HoldID}
}

// The session a web hold is handed to names it one-way: the hold id (its
// bearer secret) is not in it.
func TestSessionIsOneWay(t *testing.T) {
	s := webbook.Session("0123456789abcdef0123456789abcdef")
	require.Equal(t, s, webbook.Session("0123456789abcdef0123456789abcdef"))
	require.True(t, strings.HasPrefix(s, "web-"))
	require.Len(t, s, len("web-")+32)
	require.NotContains(t, s, "0123456789abcdef")
	require.NotEqual(t, s, webbook.Session("0123456789abcdef0123456789abcdee"))
}

// Book hands the hold to the core as Session(holdId)'s reservation of the
// slot Cloud9 lists (named as the core's Reserve names it), remembers
// the patient and the slot for a retry, and runs BookHeld: made, the
// Cloud9 appointment; queued, the operation and where to follow it.
func TestBookAdoptsThenRunsTheCore(t *testing.T) {
	f := &fakes{open: true, outcome: booking.HeldOutcome{AppointmentGUID: "c9-appt"}}
	h := webHold()
	out, err := f.booker(t, true).Book(context.Background(), external(h, patient))
	require.NoError(t, err)
	require.Equal(t, holds.Booked{Hold: h, Cloud9AppointmentGUID: "c9-appt"}, out)
	require.Equal(t, []slots.Slot{{LocationGUID: location, StartTime: "03/16/2026 9:00:00 AM", ScheduleColumnGUID: columnGUID}}, f.slots)
	require.Len(t, f.adopts, 1)
	require.Equal(t, h.ClientID, f.adopts[0].ClientID)
	require.Equal(t, holds.DefaultAdoptionKeep, f.adopts[0].Keep)
	appt := booking.Appointment{PatientGUID: patient, StartTime: "03/16/2026 9:00:00 AM", ScheduleViewGUID: viewGUID,
		ScheduleColumnGUID: columnGUID, AppointmentTypeGUID: typeGUID, Minutes: 45}
	require.Equal(t, []booking.HeldBooking{{Appointment: appt, SessionID: webbook.Session(h.HoldID)}}, f.held)
	var m struct {
		PatientGUID string              `json:"patientGUID"`
		Appointment booking.Appointment `json:"appointment"`
	}
	require.NoError(t, json.Unmarshal([]byte(f.adopts[0].Memo), &m))
	require.Equal(t, patient, m.PatientGUID)
	require.Equal(t, appt, m.Appointment)

	f.outcome = booking.HeldOutcome{OperationID: "op 1"}
	out, err = f.booker(t, false).Book(context.Background(), external(h, patient))
	require.NoError(t, err)
	require.True(t, out.Queued())
	require.Equal(t, contracts.QueueOperation{ID: "op 1", Status: contracts.OpPending, OperationType: contracts.OpSetAppointment,
		StartTime: appt.StartTime}, *out.Operation, "without Operations: as BookHeld named it")
	require.Equal(t, "/chord/ortho-prd/checkOperationStatus?operationId=op+1", out.StatusEndpoint)
	f.op = &contracts.QueueOperation{ID: "op 1", Status: contracts.OpPending, Attempts: 2, MaxAttempts: 10}
	out, err = f.booker(t, true).Book(context.Background(), external(h, patient))
	require.NoError(t, err)
	require.Equal(t, *f.op, *out.Operation, "in queue-status' shape")
}

// A slot Cloud9 no longer lists, or one another session holds, is 409
// slot_taken with createAppt's error type; the core is not run.
func TestBookRefusesATakenSlot(t *testing.T) {
	f := &fakes{}
	_, err := f.booker(t, true).Book(context.Background(), external(webHold(), patient))
	var ce *contracts.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, contracts.CodeConflict, ce.Code)
	require.Equal(t, "slot_taken", ce.Details["reason"])
	require.Equal(t, contracts.BookingErrSlotNotAvailable, ce.Details["errorType"])
	require.Empty(t, f.adopts)

	f = &fakes{open: true, adoptErr: &reservation.HeldError{}}
	_, err = f.booker(t, true).Book(context.Background(), external(webHold(), patient))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, contracts.BookingErrSlotReserved, ce.Details["errorType"])
	require.Empty(t, f.held)
}

// A patient the core does not authorize (BOOKING_AUTH_MODE token without
// a bookingAuthToken, a token for another patient) is refused before
// anything else: the hold is not handed over, nothing is booked. A retry
// (Resume) is not checked again: Book authorized the patient its record
// names, and the token may have expired since.
func TestBookChecksThePatientFirst(t *testing.T) {
	refused := contracts.Errorf(contracts.CodeUnauthorized, "no token")
	f := &fakes{open: true, authErr: refused, outcome: booking.HeldOutcome{AppointmentGUID: "c9-appt"}}
	b := external(webHold(), patient)
	b.PatientToken = "tok"
	_, err := f.booker(t, true).Book(context.Background(), b)
	require.ErrorIs(t, err, refused)
	require.Empty(t, f.adopts, "the hold was handed over")
	require.Empty(t, f.held, "the core booked")
	_, _, err = f.booker(t, true).Resume(context.Background(), b)
	require.NotErrorIs(t, err, refused)
	require.Equal(t, []string{"tok"}, f.auths)
}

// Resume finds the adoption record of the client's hold and runs the core
// again for the booking it remembers, as the session the hold was handed
// to; a record that is none (never adopted, another client's, not this
// booker's memo) is not found; another patient is 409 without running it.
func TestResumeRunsTheSameBooking(t *testing.T) {
	h := webHold()
	appt := booking.Appointment{PatientGUID: patient, StartTime: "03/16/2026 9:00:00 AM", ScheduleViewGUID: viewGUID,
		ScheduleColumnGUID: columnGUID, AppointmentTypeGUID: typeGUID, Minutes: 45}
	memo, err := json.Marshal(map[string]any{"patientGUID": patient, "appointment": appt})
	require.NoError(t, err)
	f := &fakes{outcome: booking.HeldOutcome{AppointmentGUID: "c9-appt"}}
	retry := external(holds.Hold{HoldID: h.HoldID, ClientID: h.ClientID}, patient)
	_, found, err := f.booker(t, true).Resume(context.Background(), retry)
	require.NoError(t, err)
	require.False(t, found, "never adopted")

	f.adopted = &holds.Adoption{From: h, Hold: holds.Hold{ClientID: "web-session-1"}, Memo: `{"patient":"x"}`}
	_, found, err = f.booker(t, true).Resume(context.Background(), retry)
	require.NoError(t, err)
	require.False(t, found, "not this booker's record")

	f.adopted.Memo = string(memo)
	_, found, err = f.booker(t, true).Resume(context.Background(), external(holds.Hold{HoldID: h.HoldID, ClientID: "c2"}, patient))
	require.NoError(t, err)
	require.False(t, found, "another client's")

	_, found, err = f.booker(t, true).Resume(context.Background(), external(retry.Hold, strings.ToUpper(patient)))
	require.NoError(t, err, "the patient compared without case")
	require.True(t, found)
	f.held = nil
	_, found, err = f.booker(t, true).Resume(context.Background(), external(retry.Hold, strings.Replace(patient, "0f", "1f", 1)))
	require.True(t, found)
	var ce *contracts.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, contracts.CodeConflict, ce.Code)
	require.Equal(t, "patientGUID", ce.Details["field"])
	require.Empty(t, f.held, "the core is not run for another patient")

	out, found, err := f.booker(t, true).Resume(context.Background(), retry)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, holds.Booked{Hold: h, Cloud9AppointmentGUID: "c9-appt"}, out, "the slot as the hold was taken over")
	require.Equal(t, []booking.HeldBooking{{Appointment: appt, SessionID: "web-session-1"}}, f.held)

	f.adopted.Hold.ClientID, f.held = "", nil
	_, _, err = f.booker(t, true).Resume(context.Background(), retry)
	require.NoError(t, err)
	require.Equal(t, webbook.Session(h.HoldID), f.held[0].SessionID, "a record without the session: derived again")
}

func TestNewNeedsItsParts(t *testing.T) {
	_, err := webbook.New(webbook.Config{})
	require.Error(t, err)
}
