package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// recordingReservations is the IVA face's reservations that also record
// each appointment createAppt (or the queued booking, or bookConsultation)
// confirmed in the /v1 catalogue, as the web face records its own: once
// Cloud9 books a slot it stops offering it, and without the record the
// board showed that chair's cell as not offered ("—") instead of booked.
type recordingReservations struct {
	booking.Reservations
	m *Main
}

// recordTimeout bounds one record (a catalogue read and a Redis write).
const recordTimeout = 5 * time.Second

// Confirm implements booking.Reservations: the reservation, then the
// record, best effort and off the booking's path (it costs the answer no
// time; a failure is logged, the booking stands; Close waits for it).
func (r recordingReservations) Confirm(ctx context.Context, h booking.SlotHold) error {
	if err := r.Reservations.Confirm(ctx, h); err != nil {
		return err
	}
	r.m.records.Add(1)
	go func() {
		defer r.m.records.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		r.m.recordIVABooking(rctx, h)
	}()
	return nil
}

// recordIVABooking records h under the reservations' appointment type
// (CLOUD9_APPOINTMENT_TYPE_GUID, the type the IVA face's holds live under),
// its chair as the specialist, for createAppt's default length. It writes
// the catalogue's store directly: the catalogue's own RecordBooking looks
// the type up, which may read Cloud9, and those reads are the bookings'
// (a test of concurrent consultations saw them queued for it).
func (m *Main) recordIVABooking(ctx context.Context, h booking.SlotHold) {
	part := m.avail
	if part == nil || part.cloud9 == nil || part.store == nil { // the schedule-file catalogue knows no Cloud9 chairs
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
	start := slots.WallInstant(loc, day, wall.Hour()*60+wall.Minute()).UTC()
	a := availability.Appointment{AppointmentID: ivaAppointmentID(h.LocationGUID, start, h.ScheduleColumnGUID), AppointmentTypeID: m.Config.Booking.AppointmentType,
		SpecialistID: h.ScheduleColumnGUID, ClientID: "iva", SlotStartDate: start,
		SlotEndDate: start.Add(booking.DefaultMinutes * time.Minute), BookedAt: m.Now().UTC()}
	if err := part.store.Record(ctx, a, 0); err != nil {
		m.Logger.Warn("board: booked slot not recorded", "appointmentId", a.AppointmentID, "err", err)
	}
}

// ivaAppointmentPrefix starts the catalogue id of every createAppt
// booking's record; no web appointment id starts with it.
const ivaAppointmentPrefix = "iva-"

// ivaAppointmentID is the catalogue id of a createAppt booking recorded
// by recordIVABooking: a pure function of where and when, so a cancel
// finds it.
func ivaAppointmentID(location string, start time.Time, column string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(location + "|" + start.UTC().Format(time.RFC3339) + "|" + column)))
	return ivaAppointmentPrefix + hex.EncodeToString(sum[:12])
}

// unrecordIVABooking removes the record of a createAppt booking that
// cancelAppt gave back (its slot is free again on the board and for web
// holds). A booking never recorded (the schedule-file catalogue, or a
// record that failed) is nothing to remove.
func (m *Main) unrecordIVABooking(ctx context.Context, start time.Time, column string) {
	part := m.avail
	if part == nil || part.cloud9 == nil || part.store == nil {
		return
	}
	id := ivaAppointmentID(m.Config.Booking.LocationGUID, start, column)
	if _, err := part.store.Cancel(ctx, id); err != nil && !errors.Is(err, availability.ErrNotFound) {
		m.Logger.Warn("board: cancelled booking's record not removed", "appointmentId", id, "err", err)
	}
}
