package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/scheduler"
)

// holdsPart is the hold engine: one Engine on the shared Redis
// behind both faces — createAppt's SlotReservations (the booking path gets
// it through holdsEngine) and the web /v1/holds endpoints.
type holdsPart struct {
	engine *holds.Engine
}

// holdsEngine returns the process's hold engine, creating it on first use
// (the booking path asks for it while Asynq starts, before the routes).
func (m *Main) holdsEngine() (*holds.Engine, error) {
	if m.holds != nil {
		return m.holds.engine, nil
	}
	cfg := m.Config.holdsConfig()
	cfg.Now, cfg.Logger = m.Now, m.Logger
	eng, err := holds.New(m.redis.Client, cfg)
	if err != nil {
		return nil, &ConfigError{Var: "HOLD_TTL", Err: err}
	}
	m.holds = &holdsPart{engine: eng}
	return eng, nil
}

// newReservations is createAppt's SlotReservation store: the IVA face of
// the process's hold engine.
func (m *Main) newReservations(bc BookingConfig) (*reservation.Store, error) {
	eng, err := m.holdsEngine()
	if err != nil {
		return nil, err
	}
	return reservation.New(nil, reservation.Config{Engine: eng, Location: m.Config.Holds.TimeZone,
		AppointmentTypeID: bc.AppointmentType, ReserveTTL: bc.ReserveTTL, ConfirmTTL: m.confirmTTL(bc), Now: m.Now, Logger: m.Logger})
}

// confirmTTL is how long a confirmed slot hold lasts. The worker confirms
// the hold again at each run of a queued booking, so it must outlast the
// run and the longest backoff after it (booking.Config.HoldKeepTTL); with
// the defaults (300 s, and a 300 s backoff cap) it lapsed between two
// retries and the slot was offered again. So SLOT_RESERVATION_BOOKED_TTL at
// its default is raised to HoldKeepTTL; set to another value it is kept as
// set, with a warning at start when it is the shorter.
func (m *Main) confirmTTL(bc BookingConfig) time.Duration {
	keep := m.bookingServiceConfig(bc).HoldKeepTTL()
	switch {
	case bc.BookedTTL >= keep:
		return bc.BookedTTL
	case bc.BookedTTL == reservation.DefaultConfirmTTL:
		m.Logger.Debug("SLOT_RESERVATION_BOOKED_TTL (default) raised so a queued booking's hold outlasts its retries", "kept", keep)
		return keep
	}
	m.Logger.Warn("SLOT_RESERVATION_BOOKED_TTL is shorter than the gap between two runs of a queued booking: its slot hold may lapse between retries and the slot be booked by another caller",
		"set", bc.BookedTTL, "needed", keep)
	return bc.BookedTTL
}

// holdsCatalog is the availability catalogue the web face books against
// (nil before availabilityRoutes built it: the web face is then not mounted).
func (m *Main) holdsCatalog() holdshttp.Catalog {
	if m.avail == nil {
		return nil
	}
	return availCatalog{m.avail.catalog}
}

// availCatalog adapts *availability.Catalog to the web face's Catalog.
type availCatalog struct{ c *availability.Catalog }

// AppointmentType implements holdshttp.Catalog: a type of the Cloud9
// source (not Editable) is External, booked in Cloud9 (webBooker).
func (a availCatalog) AppointmentType(ctx context.Context, id string) (holdshttp.AppointmentType, error) {
	t, err := a.c.AppointmentType(ctx, id)
	return holdshttp.AppointmentType{ID: t.ID, CooldownMinutes: t.CooldownMinutes, SpecialistIDs: t.SpecialistIDs,
		External: err == nil && !a.c.Editable()}, err
}

func (a availCatalog) Candidates(ctx context.Context, id string, start time.Time, specialistID string) (time.Time, []holds.Candidate, error) {
	return a.c.Candidates(ctx, id, start, specialistID)
}

func (a availCatalog) RecordBooking(ctx context.Context, ap holdshttp.Appointment) error {
	return a.c.RecordBooking(ctx, availability.Appointment{AppointmentID: ap.AppointmentID, AppointmentTypeID: ap.AppointmentTypeID,
		SpecialistID: ap.SpecialistID, ClientID: ap.ClientID, SlotStartDate: ap.SlotStartDate, SlotEndDate: ap.SlotEndDate, BookedAt: ap.BookedAt})
}

// CancelBooking implements holdshttp.Catalog. The records of createAppt
// bookings (ivaAppointmentID: a digest of where and when, which anyone
// can compute from the public timeslots) are not the web's to cancel:
// cancelAppt removes them. They answer as no appointment does.
func (a availCatalog) CancelBooking(ctx context.Context, id string) (holdshttp.Appointment, error) {
	if strings.HasPrefix(id, ivaAppointmentPrefix) {
		e := contracts.Errorf(contracts.CodeNotFound, "no appointment %q", id)
		e.Op, e.Err = "sidecar.CancelBooking", availability.ErrNotFound
		return holdshttp.Appointment{}, e
	}
	ap, err := a.c.CancelBooking(ctx, id)
	return holdshttp.Appointment{AppointmentID: ap.AppointmentID, AppointmentTypeID: ap.AppointmentTypeID, SpecialistID: ap.SpecialistID,
		ClientID: ap.ClientID, SlotStartDate: ap.SlotStartDate, SlotEndDate: ap.SlotEndDate, BookedAt: ap.BookedAt}, err
}

// holdsRoutes mounts /v1/holds, book and cancel when a catalogue exists.
func (m *Main) holdsRoutes(app *fiber.App) error {
	cat := m.holdsCatalog()
	if cat == nil {
		return nil
	}
	eng, err := m.holdsEngine()
	if err != nil {
		return err
	}
	bc := m.Config.Booking
	var catalogTimeout time.Duration // a schedule file's catalogue: Redis only, HOLDS_REQUEST_TIMEOUT
	if m.avail.cloud9 != nil {
		catalogTimeout = bc.SyncBudget // a Cloud9 read when the list is missing or stale, as the timeslots
	}
	h, err := holdshttp.New(holdshttp.Config{Engine: eng, Catalog: cat, RequestTimeout: m.Config.Holds.RequestTimeout,
		CatalogTimeout: catalogTimeout, Booker: m.webBooker(), BookingTimeout: bc.SyncBudget + bc.WriteTimeout + webBookingMargin, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return err
	}
	holdshttp.Register(app, h)
	return nil
}

// registerHoldsJobs announces expired holds once per tick across instances.
func (m *Main) registerHoldsJobs(s *scheduler.Scheduler) error {
	eng, err := m.holdsEngine()
	if err != nil {
		return err
	}
	spec := m.Config.Holds.SweepSpec
	if spec == "" {
		spec = "@every 1s"
	}
	if err := s.Register("holds_expiry", spec, scheduler.JobFunc(eng.Job)); err != nil {
		return fmt.Errorf("cron job holds_expiry: %w", err)
	}
	return nil
}
