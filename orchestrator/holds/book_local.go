package holds

import (
	"context"
	"errors"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// Recorder records the booking of a type flowgate's own catalogue serves
// (the schedule file; holdshttp's Catalog): Record writes it, Cancel
// removes it again.
type Recorder interface {
	Record(ctx context.Context, h Hold, appointmentID string) error
	Cancel(ctx context.Context, appointmentID string) error
}

// LocalBooking is a /book of a type the catalogue records itself.
type LocalBooking struct {
	ClientID, HoldID, AppointmentTypeID string
	// AppointmentID is the booking's id, derived from the hold id so that
	// a retried /book records the same appointment.
	AppointmentID string
	Cooldown      time.Duration // the type's cooldown, set by the confirm
}

// BookLocal books a held slot in the catalogue (docs/holds.md, "Booking a
// slot"): the hold live, the client's and of the type (LiveHold); then
// recorded — a failure leaves the hold for a retry; then confirmed with
// the type's cooldown. When the confirm fails, a concurrent retry that
// confirmed the same appointment is this booking; otherwise the record
// is cancelled and what a confirm whose reply was lost may have left —
// the cooldown and the booked claim — is cleared, and a hold that ended
// meanwhile answers 409 (hold the slot again). It returns the hold as
// heartbeated.
func (b *Booking) BookLocal(ctx context.Context, lb LocalBooking, rec Recorder) (Hold, error) {
	hd, err := b.LiveHold(ctx, lb.ClientID, lb.HoldID, lb.AppointmentTypeID)
	if err != nil {
		return Hold{}, err
	}
	if err := rec.Record(ctx, hd, lb.AppointmentID); err != nil {
		return Hold{}, err
	}
	e := b.cfg.Engine
	if _, err := e.Confirm(ctx, lb.ClientID, lb.HoldID, lb.AppointmentID, lb.Cooldown); err != nil {
		if id, berr := e.BookedAppointment(ctx, hd.SpecialistID, hd.SlotStartDate); berr == nil && id == lb.AppointmentID {
			return hd, nil
		}
		b.undo(context.WithoutCancel(ctx), lb.AppointmentID, hd, rec, err)
		if errors.Is(err, ErrHoldNotFound) || errors.Is(err, ErrNotOwner) {
			return Hold{}, &contracts.Error{Code: contracts.CodeConflict, Message: "the hold ended while booking; hold the slot again", Err: err}
		}
		return Hold{}, err
	}
	return hd, nil
}

// undo cancels a recorded booking whose confirm failed, then clears what a
// confirm that ran (reply lost) left: the cooldown and the booked claim.
// The appointment id is a bearer secret: logs carry its Ref.
func (b *Booking) undo(ctx context.Context, appointmentID string, hd Hold, rec Recorder, confirmErr error) {
	log, ref := b.cfg.Logger, Ref(appointmentID)
	if err := rec.Cancel(ctx, appointmentID); err != nil {
		log.Error("holds: booking recorded but the hold could not be confirmed nor the booking undone",
			"appointment", ref, "confirmErr", confirmErr, "cancelErr", err)
		return
	}
	if _, err := b.cfg.Engine.ClearCooldown(ctx, appointmentID); err != nil {
		log.Error("holds: booking undone but its cooldown could not be cleared", "appointment", ref, "err", err)
	}
	if _, err := b.cfg.Engine.ReleaseBooking(ctx, appointmentID, hd); err != nil {
		log.Error("holds: booking undone but its slot could not be freed", "appointment", ref, "err", err)
	}
}
