package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// familyParts is what newBooking hands over to the family.
type familyParts struct {
	client  *cloud9.Client
	limiter booking.Limiter
	worker  *booking.Worker
	holds   *holds.Engine
	slots   booking.SlotRestorer
}

// newFamily builds the family service and handlers: the rest of the
// Node-RED family, getPatient, getPatientByFilter, getPatientAppts,
// editInsurance, confirmAppt, cancelAppt, getLocation and
// checkOperationStatus, on the booking path's Cloud9 client, its shared
// limiter and its Asynq worker. cancelAppt's side effects go to the
// process's hold engine (FamilyDeps.Holds: release whatever holds the freed
// chair, either face, and clear the cooldown by appointment id) and to the
// tiered slot cache (FamilyDeps.Slots: RestoreSlot puts the slot back in
// every list covering it). The phone search starts nothing: it reads Cloud9
// only for a caller's search.
func (m *Main) newFamily(b *backend, p familyParts, shutdown context.Context) (*bookinghttp.FamilyHandlers, error) {
	bc, fc := m.Config.Booking, m.Config.Family
	raw := p.client.WithoutLimiter() // Family takes the limiter's turn itself
	idx, err := phoneindex.New(b.Client, raw, phoneindex.Config{ReadsPerSearch: fc.PhoneReadsPerSearch,
		ReadsPerMinute: fc.PhoneReadsPerMinute, Concurrency: fc.PhoneConcurrency, RecordMaxAge: fc.PhoneRecordMaxAge,
		Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: raw, Limiter: p.limiter, Phones: idx,
		Holds: slotHolds{e: p.holds, m: m}, Slots: p.slots,
		Changes: booking.RedisSlotChanges{Client: b.Client}, Operations: p.worker},
		booking.FamilyConfig{LocationGUID: bc.LocationGUID, ScheduleColumnGUID: bc.ScheduleColumn, PracticeZone: fc.PracticeZone,
			Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	return bookinghttp.NewFamily(fam, bookinghttp.Config{Context: context.WithoutCancel(shutdown), Logger: m.Logger})
}

func registerFamily(app *fiber.App, h *bookinghttp.FamilyHandlers, basePath string) error {
	return bookinghttp.RegisterFamily(app, h, basePath)
}

// slotHolds is booking.SlotHolds over the hold engine. The engine
// rather than the reservation face: a cancellation frees the chair, so
// whatever holds (chair, start) goes — a createAppt reservation or a web
// hold alike, whichever appointment type it was taken for (the engine's
// ReleaseSlot checks the type only when given one; Cloud9's spelling of
// the type GUID need not match the hold's) — and only the engine clears a
// cooldown by appointment id.
type slotHolds struct {
	e *holds.Engine
	m *Main // nil: no catalogue record to remove (the shadow instance)
}

func (h slotHolds) ReleaseSlot(ctx context.Context, _, specialistID string, start time.Time) (bool, error) {
	ok, err := h.e.ReleaseSlot(ctx, "", specialistID, start)
	if err != nil {
		return false, fmt.Errorf("release the hold: %w", err)
	}
	if h.m != nil { // board_booked.go: the board and web holds see the slot free again
		h.m.unrecordIVABooking(ctx, start, specialistID)
	}
	return ok, nil
}

func (h slotHolds) ClearCooldown(ctx context.Context, appointmentID string) (bool, error) {
	ok, err := h.e.ClearCooldown(ctx, appointmentID)
	if err != nil {
		return false, fmt.Errorf("clear the cooldown: %w", err)
	}
	return ok, nil
}
