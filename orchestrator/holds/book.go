package holds

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// DefaultBookingTimeout bounds a booking in the system of record
// (BookingConfig.Timeout): the booking core waits within its own sync
// budget, then queues.
const DefaultBookingTimeout = 30 * time.Second

// Booker books an External type's held slot in the system of record
// through the booking core (limiter, durable queue, no duplicates, slot
// reservation). Errors should be *contracts.Error; they are answered as
// they are.
type Booker interface {
	// Book books the slot of b.Hold — the client's live hold, which the
	// booker takes over as the booking's reservation, so the slot is
	// never free in between — for b.PatientGUID.
	Book(ctx context.Context, b ExternalBooking) (Booked, error)
	// Resume answers a /book retried after its hold was taken over (only
	// b.Hold.HoldID and ClientID are known): the same booking, found
	// already made or made now, never a second one. found is false when
	// the hold was never taken over (or too long ago).
	Resume(ctx context.Context, b ExternalBooking) (out Booked, found bool, err error)
}

// ExternalBooking is what Booker books.
type ExternalBooking struct {
	AppointmentTypeID string // the type being booked
	Hold              Hold
	PatientGUID       string
	PatientToken      string // the patient's bookingAuthToken, when the client gave one
	AppointmentID     string // flowgate's id of the booking (BookRequest.AppointmentID)
}

// Booked is an External booking made (Cloud9AppointmentGUID) or queued
// (Operation, in queue-status' shape, and where to follow it).
type Booked struct {
	Hold                  Hold // the slot (Resume: as the hold was taken over)
	Cloud9AppointmentGUID string
	Operation             *contracts.QueueOperation
	StatusEndpoint        string
}

// Queued reports a booking the booking core queued: an operation and no
// appointment yet.
func (b Booked) Queued() bool { return b.Operation != nil && b.Cloud9AppointmentGUID == "" }

// cooldownID is the id the booking's cooldown is set under, the one its
// cancel finds it by: the Cloud9 appointment (cancelAppt), or the queued
// operation; "" when there is neither.
func (b Booked) cooldownID() string {
	if b.Cloud9AppointmentGUID != "" {
		return b.Cloud9AppointmentGUID
	}
	if b.Operation != nil {
		return b.Operation.ID
	}
	return ""
}

// BookingEngine is the part of *Engine a Booking uses.
type BookingEngine interface {
	Heartbeat(ctx context.Context, clientID, holdID string) (Hold, bool, error)
	StartCooldown(ctx context.Context, clientID, appointmentTypeID, appointmentID string, cooldown time.Duration) error
	Confirm(ctx context.Context, clientID, holdID, appointmentID string, cooldown time.Duration) (Hold, error)
	BookedAppointment(ctx context.Context, specialistID string, start time.Time) (string, error)
	ClearCooldown(ctx context.Context, appointmentID string) (bool, error)
	ReleaseBooking(ctx context.Context, appointmentID string, slot Hold) (bool, error)
}

// BookingConfig configures a Booking. Engine is required.
type BookingConfig struct {
	Engine BookingEngine
	// Booker books External types; without it their booking is refused
	// (unavailable).
	Booker Booker
	// Timeout bounds a booking in the system of record, which is not cut
	// when the caller goes away. Default DefaultBookingTimeout.
	Timeout time.Duration
	// Now stamps BookResult.BookedAt. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Booking applies the rules of booking a web hold (docs/holds.md, "Booking
// a slot" and "Booking in Cloud9"; its settings are BookingConfig); the web
// face (holdshttp) decodes the request, asks a Booking and encodes its
// answer.
//
//   - The hold is heartbeated before anything is booked: it must be live
//     and the client's, and is then good for another HoldTTL.
//   - It must be a hold of the appointment type being booked.
//   - An External type (booked in the system of record through a Booker)
//     names the patient; a retry of its /book after the hold was taken
//     over resumes the earlier attempt (Booker.Resume), never a second
//     booking.
//   - A booking made or queued in the system of record sets the type's
//     cooldown, under the id its cancel finds it by.
type Booking struct{ cfg BookingConfig }

// NewBooking checks cfg.
func NewBooking(cfg BookingConfig) (*Booking, error) {
	if cfg.Engine == nil {
		return nil, errors.New("holds: NewBooking needs an Engine")
	}
	cfg.Timeout = valutil.PositiveOrDefault(cfg.Timeout, DefaultBookingTimeout)
	cfg.Now = valutil.FuncOrDefault(cfg.Now, time.Now)
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	return &Booking{cfg: cfg}, nil
}

// LiveHold heartbeats clientID's web hold holdID for a booking of
// appointmentTypeID: it must be live and the client's (else 409 conflict,
// details.field holdId: hold the slot again) and of that type (else 400
// invalid), and is then good for another HoldTTL for the booking's steps.
func (b *Booking) LiveHold(ctx context.Context, clientID, holdID, appointmentTypeID string) (Hold, error) {
	hd, live, err := b.cfg.Engine.Heartbeat(ctx, clientID, holdID)
	if err != nil {
		return Hold{}, err
	}
	if !live {
		return Hold{}, holdGone()
	}
	if hd.AppointmentTypeID != appointmentTypeID {
		return Hold{}, otherType(hd.HoldID)
	}
	return hd, nil
}

// BookRequest asks Booking.BookExternal to book a web hold in the system
// of record.
type BookRequest struct {
	AppointmentTypeID string
	Cooldown          time.Duration // the type's cooldown (0: the engine's default)
	ClientID          string
	HoldID            string
	PatientGUID       string // required (422 PATIENT_REQUIRED without it)
	PatientToken      string // the patient's bookingAuthToken (the Booker checks it)
	AppointmentID     string // flowgate's id of the booking
}

// BookResult is a booking made or queued in the system of record.
type BookResult struct {
	Booked
	BookedAt time.Time // UTC
}

// BookExternal books r's hold in the system of record through the
// Booker: without a patient it is refused before anything else (422
// PATIENT_REQUIRED, the hold kept). A live hold (LiveHold's rules) is
// handed to Booker.Book and, once the booking is made or queued, the
// type's cooldown is set under the id its cancel finds it by (a cooldown
// that cannot be set is logged: the booking stands). A hold that is no
// longer live is an earlier attempt's, taken over: Booker.Resume answers
// that booking (its cooldown was set then), or the hold is gone (409).
// The booking is not cut when ctx is cancelled — a booking under way
// finishes (or is queued) rather than being left uncertain — but is bound
// by BookingConfig.Timeout.
func (b *Booking) BookExternal(ctx context.Context, r BookRequest) (BookResult, error) {
	if r.PatientGUID == "" {
		return BookResult{}, &contracts.Error{Code: contracts.CodePatientRequired, Details: map[string]any{"field": "patientGUID"},
			Message: "appointment type " + r.AppointmentTypeID + " is booked in Cloud9: name the patient (patientGUID); the hold is kept"}
	}
	if b.cfg.Booker == nil {
		return BookResult{}, contracts.Errorf(contracts.CodeUnavailable, "booking appointment type %s in Cloud9 is not configured",
			r.AppointmentTypeID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.Timeout)
	defer cancel()
	eb := ExternalBooking{AppointmentTypeID: r.AppointmentTypeID, PatientGUID: r.PatientGUID, PatientToken: r.PatientToken,
		AppointmentID: r.AppointmentID, Hold: Hold{HoldID: r.HoldID, ClientID: r.ClientID}}
	hd, live, err := b.cfg.Engine.Heartbeat(ctx, r.ClientID, r.HoldID)
	if err != nil {
		return BookResult{}, err
	}
	var out Booked
	if live {
		out, err = b.bookLive(ctx, eb, hd)
	} else {
		out, err = b.resume(ctx, eb)
	}
	if err != nil {
		return BookResult{}, err
	}
	res := BookResult{Booked: out, BookedAt: b.cfg.Now().UTC()}
	if live {
		b.startCooldown(ctx, r, out)
	}
	return res, nil
}

// bookLive books the client's live hold hd, a hold of the type booked.
func (b *Booking) bookLive(ctx context.Context, eb ExternalBooking, hd Hold) (Booked, error) {
	if hd.AppointmentTypeID != eb.AppointmentTypeID {
		return Booked{}, otherType(hd.HoldID)
	}
	eb.Hold = hd
	return b.cfg.Booker.Book(ctx, eb)
}

// resume answers the earlier attempt that took eb's hold over.
func (b *Booking) resume(ctx context.Context, eb ExternalBooking) (Booked, error) {
	out, found, err := b.cfg.Booker.Resume(ctx, eb)
	if err != nil {
		return Booked{}, err
	}
	if !found {
		return Booked{}, holdGone()
	}
	if out.Hold.AppointmentTypeID != "" && out.Hold.AppointmentTypeID != eb.AppointmentTypeID {
		return Booked{}, otherType(eb.Hold.HoldID)
	}
	return out, nil
}

// startCooldown sets the cooldown of the booking out made for r.
func (b *Booking) startCooldown(ctx context.Context, r BookRequest, out Booked) {
	id := out.cooldownID()
	if id == "" {
		return
	}
	if err := b.cfg.Engine.StartCooldown(ctx, r.ClientID, r.AppointmentTypeID, id, r.Cooldown); err != nil {
		b.cfg.Logger.Warn("holds: booked in Cloud9 but the cooldown could not be set", "appointment", Ref(r.AppointmentID), "err", err)
	}
}

// holdGone is a booking's hold that is not live nor this client's: 409.
func holdGone() error {
	return &contracts.Error{Code: contracts.CodeConflict, Message: "the hold has expired or is not this client's; hold the slot again",
		Details: map[string]any{"field": "holdId"}}
}

// otherType is a booking's hold of another appointment type: 400.
func otherType(holdID string) error {
	return contracts.FieldErrorf(contracts.CodeInvalid, "holdId", "hold %s is for another appointment type", Ref(holdID))
}
