package main

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/holds/availability/availhttp"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// availabilityPart is the web face's catalogue: the schedule-file or
// Cloud9 source, the store, the Catalog (which the hold engine's web face
// uses) and its HTTP endpoints.
type availabilityPart struct {
	catalog *availability.Catalog
	http    *availhttp.Handlers
	cloud9  *availability.Cloud9Source // the Cloud9 source; nil with HOLDS_SCHEDULE_FILE
	store   *availability.Store        // the catalogue's store (board_booked.go records into it)
}

// newAvailability builds the catalogue. With HOLDS_SCHEDULE_FILE the
// file's schedule is stored in Redis (replacing the stored one when the
// file changed) and stored again by the first read that finds it gone
// (Redis lost its keys); otherwise Cloud9's open slots are read through
// the booking path's client and the shared slot cache, which a miss
// refills from Cloud9.
func (m *Main) newAvailability(ctx context.Context) (*availabilityPart, error) {
	ac := m.Config.Availability
	store, err := availability.NewStore(m.redis.Client, availability.StoreConfig{CacheTTL: ac.CacheTTL, Now: m.Now})
	if err != nil {
		return nil, &ConfigError{Var: "TIMESLOTS_CACHE_TTL_SECONDS", Err: err}
	}
	var src availability.Source
	var c9 *availability.Cloud9Source
	if ac.ScheduleFile != "" {
		stored, err := store.SeedSchedule(ctx, ac.Schedule, ac.ScheduleHash)
		if err != nil {
			return nil, fmt.Errorf("availability: store the schedule file: %w", err)
		}
		m.Logger.Info("availability: schedule-file source", "file", ac.ScheduleFile, "replaced_stored_schedule", stored,
			"appointment_types", len(ac.Schedule.AppointmentTypes), "specialists", len(ac.Schedule.Specialists))
		src = availability.ScheduleSource{Store: store, // a read that finds the schedule lost stores the file's again
			Seed: &availability.ScheduleSeed{Schedule: ac.Schedule, Hash: ac.ScheduleHash, Logger: m.Logger}}
	} else {
		cache, err := slots.NewCache(m.redis.Client, slots.CacheConfig{TTL: m.Config.Booking.SlotCacheTTL, Now: m.Now, Logger: m.Logger,
			FetchTimeout: m.Config.Booking.ReadTimeout}) // a refresh's Cloud9 read, whoever still waits for it
		if err != nil {
			return nil, err
		}
		reader := availability.Cloud9Slots{Cloud9: m.booking.client.WithoutLimiter(), Cache: cache, LocationGUID: m.Config.Booking.LocationGUID,
			Loc: ac.TimeZone, FreshFor: m.Config.Booking.SlotFresh, MaxStale: m.Config.SlotCache.MaxStale, CacheTimeout: m.Config.Booking.RedisTimeout, Now: m.Now, Logger: m.Logger}
		src9 := availability.NewCloud9Source(availability.Cloud9Source{Slots: reader, Loc: ac.TimeZone, Now: m.Now})
		c9 = &src9
		src = *c9
		m.Logger.Info("availability: Cloud9 source (no HOLDS_SCHEDULE_FILE): chairs are specialists; the admin endpoints answer 409")
	}
	cat, err := availability.NewCatalog(availability.CatalogConfig{Source: src, Store: store, MaxDays: ac.MaxDays, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, &ConfigError{Var: "HOLDS_TIMESLOTS_MAX_DAYS", Err: err}
	}
	timeout := availhttp.DefaultRequestTimeout // Redis only
	if ac.ScheduleFile == "" {
		timeout = m.Config.Booking.SyncBudget // a Cloud9 read on a cache miss
	}
	active, err := m.holdsActive()
	if err != nil {
		return nil, err
	}
	h, err := availhttp.New(availhttp.Config{Catalog: cat, Holds: active, Admin: m.availabilityAdmin(),
		RequestTimeout: timeout, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	return &availabilityPart{catalog: cat, http: h, cloud9: c9, store: store}, nil
}

// holdsActive is the hold engine's Active, which filters other clients'
// holds out of the timeslots.
func (m *Main) holdsActive() (availhttp.ActiveHolds, error) {
	return m.holdsEngine()
}

// availabilityAdmin guards the admin endpoints like /monitoring (opsAuth:
// basic auth with MONITORING_USER / MONITORING_PASSWORD, the flowgate
// error envelope, cross-origin writes refused); open only where
// /monitoring is (MONITORING_AUTH=none, or the embedded trial).
func (m *Main) availabilityAdmin() fiber.Handler {
	if m.monitoringCheck() == nil && !m.Config.Embedded() {
		m.Logger.Warn("availability admin endpoints are open (MONITORING_AUTH=none)")
	}
	return m.opsAuth()
}

// availabilityRoutes builds the catalogue and registers its routes.
func (m *Main) availabilityRoutes(app *fiber.App) error {
	part, err := m.newAvailability(context.Background())
	if err != nil {
		return err
	}
	m.avail = part
	availhttp.Register(app, part.http)
	return nil
}
