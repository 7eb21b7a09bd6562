// Package slots is the open-appointment-slot model of the booking path:
// the Slot record of Cloud9's GetOnlineReservations, the opaque bookingToken
// that carries one slot through the LLM (docs/booking.md#the-booking-calls), the sibling grouping
// and booking_plan of getGroupedApptSlots (docs/reference/nodered-endpoints.md §1.5), and a slot cache
// in Redis shared by every instance.
//
// # Times
//
// Cloud9 writes times as "M/D/YYYY h:mm:ss AM" in the location's wall clock,
// padding and seconds optional. ParseTime reads them into a time.Time whose
// wall clock is that local time, labelled UTC: no zone is known or needed,
// since every comparison here is between slots of one location. A slot's
// StartTime string is kept verbatim and re-sent to Cloud9 unchanged.
//
// # bookingToken
//
// EncodeToken is standard base64 (with padding, as the old Flowise design)
// of the unsigned JSON {startTime, scheduleViewGUID, scheduleColumnGUID,
// appointmentTypeGUID, minutes}. It is not a security token — it only spares
// the LLM copying four GUIDs — so DecodeToken checks shape, not origin, and
// the caller must confirm the slot is still open (Cache.Find / Contains)
// before booking it. DecodeToken also reads the old design's short keys
// {st, sv, sc, at, mn}. Every failure is a *TokenError matching
// ErrMalformedToken, with a Reason and the offending Field.
//
// # Grouping
//
// Groups follows docs/reference/nodered-endpoints.md §1.5's rule: sort the slots; from each slot,
// greedily add later slots that start 0 to window minutes after the previous
// slot's end (start + Minutes, 45 when unknown); keep groups of exactly n.
// Groups may overlap. BookingPlan turns the first group (or, without one,
// the first n slots) into the booking_plan of llm_guidance, each entry with
// its bookingToken.
//
// # Cache
//
// Cache keeps one slot list per Range (location, schedule view or all views,
// date range) with a TTL; keys.go lists the keys and scripts.go the scripts.
// Put replaces a list atomically, Invalidate removes one slot from every
// cached list atomically (a booked slot must not be offered again), Find and
// Contains tell whether a decoded bookingToken's slot is still in a list.
// A slot is identified by view, column and start (SlotID): two entries of
// Cloud9 for the same chair and minute are one slot, and booking it removes
// it whatever its appointment type. Redis errors are *contracts.Error with
// CodeUnavailable matching ErrUnavailable; the caller decides (the booking
// service falls back to Cloud9).
package slots
