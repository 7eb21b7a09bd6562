package webbook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Core is the booking core's path for a held slot (*booking.Service).
type Core interface {
	// AuthorizeHeld checks the patient before anything is done for the
	// booking (*booking.Service: the bookingAuthToken, BOOKING_AUTH_MODE).
	AuthorizeHeld(token, patientGUID string) error
	BookHeld(ctx context.Context, hb booking.HeldBooking) (booking.HeldOutcome, error)
}

// Operations reads a queued booking's operation in queue-status' shape
// (*booking.Worker).
type Operations interface {
	Operation(ctx context.Context, operationID string) (contracts.QueueOperation, bool, error)
}

// Reservations hands a web hold over to the booking core as a session's
// reservation (*reservation.Store).
type Reservations interface {
	Adopt(ctx context.Context, s slots.Slot, sessionID, patientName string, from reservation.WebHold) (reservation.Result, error)
}

// Adoptions reads the record of a hand-over (*holds.Engine).
type Adoptions interface {
	Adopted(ctx context.Context, clientID, holdID string) (holds.Adoption, bool, error)
}

// Slots finds the open slot Cloud9 lists for a hold
// (availability.Cloud9Source).
type Slots interface {
	OpenSlot(ctx context.Context, typeID, column string, start time.Time) (slots.Slot, bool, error)
}

// Config configures a Booker. Core, Reservations, Adoptions and Slots are
// required.
type Config struct {
	Core         Core
	Operations   Operations // nil: a queued booking's operation is answered as BookHeld named it
	Reservations Reservations
	Adoptions    Adoptions
	Slots        Slots
	// LocationGUID names the reservation's slot as the core's Reserve
	// names it.
	LocationGUID string
	// StatusEndpoint is where a queued booking is followed; the answer adds
	// ?operationId=.
	StatusEndpoint string
}

// Booker books a web hold in Cloud9 through the booking core
// (holds.Booker).
type Booker struct{ cfg Config }

var _ holds.Booker = (*Booker)(nil)

// New checks cfg.
func New(cfg Config) (*Booker, error) {
	if cfg.Core == nil || cfg.Reservations == nil || cfg.Adoptions == nil || cfg.Slots == nil {
		return nil, errors.New("webbook: Core, Reservations, Adoptions and Slots are required")
	}
	return &Booker{cfg: cfg}, nil
}

// Session is the reservation's holder for web hold holdID: "web-" and a
// one-way digest of the hold id, not the id itself — the hold id is the
// hold's bearer secret, and the session travels in the booking task's
// payload and the SlotReservation value.
func Session(holdID string) string {
	sum := sha256.Sum256([]byte("flowgate holds: web booking session\x00" + holdID))
	return "web-" + hex.EncodeToString(sum[:16])
}

// memo is what the adoption record keeps for a retried /book: the
// patient and the Cloud9 slot as it was booked.
type memo struct {
	PatientGUID string              `json:"patientGUID"`
	Appointment booking.Appointment `json:"appointment"`
}

// Book implements holds.Booker.
func (w *Booker) Book(ctx context.Context, b holds.ExternalBooking) (holds.Booked, error) {
	if err := w.cfg.Core.AuthorizeHeld(b.PatientToken, b.PatientGUID); err != nil {
		return holds.Booked{}, err // before the hold is handed over: it stays the client's
	}
	h := b.Hold
	sl, found, err := w.cfg.Slots.OpenSlot(ctx, h.AppointmentTypeID, h.SpecialistID, h.SlotStartDate)
	if err != nil {
		return holds.Booked{}, err
	}
	if !found { // booked in Cloud9 behind flowgate's back since the hold
		return holds.Booked{}, taken("Cloud9 no longer offers this slot", contracts.BookingErrSlotNotAvailable)
	}
	appt := booking.Appointment{PatientGUID: b.PatientGUID, StartTime: sl.StartTime, ScheduleViewGUID: sl.ScheduleViewGUID,
		ScheduleColumnGUID: sl.ScheduleColumnGUID, AppointmentTypeGUID: firstNonEmpty(sl.AppointmentTypeGUID, h.AppointmentTypeID),
		Minutes: int(sl.Length() / time.Minute)}
	m, err := json.Marshal(memo{PatientGUID: b.PatientGUID, Appointment: appt})
	if err != nil {
		return holds.Booked{}, err
	}
	// The reservation's slot is named as BookHeld's Reserve names it
	// (location, start, column; no type), so the core finds it its own.
	_, err = w.cfg.Reservations.Adopt(ctx, slots.Slot{LocationGUID: w.cfg.LocationGUID, StartTime: sl.StartTime,
		ScheduleColumnGUID: sl.ScheduleColumnGUID}, Session(h.HoldID), "",
		reservation.WebHold{ClientID: h.ClientID, HoldID: h.HoldID, Memo: string(m), Keep: holds.DefaultAdoptionKeep})
	if errors.Is(err, reservation.ErrReservedByOther) {
		return holds.Booked{}, taken("the slot is held by someone else", contracts.BookingErrSlotReserved)
	}
	if err != nil {
		return holds.Booked{}, err
	}
	return w.run(ctx, h, Session(h.HoldID), appt)
}

// Resume implements holds.Booker: the adoption record names the booking,
// which the core runs again (answered from its Done mark when made, booked
// now when it was queued).
// The patient is not checked again: Book authorized the one the record
// names (a retry must match it), and a token may have expired since.
func (w *Booker) Resume(ctx context.Context, b holds.ExternalBooking) (holds.Booked, bool, error) {
	a, found, err := w.cfg.Adoptions.Adopted(ctx, b.Hold.ClientID, b.Hold.HoldID)
	if err != nil || !found {
		return holds.Booked{}, false, err
	}
	var m memo
	if err := json.Unmarshal([]byte(a.Memo), &m); err != nil || m.Appointment.StartTime == "" {
		return holds.Booked{}, false, nil // not this booker's record
	}
	if !strings.EqualFold(m.PatientGUID, b.PatientGUID) {
		return holds.Booked{}, true, &contracts.Error{Code: contracts.CodeConflict, Details: map[string]any{"field": "patientGUID"},
			Message: "this hold was handed to a booking for another patient; hold the slot again"}
	}
	// The session the hold was handed to (a.Hold's client), whichever way
	// an earlier version named it.
	out, err := w.run(ctx, a.From, firstNonEmpty(a.Hold.ClientID, Session(a.From.HoldID)), m.Appointment)
	return out, true, err
}

// run is BookHeld for the web hold h, handed over to session, answered for
// the web face.
func (w *Booker) run(ctx context.Context, h holds.Hold, session string, appt booking.Appointment) (holds.Booked, error) {
	o, err := w.cfg.Core.BookHeld(ctx, booking.HeldBooking{Appointment: appt, SessionID: session})
	if err != nil {
		return holds.Booked{}, err
	}
	out := holds.Booked{Hold: h}
	if !o.Queued() {
		out.Cloud9AppointmentGUID = o.AppointmentGUID
		return out, nil
	}
	op := contracts.QueueOperation{ID: o.OperationID, Status: contracts.OpPending, OperationType: contracts.OpSetAppointment,
		StartTime: appt.StartTime}
	if w.cfg.Operations != nil {
		if got, found, err := w.cfg.Operations.Operation(ctx, o.OperationID); err == nil && found {
			op = got
		}
	}
	out.Operation = &op
	out.StatusEndpoint = w.cfg.StatusEndpoint + "?operationId=" + url.QueryEscape(o.OperationID)
	return out, nil
}

// taken is a slot the web booking cannot have: 409 slot_taken.
func taken(msg, errType string) error {
	return &contracts.Error{Code: contracts.CodeConflict, Message: msg,
		Details: map[string]any{"reason": "slot_taken", "errorType": errType}}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
