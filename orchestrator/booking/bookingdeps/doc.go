// Package bookingdeps adapts flowgate's booking parts to the small
// interfaces package booking declares: the bookingAuthToken signer, the
// bookingSessions cache, the SlotReservation store, the bookingToken codec
// (which also checks that the slot is still in the slot cache) and a slot
// source that reads GetOnlineReservations through the Redis slot cache.
// The Cloud9 client needs no adapter: it implements booking.Cloud9 as
// is, and its *cloud9.Error is what the booking path classifies. The
// sidecar builds one Deps from these; nothing here holds state of its own.
package bookingdeps
