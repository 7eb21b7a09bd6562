package main

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingsvc"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The rest of the Node-RED family (issue 10): getPatient,
// getPatientByFilter, getPatientAppts, editInsurance, confirmAppt,
// cancelAppt, getLocation and checkOperationStatus, on the booking path's
// Cloud9 client, its shared limiter and its Asynq worker.
//
// At merge: FamilyDeps.Holds is the holds engine (orchestrator/holds:
// ReleaseSlot, ClearCooldown) and FamilyDeps.Slots the tiered slot cache
// (RestoreSlot); until they exist cancelAppt skips those two steps.

// familyParts is what newBooking hands over to the family.
type familyParts struct {
	client  *cloud9.Client
	limiter bookingsvc.Limiter
	worker  *bookingsvc.Worker
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
	fam, err := bookingsvc.NewFamily(bookingsvc.FamilyDeps{Cloud9: raw, Limiter: p.limiter, Phones: idx,
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
