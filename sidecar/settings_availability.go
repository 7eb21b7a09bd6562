package main

import (
	"strconv"
	"time"

	"github.com/flowgate/flowgate/orchestrator/holds/availability"
)

// AvailabilityConfig holds the settings of the web face's catalogue
// (appointment types, timeslots, admin endpoints).
type AvailabilityConfig struct {
	// ScheduleFile is HOLDS_SCHEDULE_FILE; Schedule and ScheduleHash its
	// content, loaded and validated when the configuration is read. Unset:
	// the Cloud9 source (the configured Cloud9 or the simulator).
	ScheduleFile string
	Schedule     availability.Schedule
	ScheduleHash string
	TimeZone     *time.Location // of Cloud9's wall clocks
	CacheTTL     time.Duration
	MaxDays      int
}

// availabilitySettings are the catalogue's variables.
var availabilitySettings = []setting{
	{name: "HOLDS_SCHEDULE_FILE", help: "schedule file (JSON: time zone, appointment types, specialists with priority and weekly hours, overrides) of the /v1 catalogue; unset: Cloud9's open slots (chairs as specialists)", apply: func(c *Config, v string) error {
		s, hash, err := availability.LoadScheduleFile(v)
		if err != nil {
			return err
		}
		c.Availability.ScheduleFile, c.Availability.Schedule, c.Availability.ScheduleHash = v, s, hash
		return nil
	}},
	{name: "TIMESLOTS_CACHE_TTL_SECONDS", def: strconv.Itoa(int(availability.DefaultCacheTTL / time.Second)), help: "lifetime of a cached timeslots:{appointmentTypeId}:{specialistId|pooled} entry (as the original web holds service)", apply: func(c *Config, v string) error {
		var n int
		if err := integer(func(*Config) *int { return &n }, 1, 86400)(c, v); err != nil {
			return err
		}
		c.Availability.CacheTTL = time.Duration(n) * time.Second
		return nil
	}},
	{name: "HOLDS_TIMESLOTS_MAX_DAYS", def: strconv.Itoa(availability.DefaultMaxDays), help: "most days one timeslots request may ask for; dates up to this far from today are cached", apply: integer(func(c *Config) *int { return &c.Availability.MaxDays }, 1, 366)},
}
