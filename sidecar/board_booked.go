package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/bookingsvc"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// recordingReservations is the IVA face's reservations that also record
// each appointment createAppt (or the queued booking, or bookConsultation)
// confirmed in the /v1 catalogue, as the web face records its own: once
// Cloud9 books a slot it stops offering it, and without the record the
// board showed that chair's cell as not offered ("—") instead of booked.
type recordingReservations struct {
	bookingsvc.Reservations
	m *Main
}

// Confirm implements bookingsvc.Reservations: the reservation first, then
// the record, best effort (a failure is logged; the booking stands).
func (r recordingReservations) Confirm(ctx context.Context, h bookingsvc.SlotHold) error {
	if err := r.Reservations.Confirm(ctx, h); err != nil {
		return err
	}
	r.m.recordIVABooking(ctx, h)
	return nil
}

// recordIVABooking records h under the reservations' appointment type
// (CLOUD9_APPOINTMENT_TYPE_GUID, the type the IVA face's holds live under),
// its chair as the specialist, for the type's length.
func (m *Main) recordIVABooking(ctx context.Context, h bookingsvc.SlotHold) {
	part := m.avail
	if part == nil || part.cloud9 == nil { // the schedule-file catalogue knows no Cloud9 chairs
		return
	}
	wall, err := slots.ParseTime(h.StartTime)
	if err != nil {
		m.Logger.Warn("board: booked slot not recorded", "startTime", h.StartTime, "err", err)
		return
	}
	loc := m.Config.Availability.TimeZone
	if loc == nil {
		loc = time.UTC
	}
	day := time.Date(wall.Year(), wall.Month(), wall.Day(), 0, 0, 0, 0, time.UTC)
	start := slots.WallInstant(loc, day, wall.Hour()*60+wall.Minute())
	t, err := ivaType(ctx, part.catalog, m.Config.Booking.AppointmentType)
	if err != nil {
		m.Logger.Warn("board: booked slot not recorded", "appointmentTypeId", m.Config.Booking.AppointmentType, "err", err)
		return
	}
	sum := sha256.Sum256([]byte(strings.ToLower(h.LocationGUID + "|" + start.UTC().Format(time.RFC3339) + "|" + h.ScheduleColumnGUID)))
	a := availability.Appointment{AppointmentID: "iva-" + hex.EncodeToString(sum[:12]), AppointmentTypeID: t.ID,
		SpecialistID: h.ScheduleColumnGUID, ClientID: "iva", SlotStartDate: start,
		SlotEndDate: start.Add(time.Duration(max(t.DurationMinutes, 1)) * time.Minute), BookedAt: m.Now()}
	if err := part.catalog.RecordBooking(ctx, a); err != nil {
		m.Logger.Warn("board: booked slot not recorded", "appointmentId", a.AppointmentID, "err", err)
	}
}

// ivaType is the catalogue's type whose id is guid in any case (Cloud9
// spells GUIDs as it likes).
func ivaType(ctx context.Context, cat *availability.Catalog, guid string) (availability.AppointmentType, error) {
	types, err := cat.AppointmentTypes(ctx)
	if err != nil {
		return availability.AppointmentType{}, err
	}
	for _, t := range types {
		if strings.EqualFold(t.ID, guid) {
			return t, nil
		}
	}
	return cat.AppointmentType(ctx, guid)
}
