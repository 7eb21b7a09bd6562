package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingsvc"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/slots"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The rest of the Node-RED family (issue 10): getPatient,
// getPatientByFilter, getPatientAppts, editInsurance, confirmAppt,
// cancelAppt, getLocation and checkOperationStatus, on the booking path's
// Cloud9 client, its shared limiter and its Asynq worker.
//
// At merge: FamilyDeps.Holds becomes the holds engine (orchestrator/holds:
// ReleaseSlot, ClearCooldown) — until then reservationHolds releases the
// seed-003 slot reservation — and FamilyDeps.Slots the tiered slot cache
// (RestoreSlot); until it exists cancelAppt skips that step.

// familyParts is what newBooking hands over to the family.
type familyParts struct {
	client       *cloud9.Client
	limiter      bookingsvc.Limiter
	worker       *bookingsvc.Worker
	reservations *reservation.Store
}

// newFamily builds the family service and handlers, and starts the phone
// index's background refresh (stopped at close).
func (m *Main) newFamily(b *backend, p familyParts, shutdown context.Context) (*bookinghttp.FamilyHandlers, error) {
	bc, fc := m.Config.Booking, m.Config.Family
	raw := p.client.WithoutLimiter() // Family takes the limiter's turn itself
	idx, err := phoneindex.New(b.Client, raw, phoneindex.Config{LocationGUID: bc.LocationGUID, RefreshEvery: fc.PhoneRefresh,
		MissRefreshAge: fc.PhoneMissRefresh, Concurrency: fc.PhoneConcurrency, Deadline: fc.PhoneDeadline,
		MaxPatients: fc.PhoneMaxPatients, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	idx.Start()
	m.onClose(func(context.Context) error { idx.Close(); return nil })
	holds := reservationHolds{st: p.reservations, location: bc.LocationGUID, zone: fc.PracticeZone}
	fam, err := bookingsvc.NewFamily(bookingsvc.FamilyDeps{Cloud9: raw, Limiter: p.limiter, Phones: idx, Holds: holds,
		Changes: bookingsvc.RedisSlotChanges{Client: b.Client}, Operations: p.worker},
		bookingsvc.FamilyConfig{LocationGUID: bc.LocationGUID, PracticeZone: fc.PracticeZone, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	return bookinghttp.NewFamily(fam, bookinghttp.Config{Context: context.WithoutCancel(shutdown), Logger: m.Logger})
}

func registerFamily(app *fiber.App, h *bookinghttp.FamilyHandlers, basePath string) error {
	return bookinghttp.RegisterFamily(app, h, basePath)
}

// reservationHolds is bookingsvc.SlotHolds over what exists today: the
// seed-003 slot reservation (SlotReservation:<loc>:<date>:<time>:<col>).
// ReleaseSlot deletes whoever holds the slot (read the holder, then the
// store's compare-and-delete by that session: a hold taken in between is
// left alone). There are no cooldowns yet: ClearCooldown reports none.
type reservationHolds struct {
	st       *reservation.Store
	location string
	zone     *time.Location
}

func (h reservationHolds) ReleaseSlot(ctx context.Context, _, specialistID string, start time.Time) (bool, error) {
	zone := h.zone
	if zone == nil {
		zone = time.UTC
	}
	s := slots.Slot{StartTime: slots.FormatTime(start.In(zone)), ScheduleColumnGUID: specialistID, LocationGUID: h.location}
	r, _, found, err := h.st.Get(ctx, s)
	if err != nil || !found {
		return false, err
	}
	ok, err := h.st.Release(ctx, s, r.SessionID)
	if err != nil {
		return false, fmt.Errorf("release the slot reservation: %w", err)
	}
	return ok, nil
}

func (reservationHolds) ClearCooldown(context.Context, string) (bool, error) { return false, nil }
