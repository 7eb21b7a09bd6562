package booking

import (
	"context"
	"log/slog"
)

// SlotBooker is an optional SlotSource extension: once a booking is
// confirmed (Cloud9 answered its appointment GUID, or a check found it),
// its slot leaves every cached list, so no other caller is offered it once
// the reservation lapses. The source keeps accepting that slot's
// bookingToken for a while: the same createAppt asked again must still be
// answered from its Done mark.
type SlotBooker interface {
	Booked(ctx context.Context, s SlotRef) error
}

// bookedSlot tells src a slot was booked when src keeps a cache; failure
// only means the slot is offered until the next refresh (the reservation
// hides it meanwhile, Cloud9 refuses it after).
func bookedSlot(ctx context.Context, src SlotSource, r SlotRef, log *slog.Logger) {
	b, ok := src.(SlotBooker)
	if !ok {
		return
	}
	if err := b.Booked(ctx, r); err != nil {
		log.Warn("slot cache: could not drop the booked slot (it is offered until the next refresh)", "err", err)
	}
}
