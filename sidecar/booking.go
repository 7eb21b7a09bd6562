package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// bookingEventsChannel is the Redis channel of booking events (completed,
// failed for good).
const bookingEventsChannel = "flowgate:booking:events"

// bookingPart is the Node-RED-compatible booking path: the Cloud9 client (on
// the real API or the embedded sandbox simulator), the shared limiter, the
// service and its Asynq worker, and the HTTP endpoints.
type bookingPart struct {
	client *cloud9.Client
	http   *bookinghttp.Handlers
	family *bookinghttp.FamilyHandlers // booking_family.go
	// The core, for the web face's bookings of Cloud9 slots (holds_book.go).
	svc          *booking.Service
	worker       *booking.Worker
	reservations *reservation.Store
}

// cloud9Endpoint is the configured Cloud9, or the sandbox simulator started
// in this process (announced) when none is configured: by default only on
// the embedded Redis, on a real one only with CLOUD9_SIMULATOR=true
// (LoadConfig refuses the rest; checked again here for a Config built by
// hand).
func (m *Main) cloud9Endpoint() (cloud9.Config, error) {
	cfg := m.Config
	c := cloud9.Config{Endpoint: cfg.Cloud9Endpoint, ClientID: cfg.Cloud9ClientID, Username: cfg.Cloud9Username,
		Password: cfg.Cloud9Password, VendorUsername: cfg.Cloud9VendorUsername,
		WriteTimeout: cfg.Booking.WriteTimeout, NoteTimeout: cfg.Booking.NoteTimeout, ReadTimeout: cfg.Booking.ReadTimeout,
		DayHalfFormat: cfg.Booking.DayHalfFormat, Logger: m.Logger, Registerer: m.registry}
	if c.Endpoint != "" {
		return c, nil
	}
	if !cfg.Embedded() && !cfg.Cloud9Simulator {
		return c, &ConfigError{Var: "CLOUD9_ENDPOINT", Err: errors.New("a real Redis needs a real Cloud9: set " + cloud9Credentials + ", or CLOUD9_SIMULATOR=true")}
	}
	sim := cloud9sim.New(cloud9sim.Config{Scale: cfg.Booking.SimScale,
		WriteLimit: cloud9sim.Rate{N: cfg.Booking.SimWriteLimit.N, Per: cfg.Booking.SimWriteLimit.Per}, Window: cfg.Booking.SimWindow})
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		return c, fmt.Errorf("start the Cloud9 sandbox simulator: %w", err)
	}
	m.onClose(stop)
	m.Logger.Warn("CLOUD9 SANDBOX SIMULATOR: no CLOUD9_ENDPOINT set; bookings go to an in-process simulator with made-up patients and slots, lost at exit",
		"chosen_by", simulatorChoice(cfg), "url", url, "write_limit", cfg.Booking.SimWriteLimit.String(), "window", string(cfg.Booking.SimWindow), "scale", cfg.Booking.SimScale)
	c.Endpoint, c.ClientID, c.Username, c.Password, c.VendorUsername = url, "sandbox", "sandbox", "sandbox", "flowgate"
	if m.Config.Booking.ProviderGUID == "" {
		m.Config.Booking.ProviderGUID = cloud9sim.DefaultOrthodontistGUID
	}
	return c, nil
}

// simulatorChoice names what put flowgate on the sandbox simulator.
func simulatorChoice(cfg Config) string {
	if cfg.Cloud9Simulator {
		return "CLOUD9_SIMULATOR=true"
	}
	return "embedded Redis (the default)"
}

// writeRate is BOOKING_SPACING_MS when set, else CLOUD9_WRITE_LIMIT.
func (c Config) writeRate() cloud9.Rate {
	if c.Booking.SpacingMS > 0 {
		return cloud9.SpacingToRate(c.Booking.SpacingMS)
	}
	return cloud9.Rate{N: c.Cloud9WriteLimit.N, Per: c.Cloud9WriteLimit.Per}
}

// writeLimiter is the Cloud9 write limiter CLOUD9_WRITE_LIMITER names, at
// writeRate per write procedure.
func (c Config) writeLimiter(rdb redis.UniversalClient) booking.Limiter {
	rates, margin := cloud9.WriteRates(c.writeRate()), cloud9.WithMargin(c.Booking.LimitMargin)
	if c.Booking.WriteLimiter == LimiterSpacing {
		return cloud9.NewRedisLimiter(rdb, rates, cloud9.Rate{}, margin)
	}
	return cloud9.NewWindowLimiter(rdb, rates, cloud9.Rate{}, margin)
}

// noteLimiter is the limiter of the comments no caller waits on: the
// window limiter less CLOUD9_COMMENT_RESERVE places of SetPatientComment's
// window (editInsurance keeps the whole window); with the spacing limiter
// the same limiter (one turn at a time leaves nothing to reserve).
func (c Config) noteLimiter(l booking.Limiter) booking.Limiter {
	if w, ok := l.(*cloud9.WindowLimiter); ok && c.Booking.CommentReserve > 0 {
		return w.WithReserve(cloud9.ProcSetPatientComment, c.Booking.CommentReserve)
	}
	return l
}

// newBooking builds the booking path and registers its Asynq handlers; it
// runs before the Asynq servers start.
func (m *Main) newBooking(rt *asynqrt.Runtime, b *backend, shutdown context.Context) (*bookingPart, error) {
	cfg := m.Config
	c9cfg, err := m.cloud9Endpoint()
	if err != nil {
		return nil, err
	}
	bc := m.Config.Booking // after cloud9Endpoint, which may fill the provider
	// One limiter per procedure in Redis, shared by the sync path, the
	// workers and every instance. The service takes the turn itself, so
	// its client runs without one.
	limiter := cfg.writeLimiter(b.Client)
	client, err := cloud9.New(c9cfg)
	if err != nil {
		return nil, &ConfigError{Var: "CLOUD9_ENDPOINT", Err: err}
	}
	signer, err := authtoken.New(authtoken.Config{Secret: []byte(cfg.BookingAuthSecret), TTL: bc.SessionTTL, Now: m.Now})
	if err != nil {
		return nil, &ConfigError{Var: "BOOKING_AUTH_SECRET", Err: err}
	}
	sessions, err := session.New(b.Client, session.Config{TTL: bc.SessionTTL, Now: m.Now})
	if err != nil {
		return nil, err
	}
	holds, err := m.newReservations(bc)
	if err != nil {
		return nil, err
	}
	cache, err := slots.NewCache(b.Client, slots.CacheConfig{TTL: bc.SlotCacheTTL, Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	events := booking.MultiEvents{booking.RedisEvents{Client: b.Client, Channel: bookingEventsChannel}}
	if bc.EventsWebhook != "" {
		events = append(events, booking.WebhookEvents{URL: bc.EventsWebhook, Secret: []byte(cfg.OutboundSecret), Now: m.Now})
	}
	if bc.AuthMode == "legacy" {
		m.Logger.Warn("BOOKING_AUTH_MODE=legacy: createAppt books for any well-formed patientGUID without a bookingAuthToken")
	}
	raw := client.WithoutLimiter() // the service takes the limiter's turn itself
	tiers, err := m.newSlotCache(b.Client, client, cache, bookingdeps.SlotSource{Cloud9: client.WithoutLimiter(), Cache: cache,
		LocationGUID: bc.LocationGUID, Columns: bc.offeredColumns(), FreshFor: bc.SlotFresh, MaxStale: cfg.SlotCache.MaxStale,
		Search: cfg.SlotCache.Search, Outage: &bookingdeps.Outage{Hold: cfg.SlotCache.OutageHold}, CacheTimeout: bc.RedisTimeout,
		Now: m.Now, Logger: m.Logger})
	if err != nil { // slotcache.go: the tiered cache over the flat one
		return nil, err
	}
	svcCfg := m.bookingServiceConfig(bc)
	deps := booking.Deps{
		Cloud9: raw, Limiter: limiter, NoteLimiter: cfg.noteLimiter(limiter), Tokens: bookingdeps.Tokens{S: signer}, Sessions: bookingdeps.Sessions{C: sessions},
		Reservations: recordingReservations{bookingdeps.Reservations{R: holds}, m}, BookingTokens: bookingdeps.BookingTokens{Cache: cache, Logger: m.Logger},
		Marks: &booking.RedisMarks{Client: b.Client, DoneTTL: svcCfg.MarksDoneTTL()}, Events: events, Slots: tiers.source,
	}
	worker, err := booking.NewWorker(rt, deps, svcCfg)
	if err != nil {
		return nil, fmt.Errorf("booking worker: %w", err)
	}
	worker.Register()
	deps.Queue = worker
	svc, err := booking.New(deps, svcCfg)
	if err != nil {
		return nil, fmt.Errorf("booking service: %w", err)
	}
	// Not the shutdown context: a booking under way at SIGTERM finishes
	// (HTTP_SHUTDOWN_TIMEOUT covers the sync budget) rather than being cut
	// between reservation and SetAppointment.
	h, err := bookinghttp.New(svc, bookinghttp.Config{Context: context.WithoutCancel(shutdown), Logger: m.Logger,
		RequestTimeout: bc.bookingRequestTimeout(), Operator: m.operator()}) // queue-status: the whole queue for the monitoring credentials (opsauth.go)
	if err != nil {
		return nil, err
	}
	m.onClose(func(context.Context) error { client.Close(); return nil })
	fh, err := m.newFamily(b, familyParts{client: client, limiter: limiter, worker: worker, holds: holds.Engine(), slots: tiers.source}, shutdown)
	if err != nil {
		return nil, fmt.Errorf("booking family: %w", err)
	}
	return &bookingPart{client: client, http: h, family: fh, svc: svc, worker: worker, reservations: holds}, nil
}

// bookingServiceConfig is the booking service's (and worker's) settings.
func (m *Main) bookingServiceConfig(bc BookingConfig) booking.Config {
	return booking.Config{
		SyncBudget: bc.SyncBudget, InCallWait: bc.InCallWait, SyncRetryDelay: bc.SyncRetryDelay, SyncAttempts: bc.SyncAttempts,
		AsyncMaxAttempts: bc.MaxAttempts, Backoff: booking.BackoffPolicy{Base: bc.BackoffBase, Max: bc.BackoffMax},
		QueueDelay: bc.BackoffBase, CompletedRetention: bc.Retention, AuthMode: bc.AuthMode, PatientModel: bc.PatientModel,
		DefaultScheduleColumnGUID: bc.ScheduleColumn, Chairs: bc.offeredColumns(), DefaultScheduleViewGUID: bc.ScheduleView,
		DefaultAppointmentTypeGUID: bc.AppointmentType, LocationGUID: bc.LocationGUID, ProviderGUID: bc.ProviderGUID,
		SessionTTL: bc.SessionTTL, StatusEndpoint: m.Config.NodeRedBasePath + bookinghttp.OperationStatusPath,
		WriteTimeout: bc.WriteTimeout,                             // the in-flight lease outlives one Cloud9 write
		NoteTimeout:  bc.NoteTimeout, ReadTimeout: bc.ReadTimeout, // with it, size a queued operation's run
		LeaseGrace:   bc.UncertainGrace,
		RedisTimeout: bc.RedisTimeout,
		PracticeZone: m.Config.Family.PracticeZone, // PRACTICE_TIME_ZONE: getApptSlots' "tomorrow"
		Now:          m.Now, Logger: m.Logger, Registerer: m.registry,
	}
}

func (bk *bookingPart) routes(app *fiber.App, basePath string) error {
	if err := bookinghttp.Register(app, bk.http, basePath); err != nil {
		return err
	}
	return registerFamily(app, bk.family, basePath)
}
