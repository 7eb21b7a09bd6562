// Package webbook books the web face's /book of a Cloud9-sourced
// appointment type through the booking core: it is the holds.Booker the
// sidecar gives holds.Booking (docs/holds.md, "Booking in Cloud9").
//
// Book adopts the web hold as the IVA reservation of the session
// Session(holdId) — the same canonical slot key, never free in between
// (reservation.Store.Adopt) — and runs booking.BookHeld for that
// session: the Done mark and lease of the identity (patient, start,
// column), the shared write limiter within the sync budget, the durable
// queue after it, the reservation kept while queued and released on a
// refusal. Resume finds the adoption record of a retried /book and runs the
// core again for the same booking (answered from its Done mark when made,
// booked now when it was queued); a retry naming another patient is
// refused.
package webbook
