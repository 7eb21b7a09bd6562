package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream/board"
)

// holdStreamRoutes builds the live holds hub (docs/holds.md#the-live-stream-sse),
// subscribes its control channel and mounts /v1/holds/stream and /board.
func (m *Main) holdStreamRoutes(app *fiber.App) error {
	c := m.Config.HoldStream
	eng, err := m.holdsEngine()
	if err != nil {
		return err
	}
	cfg := c.stream()
	cfg.Redis, cfg.Source, cfg.Channel, cfg.Validate = m.redis.Client, eng, eng.EventChannel, m.holdStreamValidator()
	cfg.Logger, cfg.Registerer, cfg.Now = m.Logger, m.registry, m.Now
	hub, err := holdstream.New(cfg)
	if err != nil {
		return &ConfigError{Var: "HOLDS_STREAM_LEASE_DEFAULT", Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hub.Start(ctx); err != nil {
		return fmt.Errorf("holds stream: %w", err)
	}
	m.holdStream = hub
	holdstream.Register(app, hub)
	board.Register(app)
	return nil
}

// stopHoldStreams ends every holds stream with server-shutdown and waits
// for their end events, before HTTP closes (Close calls it).
func (m *Main) stopHoldStreams() {
	if m.holdStream == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.holdStream.Shutdown(ctx); err != nil {
		m.Logger.Warn("holds streams did not all end", "err", err)
	}
}

// knownTypeTTL is how long a stream open trusts the catalogue's last
// "this appointment type exists".
const knownTypeTTL = 2 * time.Second

// holdStreamValidator refuses a stream for an appointment type the
// catalogue does not know (404), before the stream starts. A type the
// catalogue confirmed is trusted for knownTypeTTL: a burst of opens (every
// board reconnecting after a deploy) asks the catalogue, which reads the
// whole schedule, once per type rather than once per stream. Only known
// types are remembered (as many as the catalogue has); one removed by the
// admin API is still accepted for at most knownTypeTTL.
func (m *Main) holdStreamValidator() func(ctx context.Context, appointmentTypeID string) error {
	var mu sync.Mutex
	known := map[string]time.Time{} // appointment type → trusted until
	return func(ctx context.Context, appointmentTypeID string) error {
		if m.avail == nil {
			return nil
		}
		now := m.Now()
		mu.Lock()
		until, ok := known[appointmentTypeID]
		mu.Unlock()
		if ok && now.Before(until) {
			return nil
		}
		if _, err := m.avail.catalog.AppointmentType(ctx, appointmentTypeID); err != nil {
			return err
		}
		mu.Lock()
		known[appointmentTypeID] = now.Add(knownTypeTTL)
		mu.Unlock()
		return nil
	}
}
