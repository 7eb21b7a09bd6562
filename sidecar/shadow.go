package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/shadow"
	"github.com/flowgate/flowgate/orchestrator/shadow/shadowhttp"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// shadowPart is the dry instance and the shadow routes of the shadow mode
// (docs/switch-over.md, "Shadow first"): the kit mirrors
// the requests it answered from the original node; flowgate replays each
// through a second, dry instance of the booking path and its family and
// compares. The dry instance shares nothing that writes with the real one:
// its sessions, reservations, slot cache, marks and phone index live in
// an in-process miniredis of its own (lost at exit, which is the point);
// its Cloud9 client passes reads to the real client and answers writes
// with fake GUIDs (shadow.DryCloud9); its limiter never takes a turn, its
// queue forgets, its events go nowhere, its metrics register with a
// registry of their own. Only the comparison records reach the real Redis
// (flowgate:shadow:…).
type shadowPart struct {
	dry      *shadow.DryCloud9
	handlers *shadowhttp.Handlers
}

// newShadow builds the dry instance beside bk and the shadow routes.
func (m *Main) newShadow(b *backend, bk *bookingPart) (*shadowPart, error) {
	cfg := m.Config
	mini := miniredis.NewMiniRedis()
	if err := mini.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("shadow: start its in-memory redis: %w", err)
	}
	stopClock := driveClock(mini, embeddedClockTick, m.Now)
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	m.onClose(func(context.Context) error { stopClock(); _ = rdb.Close(); mini.Close(); return nil })

	reads := bk.client.WithoutLimiter() // reads only: the real client never sees a write from here
	dry := shadow.NewDryCloud9(reads)
	log := m.Logger.With("shadow", true)
	app, err := m.shadowApp(rdb, dry, reads, log)
	if err != nil {
		return nil, err
	}
	rec := shadow.NewRecorder(b.Client, shadow.Config{ReadyMinCalls: cfg.Shadow.ReadyMinCalls, ReadyWindow: cfg.Shadow.ReadyWindow,
		Retention: cfg.Shadow.Retention, Now: m.Now})
	sh, err := shadowhttp.New(shadowhttp.Config{Dry: app.Handler(), Recorder: rec, Metrics: shadow.NewMetrics(m.registry, rec),
		Auth: m.opsAuth(), Timeout: cfg.Booking.SyncBudget + cfg.Booking.WriteTimeout, Logger: log})
	if err != nil {
		return nil, err
	}
	return &shadowPart{dry: dry, handlers: sh}, nil
}

// shadowApp is the dry instance: the booking service and its family on
// rdb (the shadow's own store) and dry, served by a Fiber app of its own
// that no listener serves (the mirror calls its handler in process).
func (m *Main) shadowApp(rdb redis.UniversalClient, dry *shadow.DryCloud9, reads *cloud9.Client, log *slog.Logger) (*fiber.App, error) {
	cfg, bc := m.Config, m.Config.Booking
	signer, err := authtoken.New(authtoken.Config{Secret: []byte(cfg.BookingAuthSecret), TTL: bc.SessionTTL, Now: m.Now})
	if err != nil {
		return nil, err
	}
	sessions, err := session.New(rdb, session.Config{TTL: bc.SessionTTL, Now: m.Now})
	if err != nil {
		return nil, err
	}
	eng, err := holds.New(rdb, holds.Config{HoldTTL: cfg.Holds.HoldTTL, MaxHolds: cfg.Holds.MaxPerClient,
		Cooldown: cfg.Holds.Cooldown, Now: m.Now, Logger: m.Logger, PlainRedis: true})
	if err != nil {
		return nil, err
	}
	res, err := reservation.New(nil, reservation.Config{Engine: eng, Location: cfg.Holds.TimeZone,
		AppointmentTypeID: bc.AppointmentType, ReserveTTL: bc.ReserveTTL, ConfirmTTL: bc.BookedTTL, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	cache, err := slots.NewCache(rdb, slots.CacheConfig{TTL: bc.SlotCacheTTL, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	deps := booking.Deps{
		Cloud9: dry, Limiter: shadow.OpenLimiter{}, Tokens: bookingdeps.Tokens{S: signer}, Sessions: bookingdeps.Sessions{C: sessions},
		Reservations: bookingdeps.Reservations{R: res}, BookingTokens: bookingdeps.BookingTokens{Cache: cache, Logger: log},
		Marks: &booking.RedisMarks{Client: rdb}, Events: shadow.NoEvents{}, Queue: shadow.DryQueue{},
		Slots: bookingdeps.SlotSource{Cloud9: reads, Cache: cache, LocationGUID: bc.LocationGUID, Columns: bc.offeredColumns(),
			FreshFor: bc.SlotFresh, MaxStale: cfg.SlotCache.MaxStale, Search: cfg.SlotCache.Search,
			Outage: &bookingdeps.Outage{Hold: cfg.SlotCache.OutageHold}, CacheTimeout: bc.RedisTimeout, Logger: log},
	}
	svcCfg := m.bookingServiceConfig(bc)
	svcCfg.Logger, svcCfg.Registerer = log, prometheus.NewRegistry()
	svc, err := booking.New(deps, svcCfg)
	if err != nil {
		return nil, fmt.Errorf("shadow booking service: %w", err)
	}
	idx, err := phoneindex.New(rdb, reads, phoneindex.Config{ReadsPerSearch: cfg.Family.PhoneReadsPerSearch,
		ReadsPerMinute: cfg.Family.PhoneReadsPerMinute, Concurrency: cfg.Family.PhoneConcurrency,
		RecordMaxAge: cfg.Family.PhoneRecordMaxAge, Now: m.Now, Logger: log}) // its records in the shadow's own Redis
	if err != nil {
		return nil, err
	}
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: dry, Limiter: shadow.OpenLimiter{}, Phones: idx,
		Holds: slotHolds{e: eng}, Changes: shadow.NoSlotChanges{}, Operations: shadow.DryQueue{}},
		booking.FamilyConfig{LocationGUID: bc.LocationGUID, ScheduleColumnGUID: bc.ScheduleColumn, PracticeZone: cfg.Family.PracticeZone,
			Now: m.Now, Logger: log})
	if err != nil {
		return nil, err
	}
	return m.shadowRoutes(svc, fam, log)
}

// shadowRoutes serves the dry service and family on an app of their own.
func (m *Main) shadowRoutes(svc *booking.Service, fam *booking.Family, log *slog.Logger) (*fiber.App, error) {
	app, err := web.New(web.Options{BodyLimit: m.Config.BodyLimit, Logger: log})
	if err != nil {
		return nil, err
	}
	hc := bookinghttp.Config{Context: context.Background(), Logger: log}
	h, err := bookinghttp.New(svc, hc)
	if err != nil {
		return nil, err
	}
	fh, err := bookinghttp.NewFamily(fam, hc)
	if err != nil {
		return nil, err
	}
	if err := bookinghttp.Register(app, h, m.Config.NodeRedBasePath); err != nil {
		return nil, err
	}
	if err := registerFamily(app, fh, m.Config.NodeRedBasePath); err != nil {
		return nil, err
	}
	return app, nil
}

func (s *shadowPart) routes(app *fiber.App) {
	shadowhttp.Register(app, s.handlers)
}
