package main

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/ops"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/scheduler"
)

// slotCacheJob is the tier refresh's cron job name.
const slotCacheJob = "slot_cache_refresh"

// slotCacheParts are the tiered slot cache (its refresher and the slot
// source the booking service reads) and the operation endpoints.
type slotCacheParts struct {
	refresher *slotcache.Refresher
	source    *slotcache.Source
	ops       *ops.Handlers
	schedule  string
}

// newSlotCache builds the tiered cache on rdb over client's reads, with
// flat as the fallback of queries no tier answers, and the operation
// endpoints. Its refresher reads through a GetOnlineReservations limiter
// of its own in Redis (SLOT_CACHE_READ_LIMIT), shared by every instance.
func (m *Main) newSlotCache(rdb redis.UniversalClient, client *cloud9.Client, cache *slots.Cache, flat booking.SlotSource) (*slotCacheParts, error) {
	cfg, bc := m.Config.SlotCache, m.Config.Booking
	read := cloud9.Rate{N: cfg.ReadLimit.N, Per: cfg.ReadLimit.Per}
	limiter := cloud9.NewRedisLimiter(rdb, map[string]cloud9.Rate{cloud9.ProcGetOnlineReservations: read}, cloud9.Rate{},
		cloud9.WithMargin(bc.LimitMargin))
	interval, _ := scheduler.Interval(cfg.Schedule) // validated at start; 0 (the default 5 min) otherwise
	r, err := slotcache.New(slotcache.Config{Cache: cache, Redis: rdb, Cloud9: client.WithoutLimiter(), Limiter: limiter, Interval: interval,
		LocationGUID: bc.LocationGUID, TierDays: cfg.TierDays, Zone: m.Config.Family.PracticeZone, Fresh: bc.SlotFresh, Stale: cfg.Stale, HardStale: cfg.HardStale,
		HealthFailures: cfg.HealthFailures, Schedule: cfg.Schedule, Columns: bc.offeredColumns(), Now: m.Now, Logger: m.Logger})
	if err != nil {
		return nil, &ConfigError{Var: "SLOT_CACHE_TIERS", Err: err}
	}
	m.onClose(func(context.Context) error { r.Close(); return nil })
	eng, err := m.holdsEngine()
	if err != nil {
		return nil, err
	}
	h, err := ops.New(ops.Config{Redis: rdb, Refresher: r, Auth: m.opsAuth(), Prefixes: cfg.OpsKeyPrefixes, ReadPrefixes: cfg.OpsReadPrefixes,
		ReadKey: eng.FaceKey, RequestTimeout: bc.SyncBudget, Logger: m.Logger})
	if err != nil {
		return nil, &ConfigError{Var: "OPS_KEY_PREFIXES", Err: err}
	}
	if err := m.registry.Register(newSlotCacheCollector(r.Health, m.Logger)); err != nil { // healthmetrics.go
		return nil, err
	}
	src := &slotcache.Source{R: r, Fallback: flat, Columns: bc.offeredColumns(), CacheTimeout: bc.RedisTimeout, MaxStale: cfg.MaxStale}
	m.tiers = &slotCacheParts{refresher: r, source: src, ops: h, schedule: cfg.Schedule}
	return m.tiers, nil
}

// registerJobs adds the tier refresh (once per tick across instances).
func (p *slotCacheParts) registerJobs(s *scheduler.Scheduler) error {
	if err := s.Register(slotCacheJob, p.schedule, p.refresher); err != nil {
		return fmt.Errorf("cron job %s: %w", slotCacheJob, err)
	}
	return nil
}

func (p *slotCacheParts) routes(app *fiber.App, basePath string) {
	p.ops.Register(app, basePath)
}
