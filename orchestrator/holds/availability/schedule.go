package availability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // the location's zone works without a system zoneinfo (distroless images)
)

// Schedule is the schedule file (JSON) and the state the admin endpoints
// change: the location's time zone, the appointment types, the
// specialists with their weekly hours, and date overrides.
//
//	{
//	  "timeZone": "America/Chicago",
//	  "appointmentTypes": [{"id": "consult", "name": "Consultation", "durationMinutes": 30,
//	                        "bufferMinutes": 10, "cooldownMinutes": 1440, "specialistIds": ["dr-a"]}],
//	  "specialists": [{"id": "dr-a", "name": "Dr. A", "priority": 10,
//	                   "weeklyHours": {"mon": [{"start": "09:00", "end": "17:00"}]}}],
//	  "overrides": [{"specialistId": "dr-a", "date": "2026-12-24", "hours": []}]
//	}
type Schedule struct {
	TimeZone         string                `json:"timeZone"`
	AppointmentTypes []AppointmentType     `json:"appointmentTypes"`
	Specialists      []ScheduledSpecialist `json:"specialists"`
	Overrides        []Override            `json:"overrides"`
}

// ScheduledSpecialist is a specialist with its weekly hours.
type ScheduledSpecialist struct {
	Specialist
	WeeklyHours WeeklyHours `json:"weeklyHours"`
}

// Override replaces a specialist's weekly hours on one date; no hours
// closes the day.
type Override struct {
	SpecialistID string     `json:"specialistId"`
	Date         string     `json:"date"`
	Hours        []Interval `json:"hours"`
}

// Limits of a schedule.
const (
	maxDurationMinutes = 24 * 60
	maxCooldownMinutes = 366 * 24 * 60
	maxIDLength        = 128
)

// LoadScheduleFile reads and validates a schedule file; the hash names
// its content (the store replaces its copy when the file changes).
func LoadScheduleFile(path string) (s Schedule, hash string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Schedule{}, "", fmt.Errorf("availability: schedule file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // a misspelt key in a hand-written file is a mistake, not an extension
	if err := dec.Decode(&s); err != nil {
		return Schedule{}, "", fmt.Errorf("availability: schedule file %s: %w", path, err)
	}
	s.normalize()
	if err := s.Validate(); err != nil {
		return Schedule{}, "", fmt.Errorf("availability: schedule file %s: %w", path, err)
	}
	sum := sha256.Sum256(raw)
	return s, hex.EncodeToString(sum[:]), nil
}

// normalize fills defaults: the cooldown of a type that names none, empty
// lists instead of null.
func (s *Schedule) normalize() {
	for i := range s.AppointmentTypes {
		if s.AppointmentTypes[i].CooldownMinutes == 0 {
			s.AppointmentTypes[i].CooldownMinutes = DefaultCooldownMinutes
		}
		if s.AppointmentTypes[i].SpecialistIDs == nil {
			s.AppointmentTypes[i].SpecialistIDs = []string{}
		}
	}
	if s.Overrides == nil {
		s.Overrides = []Override{}
	}
}

// Location loads the schedule's time zone.
func (s Schedule) Location() (*time.Location, error) {
	if s.TimeZone == "" {
		return nil, fmt.Errorf("timeZone is required (an IANA name such as America/Chicago)")
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q: %w", s.TimeZone, err)
	}
	return loc, nil
}

// checkID refuses ids that cannot be part of a Redis key or a URL path
// segment safely.
func checkID(what, id string) error {
	if id == "" || len(id) > maxIDLength || strings.ContainsAny(id, "{}:/ ?#%") {
		return fmt.Errorf("%s id %q: want 1–%d characters without braces, ':', '/', spaces, '?', '#' or '%%'", what, id, maxIDLength)
	}
	return nil
}

// Validate checks the whole schedule: the zone, unique ids, lengths, that
// every type's specialists exist, hours and overrides.
func (s Schedule) Validate() error {
	if _, err := s.Location(); err != nil {
		return err
	}
	specs := map[string]bool{}
	for _, sp := range s.Specialists {
		if err := checkID("specialist", sp.ID); err != nil {
			return err
		}
		if specs[sp.ID] {
			return fmt.Errorf("specialist %q is listed twice", sp.ID)
		}
		if sp.ID == PooledScope {
			return fmt.Errorf("specialist id %q is reserved (the cache scope of all specialists)", PooledScope)
		}
		specs[sp.ID] = true
		if err := sp.WeeklyHours.Validate(); err != nil {
			return fmt.Errorf("specialist %q weeklyHours: %w", sp.ID, err)
		}
	}
	types := map[string]bool{}
	for _, t := range s.AppointmentTypes {
		if types[t.ID] {
			return fmt.Errorf("appointment type %q is listed twice", t.ID)
		}
		types[t.ID] = true
		if err := t.validate(specs); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, o := range s.Overrides {
		if err := o.validate(specs); err != nil {
			return err
		}
		k := o.SpecialistID + "|" + o.Date
		if seen[k] {
			return fmt.Errorf("override of %q on %s is listed twice", o.SpecialistID, o.Date)
		}
		seen[k] = true
	}
	return nil
}

func (t AppointmentType) validate(specs map[string]bool) error {
	if err := checkID("appointment type", t.ID); err != nil {
		return err
	}
	switch {
	case t.DurationMinutes < 1 || t.DurationMinutes > maxDurationMinutes:
		return fmt.Errorf("appointment type %q durationMinutes must be between 1 and %d, got %d", t.ID, maxDurationMinutes, t.DurationMinutes)
	case t.BufferMinutes < 0 || t.BufferMinutes > maxDurationMinutes:
		return fmt.Errorf("appointment type %q bufferMinutes must be between 0 and %d, got %d", t.ID, maxDurationMinutes, t.BufferMinutes)
	case t.CooldownMinutes < 0 || t.CooldownMinutes > maxCooldownMinutes:
		return fmt.Errorf("appointment type %q cooldownMinutes must be between 0 and %d, got %d", t.ID, maxCooldownMinutes, t.CooldownMinutes)
	}
	for _, id := range t.SpecialistIDs {
		if !specs[id] {
			return fmt.Errorf("appointment type %q names specialist %q, which does not exist", t.ID, id)
		}
	}
	return nil
}

func (o Override) validate(specs map[string]bool) error {
	if !specs[o.SpecialistID] {
		return fmt.Errorf("override names specialist %q, which does not exist", o.SpecialistID)
	}
	if _, err := ParseDate(o.Date); err != nil {
		return fmt.Errorf("override of %q: date %w", o.SpecialistID, err)
	}
	if _, err := spans(o.Hours); err != nil {
		return fmt.Errorf("override of %q on %s: %w", o.SpecialistID, o.Date, err)
	}
	return nil
}

func (s Schedule) specialistIndex(id string) int {
	return slices.IndexFunc(s.Specialists, func(sp ScheduledSpecialist) bool { return sp.ID == id })
}

// typesServing lists the ids of the types specialistID serves.
func (s Schedule) typesServing(specialistID string) []string {
	var out []string
	for _, t := range s.AppointmentTypes {
		if slices.Contains(t.SpecialistIDs, specialistID) {
			out = append(out, t.ID)
		}
	}
	return out
}

// allTypeIDs lists every type's id.
func (s Schedule) allTypeIDs() []string {
	out := make([]string, len(s.AppointmentTypes))
	for i, t := range s.AppointmentTypes {
		out[i] = t.ID
	}
	return out
}

// hours is the Grid input of the given specialists.
func (s Schedule) hours(ids []string) []SpecialistHours {
	out := make([]SpecialistHours, 0, len(ids))
	for _, id := range ids {
		i := s.specialistIndex(id)
		if i < 0 {
			continue
		}
		h := SpecialistHours{ID: id, Weekly: s.Specialists[i].WeeklyHours, Overrides: map[string][]Interval{}}
		for _, o := range s.Overrides {
			if o.SpecialistID == id {
				h.Overrides[o.Date] = o.Hours
			}
		}
		out = append(out, h)
	}
	return out
}

// clone deep-copies s through JSON (a schedule is small), so a change is
// made on a copy and stored only when valid.
func (s Schedule) clone() Schedule {
	raw, _ := json.Marshal(s)
	var c Schedule
	_ = json.Unmarshal(raw, &c)
	return c
}
