package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the refresh schedule's CRON_TZ works on images without a zone database

	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/ops"
	"github.com/flowgate/flowgate/scheduler"
)

// SlotCacheConfig holds the tiered slot cache's and the operation
// endpoints' settings (SLOT_CACHE_FRESH is the booking path's).
type SlotCacheConfig struct {
	TierDays        []int
	Stale           time.Duration
	HardStale       time.Duration
	Schedule        string
	ReadLimit       Rate
	HealthFailures  int
	OpsKeyPrefixes  []string
	OpsReadPrefixes []string
	// MaxStale bounds the age of any cached list offered without a live
	// Cloud9 answer (SLOT_CACHE_MAX_STALE).
	MaxStale time.Duration
	// Search is the range search of a query no tier answers (SLOT_SEARCH_*),
	// OutageHold how long a failed search makes the next ones answer at once.
	Search     bookingdeps.SearchPolicy
	OutageHold time.Duration
}

// DefaultSlotCacheSchedule: every 5 min, 7:00–18:55 Monday–Saturday at the
// practice (the simulator's week).
const DefaultSlotCacheSchedule = "CRON_TZ=America/New_York 0 */5 7-18 * * MON-SAT"

var slotCacheSettings = []setting{
	{name: "SLOT_CACHE_TIERS", def: ints(slotcache.DefaultTierDays), help: "days each tier of the slot cache spans after tomorrow (each also holds today, as the original's), tier 1 first (1–9 tiers of 1–196 days)", apply: tierDays},
	{name: "SLOT_CACHE_MAX_STALE", def: durStr(bookingdeps.DefaultMaxStale), help: "the oldest cached slot list (tier or search range) offered without a live Cloud9 answer: an older tier goes to Cloud9, and when Cloud9 fails an older list is not offered (the caller is transferred); SLOT_CACHE_FRESH..SLOT_CACHE_HARD_STALE", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.MaxStale })},
	{name: "SLOT_SEARCH_ATTEMPTS", def: itoa(bookingdeps.DefaultSearchAttempts), help: "GetOnlineReservations tries per window of a slot search no tier answers, retried on an empty page, code 0, a rate limit or a timeout (the original's 4)", apply: integer(func(c *Config) *int { return &c.SlotCache.Search.Attempts }, 1, bookingdeps.MaxSearchAttempts)},
	{name: "SLOT_SEARCH_WINDOWS", def: itoa(bookingdeps.DefaultSearchWindows), help: "windows of the query's span a slot search tries in turn while none yields a slot (the original's 2)", apply: integer(func(c *Config) *int { return &c.SlotCache.Search.Windows }, 1, bookingdeps.MaxSearchWindows)},
	{name: "SLOT_SEARCH_RETRY_DELAY", def: durStr(bookingdeps.DefaultSearchRetryDelay), help: "wait between a slot search's tries and windows (the original's 5 s)", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.Search.RetryDelay })},
	{name: "SLOT_SEARCH_BUDGET", def: durStr(bookingdeps.DefaultSearchBudget), help: "the longest a caller waits for a slot search, retries included (at most the original's 35s); no retry starts whose wait would end past it", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.Search.Budget })},
	{name: "SLOT_SEARCH_OUTAGE_HOLD", def: durStr(bookingdeps.DefaultSearchOutageHold), help: "after a slot search fails for good, the searches of this instance make one try for this long and answer at once (a successful call ends it)", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.OutageHold })},
	{name: "SLOT_CACHE_STALE", def: durStr(slotcache.DefaultStale), help: "a tier older than SLOT_CACHE_FRESH is stale (answered, one background refresh); older than this critical_stale", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.Stale })},
	{name: "SLOT_CACHE_HARD_STALE", def: durStr(slotcache.DefaultHardStale), help: "a tier older than this is no longer answered (Cloud9 is asked); at most SLOT_CACHE_TTL", apply: duration(func(c *Config) *time.Duration { return &c.SlotCache.HardStale })},
	{name: "SLOT_CACHE_REFRESH_SCHEDULE", def: DefaultSlotCacheSchedule, help: "cron spec (seconds field, CRON_TZ= allowed) of the tier refresh, which runs once per tick across instances: the business hours", apply: func(c *Config, v string) error {
		if err := scheduler.ValidateSpec(v); err != nil {
			return err
		}
		c.SlotCache.Schedule = v
		return nil
	}},
	{name: "SLOT_CACHE_READ_LIMIT", def: "5/min", help: "GetOnlineReservations calls per period the refresh may make across every instance (shared limiter); every tier's turn, and its read, must fit the refresh's 4 min lease", apply: func(c *Config, v string) error {
		r, err := ParseRate(v)
		c.SlotCache.ReadLimit = r
		return err
	}},
	{name: "SLOT_CACHE_HEALTH_FAILURES", def: itoa(slotcache.DefaultHealthFailures), help: "consecutive refresh failures of a tier that make cache-health unhealthy (503)", apply: integer(func(c *Config) *int { return &c.SlotCache.HealthFailures }, 1, 1000)},
	{name: "OPS_KEY_PREFIXES", def: strings.Join(ops.DefaultPrefixes, ","), help: "comma-separated key prefixes redisGet / redisSet / redisDelete may touch; flowgate's own state, its caches' contents and its secrets stay refused whatever they open (docs/keyspace.md)", apply: prefixes(func(c *Config) *[]string { return &c.SlotCache.OpsKeyPrefixes })},
	{name: "OPS_READ_KEY_PREFIXES", def: strings.Join(ops.DefaultReadPrefixes, ","), help: "comma-separated further key prefixes redisGet alone may read (the booking flow's own SlotReservation:* keys by default); set to - for none", apply: prefixes(func(c *Config) *[]string { return &c.SlotCache.OpsReadPrefixes })},
}

func tierDays(c *Config, v string) error {
	var out []int
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 196 {
			return fmt.Errorf("want comma-separated day counts 1..196, got %q", p)
		}
		out = append(out, n)
	}
	if len(out) > 9 {
		return fmt.Errorf("at most 9 tiers, got %d", len(out))
	}
	c.SlotCache.TierDays = out
	return nil
}

// validateSlotCache checks what one variable cannot tell alone.
func (c *Config) validateSlotCache(p *problems) {
	s, b := c.SlotCache, c.Booking
	if s.Stale <= b.SlotFresh {
		p.addf("SLOT_CACHE_STALE", "must exceed SLOT_CACHE_FRESH")
	}
	if s.HardStale < s.Stale {
		p.addf("SLOT_CACHE_HARD_STALE", "must not be below SLOT_CACHE_STALE")
	} else if s.HardStale > b.SlotCacheTTL {
		p.addf("SLOT_CACHE_HARD_STALE", "must not exceed SLOT_CACHE_TTL (a tier is gone after it)")
	}
	if s.MaxStale < b.SlotFresh || s.MaxStale > s.HardStale {
		p.addf("SLOT_CACHE_MAX_STALE", "must be within SLOT_CACHE_FRESH..SLOT_CACHE_HARD_STALE")
	}
	// The refresh's tiers take their read turns in one run under the
	// refresh lease: past the read limit's N per period, each N more wait a
	// period; the last tier's read must still fit.
	if n := len(s.TierDays); n > 0 && s.ReadLimit.N > 0 {
		waits := time.Duration((n-1)/s.ReadLimit.N) * s.ReadLimit.Per
		if waits+b.ReadTimeout > slotcache.DefaultLeaseTTL {
			p.addf("SLOT_CACHE_READ_LIMIT", "too low for %d tiers: a refresh would wait %s for read turns, and with CLOUD9_READ_TIMEOUT (%s) pass its %s lease",
				n, waits, b.ReadTimeout, slotcache.DefaultLeaseTTL)
		}
	}
	if err := s.Search.Validate(); err != nil {
		p.addf("SLOT_SEARCH_BUDGET", "%v", err)
	}
	if s.OutageHold <= 0 {
		p.addf("SLOT_SEARCH_OUTAGE_HOLD", "must be positive")
	}
	if len(s.OpsKeyPrefixes) == 0 {
		p.addf("OPS_KEY_PREFIXES", "name at least one prefix (an empty prefix would open every key)")
	}
}

// prefixes reads a comma-separated list of key prefixes; "-" is the empty
// list.
func prefixes(dst func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		out := []string{}
		if strings.TrimSpace(v) != "-" {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		*dst(c) = out
		return nil
	}
}
