package slotcache

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Defaults (docs/reference/nodered-endpoints.md §5: tiers 30/60/90 d; fresh 5 min, stale 15 min,
// hard limit 60 min; cron every 5 min).
const (
	DefaultFresh          = 5 * time.Minute
	DefaultStale          = 15 * time.Minute
	DefaultHardStale      = 60 * time.Minute
	DefaultLeaseTTL       = 4 * time.Minute
	DefaultHistoryLen     = 100
	DefaultHealthFailures = 3
	DefaultAttempts       = 2
	DefaultRetryDelay     = time.Second
	DefaultWindow         = slots.DefaultWindow
)

// DefaultTierDays are the three tiers' spans.
var DefaultTierDays = []int{30, 60, 90}

// Reader is the Cloud9 read the refresher needs (a client without its own
// limiter: the refresher takes the limiter's turn itself).
type Reader interface {
	GetOnlineReservations(ctx context.Context, q cloud9.ReservationQuery) ([]cloud9.Slot, error)
}

// Config configures a Refresher. Cache, Redis, Cloud9 and LocationGUID are
// required; zero values of the rest take the defaults.
type Config struct {
	Cache  *slots.Cache
	Redis  redis.UniversalClient
	Cloud9 Reader
	// Limiter spaces the refresher's GetOnlineReservations calls (nil: no
	// limit). Give it the limiter every instance shares.
	Limiter      cloud9.Limiter
	LocationGUID string
	// TierDays are the tiers' spans from tomorrow, tier 1 first.
	TierDays []int
	// Zone is the practice's zone (PRACTICE_TIME_ZONE): "tomorrow", the
	// tiers' first day, is the day after today there (slots.Tomorrow).
	// Default UTC.
	Zone *time.Location
	// Fresh / Stale / HardStale: see the package doc. Fresh < Stale <=
	// HardStale; a tier lives for the slot cache's TTL, so HardStale
	// should not exceed it.
	Fresh, Stale, HardStale time.Duration
	// Window groups the pre-grouped pairs and triples (default 40 min),
	// over the slots of Columns (the chairs offered; empty: all).
	Window  time.Duration
	Columns []string
	// LeaseTTL bounds one refresh run (its lease and context).
	LeaseTTL time.Duration
	// Attempts per tier on retryable Cloud9 errors, RetryDelay between.
	Attempts   int
	RetryDelay time.Duration
	// HealthFailures consecutive failures of one tier make cache-health
	// unhealthy.
	HealthFailures int
	HistoryLen     int
	// Schedule is the refresh job's cron spec and Interval its period,
	// shown by cache-health (default 5 min).
	Schedule string
	Interval time.Duration
	// KeyPrefix of the keys (default "flowgate", as slots.Cache's).
	KeyPrefix string
	Now       func() time.Time
	Logger    *slog.Logger
}

func (c Config) withDefaults() Config {
	c.TierDays = valutil.SliceOrDefault(c.TierDays, DefaultTierDays)
	c.Fresh = valutil.ValOrDefault(c.Fresh, DefaultFresh)
	c.Stale = valutil.ValOrDefault(c.Stale, DefaultStale)
	c.HardStale = valutil.ValOrDefault(c.HardStale, DefaultHardStale)
	c.Window = valutil.ValOrDefault(c.Window, DefaultWindow)
	c.Interval = valutil.ValOrDefault(c.Interval, 5*time.Minute)
	c.LeaseTTL = valutil.ValOrDefault(c.LeaseTTL, DefaultLeaseTTL)
	c.Attempts = valutil.ValOrDefault(c.Attempts, DefaultAttempts)
	c.RetryDelay = valutil.ValOrDefault(c.RetryDelay, DefaultRetryDelay)
	c.HealthFailures = valutil.ValOrDefault(c.HealthFailures, DefaultHealthFailures)
	c.HistoryLen = valutil.ValOrDefault(c.HistoryLen, DefaultHistoryLen)
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.Zone = valutil.ValOrDefault(c.Zone, time.UTC)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.Cache == nil || c.Redis == nil || c.Cloud9 == nil:
		return fmt.Errorf("slotcache: Cache, Redis and Cloud9 are required")
	case c.LocationGUID == "" || strings.ContainsAny(c.LocationGUID, ":{}|"):
		return fmt.Errorf("slotcache: LocationGUID is required (without ':', '|' or braces)")
	case len(c.TierDays) > slots.MaxTier:
		return fmt.Errorf("slotcache: at most %d tiers, got %d", slots.MaxTier, len(c.TierDays))
	case c.Fresh <= 0 || c.Stale <= c.Fresh || c.HardStale < c.Stale:
		return fmt.Errorf("slotcache: want 0 < fresh (%s) < stale (%s) <= hard-stale (%s)", c.Fresh, c.Stale, c.HardStale)
	case c.Attempts < 1 || c.HistoryLen < 1 || c.HealthFailures < 1 || c.LeaseTTL < time.Second:
		return fmt.Errorf("slotcache: attempts, history length and health failures must be at least 1, the lease at least 1s")
	}
	for i, d := range c.TierDays {
		if d < 1 || d > 7*28 {
			return fmt.Errorf("slotcache: tier %d spans %d days, want 1..196", i+1, d)
		}
	}
	return nil
}
