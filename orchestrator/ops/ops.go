package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/keyspace"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// Cache is the tiered slot cache the endpoints drive; *slotcache.Refresher
// implements it.
type Cache interface {
	Refresh(ctx context.Context, tiers []int) (slotcache.Report, error)
	Trigger(ctx context.Context) bool
	Health(ctx context.Context) (contracts.CacheHealth, error)
	Clear(ctx context.Context, tiers []int) ([]int, error)
	ClearLists(ctx context.Context) (int, error)
	Tier(ctx context.Context, n int) (slots.Tier, bool, error)
	Tiers() []int
	TierKey(n int) string
	HardStale() time.Duration
	Now() time.Time
}

var _ Cache = (*slotcache.Refresher)(nil)

// Config configures Handlers. Redis, Refresher and Auth are required.
type Config struct {
	Redis     redis.UniversalClient
	Refresher Cache
	// Auth guards every route (the monitoring credentials).
	Auth fiber.Handler
	// Prefixes are the key prefixes redisGet / redisSet / redisDelete may
	// touch (default DefaultPrefixes). They never open flowgate's own
	// keys beyond what orchestrator/keyspace allows (the guard runs
	// first).
	Prefixes []string
	// ReadPrefixes are further prefixes redisGet alone may read (default
	// DefaultReadPrefixes): the seed's own keys an operator inspects
	// while debugging. Writes never reach them.
	ReadPrefixes []string
	// ReadKey maps a key under ReadPrefixes to the key that holds it in
	// Redis (the hold engine's FaceKey: on Redis Cluster or with
	// REDIS_SHARDS a SlotReservation key carries a hash tag the caller does
	// not write). Default: the key itself.
	ReadKey func(key string) string
	// RequestTimeout is each request's deadline (web.Deadline), after
	// Auth: it bounds the request's Redis work. Default
	// DefaultRequestTimeout; a refresh has the refresher's own lease time.
	RequestTimeout time.Duration
	// MaxTTL bounds redisSet's ttl (default 30 days).
	MaxTTL time.Duration
	Logger *slog.Logger
}

// DefaultRequestTimeout is Config.RequestTimeout's default.
const DefaultRequestTimeout = 2 * time.Second

// DefaultPrefixes: flowgate's prefix. Of its keys, redisSet may write the
// operators' own flowgate:ops:… and redisDelete may also clear the caches
// (orchestrator/keyspace).
var DefaultPrefixes = []string{keyspace.DefaultKeyPrefix + ":"}

// DefaultReadPrefixes: the keys the booking flow's debugging guide reads
// with redisGet (its slot reservations, SlotReservation:<location>:…).
var DefaultReadPrefixes = []string{"SlotReservation:"}

// Handlers serves the operation endpoints.
type Handlers struct{ cfg Config }

// New checks cfg.
func New(cfg Config) (*Handlers, error) {
	if cfg.Redis == nil || cfg.Refresher == nil || cfg.Auth == nil {
		return nil, errors.New("ops: Redis, Refresher and Auth are required")
	}
	cfg.Prefixes = valutil.SliceOrDefault(cfg.Prefixes, DefaultPrefixes)
	if cfg.ReadPrefixes == nil {
		cfg.ReadPrefixes = DefaultReadPrefixes
	}
	for _, p := range append(slices.Clone(cfg.Prefixes), cfg.ReadPrefixes...) {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("ops: an empty key prefix would open every key")
		}
	}
	cfg.RequestTimeout = valutil.PositiveOrDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.MaxTTL = valutil.PositiveOrDefault(cfg.MaxTTL, 30*24*time.Hour)
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	return &Handlers{cfg: cfg}, nil
}

// Register mounts the routes: the operations under basePath, the test
// aliases at the original's paths.
func (h *Handlers) Register(app fiber.Router, basePath string) {
	b := strings.TrimRight(basePath, "/")
	a, d := h.cfg.Auth, web.Deadline(h.cfg.RequestTimeout)
	app.Get(b+"/redisGet", a, d, h.redisGet)
	app.Post(b+"/redisSet", a, d, h.redisSet)
	app.Post(b+"/redisDelete", a, d, h.redisDelete)
	app.Delete(b+"/redisDelete", a, d, h.redisDelete)
	app.Get(b+"/cache-health", a, d, h.cacheHealth)
	app.Post(b+"/cache/refresh", a, d, h.refresh)
	app.Delete(b+"/cache", a, d, h.clear)
	app.Post(b+"/cache/trigger", a, d, h.trigger)

	app.Post("/test/slot-cache/prefetch", a, d, h.prefetch)
	app.Get("/test/slot-cache/status", a, d, h.status)
	app.Post("/test/slot-cache/query", a, d, h.query)
	app.Delete("/test/slot-cache/clear", a, d, h.clear)
	app.Post("/test/redis-slot-cache/trigger", a, d, h.refresh)
	app.Get("/test/redis-slot-cache/status", a, d, h.status)
	app.Delete("/test/redis-slot-cache/clear", a, d, h.clear)
}
