package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/scheduler"
)

// HoldsConfig holds the hold engine's settings (as the original web holds service);
// defaults are the seed's values. The IVA face's 90 s / 300 s are the
// booking path's SLOT_RESERVATION_TTL / SLOT_RESERVATION_BOOKED_TTL.
type HoldsConfig struct {
	HoldTTL        time.Duration
	MaxPerClient   int
	Cooldown       time.Duration
	SweepSpec      string
	TimeZone       *time.Location
	RequestTimeout time.Duration
}

// validateHolds checks the hold engine's and the holds stream's settings
// with their packages' own checks (holds.Config.Check,
// holdstream.Config.Check: what New refuses), so `flowgate check`
// refuses what the server would refuse at start, and refuses a zero the
// packages would replace with their default.
func (c *Config) validateHolds(p *problems) {
	h, s := c.Holds, c.HoldStream
	p.positive(namedDuration{"HOLD_TTL", h.HoldTTL}, namedDuration{"HOLDS_REQUEST_TIMEOUT", h.RequestTimeout},
		namedDuration{"HOLDS_STREAM_PING", s.Ping}, namedDuration{"HOLDS_STREAM_RETRY", s.Retry},
		namedDuration{"HOLDS_STREAM_LEASE_DEFAULT", s.LeaseDefault}, namedDuration{"HOLDS_STREAM_LEASE_MAX", s.LeaseMax},
		namedDuration{"HOLDS_STREAM_WRITE_TIMEOUT", s.WriteTimeout}, namedDuration{"HOLDS_STREAM_MEMORY_CHECK", s.MemoryCheck},
		namedDuration{"HOLDS_STREAM_RELEASE_QUIET", s.ReleaseQuiet})
	if s.ReleaseBurst == 0 {
		p.addf("HOLDS_STREAM_RELEASE_BURST", "must be at least 1, or -1 for never")
	}
	if err := c.holdsConfig().Check(); err != nil {
		p.add("HOLD_TTL", err) // the variable holdsEngine's refusal names
	}
	if err := s.stream().Check(); err != nil {
		p.add("HOLDS_STREAM_LEASE_DEFAULT", err) // the variable holdStreamRoutes' refusal names
	}
}

// holdsConfig is the hold engine's configuration from the settings (the
// sidecar adds its clock and logger).
func (c *Config) holdsConfig() holds.Config {
	h := c.Holds
	return holds.Config{HoldTTL: h.HoldTTL, MaxHolds: h.MaxPerClient, Cooldown: h.Cooldown, Shards: c.RedisShards,
		PlainRedis: c.RedisClientMode == RedisClientPlain}
}

func holdsDuration(dst func(*HoldsConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.Holds) })
}

// DefaultPracticeZone is PRACTICE_TIME_ZONE's default: the zone of the
// embedded Cloud9 simulator (and of the slot cache's business hours).
const DefaultPracticeZone = "America/New_York"

// holdsSettings are the hold engine's variables.
var holdsSettings = []setting{
	{name: "HOLD_TTL", def: durStr(holds.DefaultHoldTTL), help: "a web hold's life, renewed by each heartbeat (as the original web holds service)", apply: holdsDuration(func(h *HoldsConfig) *time.Duration { return &h.HoldTTL })},
	{name: "HOLDS_MAX_PER_CLIENT", def: itoa(holds.DefaultMaxHolds), help: "live web holds one clientId may have at once (exact, checked in the claim script)", apply: integer(func(c *Config) *int { return &c.Holds.MaxPerClient }, 1, 1000)},
	{name: "HOLDS_COOLDOWN_MINUTES", def: itoa(int(holds.DefaultCooldown / time.Minute)), help: "cooldown after a booking for appointment types that set none (as the original web holds service)", apply: func(c *Config, v string) error {
		var n int
		if err := integer(func(*Config) *int { return &n }, 1, 525600)(c, v); err != nil {
			return err
		}
		c.Holds.Cooldown = time.Duration(n) * time.Minute
		return nil
	}},
	{name: "HOLDS_EXPIRY_SCHEDULE", def: "@every 1s", help: "how often expired holds are announced as release events (once per tick across instances)", apply: func(c *Config, v string) error {
		if err := scheduler.ValidateSpec(v); err != nil {
			return err
		}
		c.Holds.SweepSpec = v
		return nil
	}},
	{name: "PRACTICE_TIME_ZONE", def: DefaultPracticeZone, help: "IANA zone of the practice's wall clock: Cloud9 sends slot times without offset; they are read in it by the hold engine's IVA face, the /v1 Cloud9 catalogue and cancelAppt; tomorrow (where the slot cache's tiers and a missing or past getApptSlots startDate begin) is the day after today in it (one zone for all)", apply: func(c *Config, v string) error {
		loc, err := time.LoadLocation(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want an IANA zone such as America/New_York, got %q", v)
		}
		c.Holds.TimeZone, c.Availability.TimeZone, c.Family.PracticeZone = loc, loc, loc
		return nil
	}},
	{name: "HOLDS_REQUEST_TIMEOUT", def: durStr(holdshttp.DefaultRequestTimeout), help: "bound on each /v1/holds request's Redis work (then 503); a Cloud9 catalogue's read in a create or book has BOOKING_SYNC_BUDGET", apply: holdsDuration(func(h *HoldsConfig) *time.Duration { return &h.RequestTimeout })},
}
