package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream/board"
)

// holdStreamRoutes builds the live holds hub (seed 002 SSE stream),
// subscribes its control channel and mounts /v1/holds/stream and /board.
func (m *Main) holdStreamRoutes(app *fiber.App) error {
	c := m.Config.HoldStream
	hub, err := holdstream.New(holdstream.Config{
		Redis: m.redis.Client, Source: m.holdsEngine(),
		Ping: c.Ping, Retry: c.Retry, DefaultLease: c.LeaseDefault, MaxLease: c.LeaseMax,
		WriteTimeout: c.WriteTimeout, Buffer: c.Buffer,
		HeapWarn: uint64(c.HeapWarnMB) << 20, RSSWarn: uint64(c.RSSWarnMB) << 20, MemoryCheck: c.MemoryCheck,
		Logger: m.Logger, Registerer: m.registry, Now: m.Now,
	})
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

// holdsEngine is the stream's snapshot source. PLACEHOLDER until the holds
// engine (orchestrator/holds) is merged: it answers no active holds. The
// lead replaces it with the engine (m.holds.engine satisfies
// holdstream.Source once holdstream.Hold = holds.Hold) and sets
// Config.Channel to the engine's EventChannel.
func (m *Main) holdsEngine() holdstream.Source { return noHolds{} }

type noHolds struct{}

func (noHolds) Active(context.Context, string) ([]holdstream.Hold, error) { return nil, nil }
