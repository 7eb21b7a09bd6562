package main

import (
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/webbook"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// webBookingMargin is added to the sync budget and the Cloud9 write
// timeout to bound the web face's /book of a Cloud9 slot.
const webBookingMargin = 5 * time.Second

// webBooker is the Booker of the Cloud9 source: the booking core as
// webbook wires it (the web hold adopted as the core's reservation, then
// booking.BookHeld); nil with the schedule file (its types are not
// External).
func (m *Main) webBooker() holds.Booker {
	if m.avail == nil || m.avail.cloud9 == nil || m.booking == nil || m.booking.svc == nil || m.booking.reservations == nil {
		return nil
	}
	cfg := webbook.Config{Core: m.booking.svc, Reservations: m.booking.reservations, Adoptions: m.booking.reservations.Engine(),
		Slots: m.avail.cloud9, LocationGUID: m.Config.Booking.LocationGUID,
		StatusEndpoint: m.Config.NodeRedBasePath + bookinghttp.OperationStatusPath}
	if m.booking.worker != nil {
		cfg.Operations = m.booking.worker
	}
	b, err := webbook.New(cfg)
	if err != nil {
		m.Logger.Error("holds: web booking in Cloud9 not wired", "err", err)
		return nil
	}
	return b
}
