package booking

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// A booking that names its slot by raw fields (startTime,
// scheduleColumnGUID, minutes… without a bookingToken) must name a slot the
// slot source offers (docs/booking.md#raw-slot-fields): on that chair,
// starting exactly then, no longer than that slot. A hold protects one
// (chair, start) key (docs/holds.md); a booking that starts off the grid or
// runs past its slot's end would cover the next slot without holding it, and
// another caller's hold on that slot would not stop it. A bookingToken
// is checked the same way: it is an unsigned reference (its decode trusts
// it when Redis cannot answer), and minutes sent beside one are the
// caller's; a genuine one is found in the registry at once.
//
// The slot is looked up first where a bookingToken's decode looks
// (SlotFinder: the slot cache's registry, which also remembers a slot
// booked here lately, so a repeated request or a sibling on a slot this
// call booked goes on to its mark or its DUPLICATE_SLOT_BLOCKED), then by
// a search of its day.
//
// What the check answers:
//
//   - offered: the booking goes on; a minutes the caller did not send (the
//     configured default) is cut to the slot's length.
//   - not offered, or the slot source cannot answer: SLOT_NOT_AVAILABLE,
//     the answer of a slot taken meanwhile, before anything is reserved or
//     sent (fail closed: an unchecked raw booking could overlap a held slot).
//   - either way, a booking this identity already made on that slot (its
//     Done mark) goes on when it asks no more than the standard length, so
//     a repeated request is still answered from its mark: a booked slot has
//     left the offered lists. (A longer one does not: a mark found stale
//     has the request sent as it came.)
//
// The slot source's lists are not filtered by holds (the service filters
// getApptSlots' answer, heldSet), so a slot the caller itself holds — or
// another caller holds — is offered here; the reservation then decides who
// books it (SLOT_RESERVED for another caller's hold).
//
// offerState is what the slot source says of a raw-field booking's slot.
type offerState int

const (
	slotOffered    offerState = iota // offered there, and the booking fits in it
	slotNotOffered                   // no offered slot starts there on that chair, or the booking is longer
	slotUnchecked                    // the slot source could not answer
)

// Why a raw-field booking was refused (_debug.error_message).
const (
	notOfferedMsg = "the slot is not offered on that chair at that time for that length; not sent to Cloud9"
	uncheckedMsg  = "the offered slots could not be read to check the slot; not sent to Cloud9"
)

func (o offerState) reason() string {
	if o == slotUnchecked {
		return uncheckedMsg
	}
	return notOfferedMsg
}

// offerQuery is one search covering the days of books (their starts
// already validated): from the first day to the day after the last.
func offerQuery(books []booking, session string) SlotQuery {
	var first, last time.Time
	for i, b := range books {
		t, _ := contracts.ParseStartTime(b.StartTime)
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		if i == 0 || day.Before(first) {
			first = day
		}
		if i == 0 || day.After(last) {
			last = day
		}
	}
	return SlotQuery{StartDate: first.Format("01/02/2006"), EndDate: last.AddDate(0, 0, 1).Format("01/02/2006"),
		SessionID: session}
}

// fitOffer reports whether an offered slot of list starts at b's start on
// b's chair and is at least b's minutes long (a slot without a length is
// slots.DefaultMinutes long). Minutes the caller did not send are cut to
// the longest such slot's length.
func fitOffer(b *booking, list []contracts.ApptSlot, minutesSent bool) bool {
	start, ok := contracts.ParseStartTime(b.StartTime)
	if !ok {
		return false
	}
	longest := 0
	for _, sl := range list {
		if !strings.EqualFold(strings.TrimSpace(sl.ScheduleColumnGUID), b.ScheduleColumnGUID) {
			continue
		}
		if t, ok := contracts.ParseStartTime(sl.StartTime); !ok || !t.Equal(start) {
			continue
		}
		n := sl.MinutesInt()
		if n <= 0 {
			n = slots.DefaultMinutes
		}
		longest = max(longest, n)
	}
	switch {
	case longest == 0:
		return false
	case !minutesSent:
		b.Minutes = min(b.Minutes, longest)
		return true
	}
	return b.Minutes <= longest
}

// SlotOffers is an optional SlotSource extension that answers the offer
// check itself: the offered slots on column starting at startTime (any
// length), as Slots would list them for session. Without it the check
// searches the slot's day with Slots.
type SlotOffers interface {
	OffersAt(ctx context.Context, column, startTime, session string) ([]contracts.ApptSlot, error)
}

// SlotFinder is an optional BookingTokens extension: the slot at a
// SlotRef's view, column and start among the cached offered slots or those
// booked here lately (found false when neither) — the slots a bookingToken
// is accepted for. The offer check asks it first (no search when found).
type SlotFinder interface {
	FindSlot(ctx context.Context, r SlotRef) (SlotRef, bool, error)
}

// found is the cached slot at b's view, column and start, as a list of
// one (nil when none, or without a SlotFinder).
func (s *Service) found(ctx context.Context, b booking) []contracts.ApptSlot {
	f, ok := s.d.BookingTokens.(SlotFinder)
	if !ok {
		return nil
	}
	ref, found, err := f.FindSlot(ctx, b.slotRef())
	if err != nil || !found {
		return nil
	}
	return []contracts.ApptSlot{{StartTime: ref.StartTime, ScheduleViewGUID: ref.ScheduleViewGUID,
		ScheduleColumnGUID: ref.ScheduleColumnGUID, AppointmentTypeGUID: ref.AppointmentTypeGUID, Minutes: strconv.Itoa(ref.Minutes)}}
}

// candidates are the offered slots to fit b to: the source's own answer
// (SlotOffers), else day — a search of b's day — and its error.
func (s *Service) candidates(ctx context.Context, b booking, day []contracts.ApptSlot, dayErr error) ([]contracts.ApptSlot, error) {
	if so, ok := s.d.Slots.(SlotOffers); ok {
		return so.OffersAt(ctx, b.ScheduleColumnGUID, b.StartTime, b.SessionID)
	}
	return day, dayErr
}

// offer checks a raw-field booking of createAppt against the slot source
// (one search of its day, within the request's Redis budget). Without a
// slot source (an embedding that offers no slots) nothing is checked.
func (s *Service) offer(ctx context.Context, b *booking, minutesSent bool, rb *redisBudget) offerState {
	if s.d.Slots == nil {
		return slotOffered
	}
	rctx, cancel := rb.ctx(ctx)
	defer cancel()
	if list := s.found(rctx, *b); list != nil {
		if fitOffer(b, list, minutesSent) {
			return slotOffered
		}
		return slotNotOffered
	}
	var list []contracts.ApptSlot
	var err error
	if _, own := s.d.Slots.(SlotOffers); !own {
		var res SlotSearch
		res, err = s.d.Slots.Slots(rctx, offerQuery([]booking{*b}, b.SessionID))
		list = res.Slots
	}
	list, err = s.candidates(rctx, *b, list, err)
	switch {
	case err != nil:
		s.log.Warn("createAppt: offered slots unavailable; a raw-field booking cannot be checked (refused)", "err", err)
		return slotUnchecked
	case fitOffer(b, list, minutesSent):
		return slotOffered
	}
	return slotNotOffered
}

// markedFits reports whether a booking not found offered may still go on
// to its Done mark: no minutes of its own, or no more than the configured
// standard length (DefaultMinutes), which every booking checked here had.
func (s *Service) markedFits(b booking, minutesSent bool) bool {
	return !minutesSent || b.Minutes <= s.cfg.DefaultMinutes
}

// bookedHere reports whether patientGUID's booking of b's slot is done
// (its Done mark): a repeated request, answered from the mark.
func (s *Service) bookedHere(ctx context.Context, patientGUID string, b booking, rb *redisBudget) bool {
	rctx, cancel := rb.ctx(ctx)
	defer cancel()
	_, done, err := s.d.Marks.Completed(rctx, IdentityKey(patientGUID, b.StartTime, b.ScheduleColumnGUID))
	return err == nil && done
}

// refuseUnoffered is createAppt's check of a raw-field booking: ok when
// it may go on, else the SLOT_NOT_AVAILABLE outcome (nothing reserved,
// nothing sent).
func (s *Service) refuseUnoffered(ctx context.Context, b *booking, minutesSent, byToken bool, rb *redisBudget) (outcome, bool) {
	st := s.offer(ctx, b, minutesSent, rb)
	if st == slotUnchecked && byToken {
		// A bookingToken's slot was offered when the token was made; with
		// the slot cache unreadable (a Redis outage) the booking goes on as
		// its reservation does then — fail open, Cloud9 decides — where a
		// raw-field one is refused.
		return outcome{}, true
	}
	// A repeat of a booking made here goes on to its Done mark — unless it
	// asks for more than the standard length: a mark found stale (the
	// appointment cancelled) has the request sent again as it came, so a
	// longer booking would go to Cloud9 unchecked.
	if st == slotOffered || (s.markedFits(*b, minutesSent) && s.bookedHere(ctx, b.PatientGUID, *b, rb)) {
		return outcome{}, true
	}
	s.log.Info("raw-field booking refused: slot not offered", "start", b.StartTime, "column", b.ScheduleColumnGUID,
		"minutes", b.Minutes, "unchecked", st == slotUnchecked)
	return outcome{kind: kindFailed, errType: contracts.BookingErrSlotNotAvailable, errMsg: st.reason()}, false
}
