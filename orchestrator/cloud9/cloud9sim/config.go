package cloud9sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// The defaults: the location, schedule view, chair and appointment type are
// the ones the Node-RED flows hard-code (docs/reference/nodered-endpoints.md); the rest are
// fixed GUIDs made up for the simulator.
const (
	DefaultLocationGUID        = cloud9.SeedLocationGUID // CDH Allegheny 202
	DefaultScheduleViewGUID    = cloud9.SeedScheduleViewGUID
	Chair8GUID                 = cloud9.SeedChair8GUID // the flows' "CHAIR 8"
	Chair9GUID                 = "862844c7-98d9-4ff6-8f32-4051ee8b1a3a"
	Chair10GUID                = "55a6410f-6586-469a-af46-591ef99ed191"
	Chair11GUID                = "b45b09ba-5f8c-4363-84fe-b057b32ce709"
	DefaultAppointmentTypeGUID = cloud9.SeedAppointmentTypeGUID         // New Patient Consult, 45 min, online
	AdjustmentTypeGUID         = "2a62428c-867c-422f-91e4-d99850906723" // 30 min, not bookable online
	RetiredTypeGUID            = "b6d98cf6-6151-439c-a37b-471e9b3b2c1c" // deleted; only with showDeleted
	DefaultAppointmentClass    = "a6ddfde8-91d5-4c2b-9249-9a7fd8aff389" // "New Patient"
	DefaultOrthodontistGUID    = "256a8738-e093-4e71-a263-7fa95f7fae4e"
)

// Config configures a Sim. The zero value is usable: every unset field takes
// the default named in its comment.
type Config struct {
	// ClientID, Username and Password are the credentials accepted; an empty
	// one accepts anything, a set one must match (error code 1 otherwise;
	// ClientID compares case-insensitively, like a GUID).
	ClientID, Username, Password string

	// Now is the real clock (default time.Now). The simulator's own clock
	// starts at Now() when New runs and advances Scale times as fast.
	Now func() time.Time
	// Scale is simulated seconds per real second (default 1). With Scale 60
	// a write limit of 5 per minute admits 5 calls per real second, while the
	// slot template stays in calendar days of the simulated clock.
	Scale float64
	// TimeZone is the location's zone: slot times on the wire are local
	// times without offset, as in Cloud9 (default America/New_York, or a
	// fixed UTC-5 "EST" where the zone database is missing).
	TimeZone *time.Location

	// WriteLimit is the per-procedure limit of the write procedures (Set…)
	// in simulated time (default 5 per minute; N < 0 disables it). ReadLimit
	// is the same for the read procedures (default none). Limits overrides
	// either for the procedures it names.
	WriteLimit, ReadLimit Rate
	Limits                map[string]Rate
	// Window is how the limits count (default WindowSliding): Cloud9 does
	// not publish its algorithm, and a client must stay under both.
	Window Window
	// RecordRequests keeps every well-formed request (Requests,
	// TakeRequests): the test that holds flowgate's XML against the
	// original's reads them. Off by default: the embedded simulator of a
	// long run must not grow.
	RecordRequests bool

	// Location, ScheduleView, Chairs (schedule columns), Orthodontist and
	// AppointmentTypes describe the one practice simulated; defaults are
	// DefaultLocation(), DefaultScheduleView(), DefaultChairs(),
	// DefaultOrthodontist() and DefaultAppointmentTypes().
	Location         Location
	ScheduleView     ScheduleView
	Chairs           []Chair
	Orthodontist     Orthodontist
	AppointmentTypes []AppointmentType

	// Week is the weekly template of open hours per weekday, indexed by
	// time.Weekday (default DefaultWeek(): Monday–Friday 8:00–17:00 and
	// Saturday 8:00–12:30). SlotMinutes is the slot length (default 45) and
	// HorizonDays how many calendar days from the simulated today carry open
	// slots (default 90). Open slots are offered for the first appointment
	// type that allows online scheduling and is not deleted.
	Week        [7]Hours
	SlotMinutes int
	HorizonDays int

	// BlankSlotAppointmentType answers GetOnlineReservations with an empty
	// AppointmentTypeGUID, as the real sandbox was seen to do; the client
	// must then book with the type it searched for.
	BlankSlotAppointmentType bool

	// Gzip compresses every answer without saying so (no Content-Encoding):
	// the client has to decode by content, as docs/reference/cloud9-api.md asks.
	// GzipDeclared also sends Content-Encoding: gzip.
	Gzip, GzipDeclared bool

	// Charset is the charset answers are encoded in (default utf-8): any
	// WHATWG label (golang.org/x/text/encoding/htmlindex), e.g.
	// windows-1252. The XML declaration and Content-Type name it; a
	// character it lacks is written as a character reference.
	Charset string

	// Admin serves the JSON admin endpoints under /_sim/ (state, faults,
	// reset) next to the protocol, for tools that drive a standalone
	// simulator from outside the process.
	Admin bool

	// Seed makes GUIDs and fault draws reproducible for a given call order.
	Seed int64
}

// Window is how a Rate counts calls.
type Window string

// The windows a Sim can count in.
const (
	// WindowSliding admits a call when fewer than N calls were admitted in
	// the Per before it.
	WindowSliding Window = "sliding"
	// WindowFixed admits at most N calls in each window [k·Per, (k+1)·Per)
	// of the simulated clock since the Unix epoch (a per-minute counter
	// reset on the minute): 2N calls can pass within a short span across a
	// window's edge.
	WindowFixed Window = "fixed"
)

// ParseWindow reads "sliding" or "fixed".
func ParseWindow(s string) (Window, error) {
	switch w := Window(s); w {
	case WindowSliding, WindowFixed:
		return w, nil
	}
	return "", fmt.Errorf("window %q: want sliding or fixed", s)
}

// Rate is at most N calls in any window of length Per (a sliding window;
// Config.Window may make it fixed windows).
// N < 0 is no limit; N = 0 with Per > 0 refuses every call.
type Rate struct {
	N   int
	Per time.Duration
}

// Unlimited disables a limit.
var Unlimited = Rate{N: -1}

func (r Rate) unlimited() bool { return r.N < 0 }

func (r Rate) String() string {
	if r.N < 0 {
		return "off"
	}
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", r.N)
	case time.Minute:
		return fmt.Sprintf("%d/min", r.N)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.N)
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// ParseRate reads "5/min", "10/s", "100/h", "3/30s" (any Go duration after
// the slash) or "off" (Unlimited).
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "off", "none", "unlimited":
		return Unlimited, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want N/unit, e.g. 5/min", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 1 {
		return Rate{}, fmt.Errorf("rate %q: N must be a positive integer", s)
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		per, err = time.ParseDuration(unit)
		if err != nil || per <= 0 {
			return Rate{}, fmt.Errorf("rate %q: unit must be s, min, h or a positive duration", s)
		}
	}
	return Rate{N: n, Per: per}, nil
}

// Location is the practice location GetLocations answers.
type Location struct {
	GUID, Name, Code                 string
	Address, City, State, PostalCode string
}

// ScheduleView is the one schedule view (a grouping of chairs).
type ScheduleView struct{ GUID, Description string }

// Chair is a schedule column.
type Chair struct{ GUID, Description string }

// Orthodontist is the provider GetPatientInformation names.
type Orthodontist struct{ GUID, Name string }

// AppointmentType is a row of GetAppointmentTypes.
type AppointmentType struct {
	GUID, Description           string
	Minutes                     int
	AllowOnline, Deleted        bool
	ClassGUID, ClassDescription string
}

// Hours is one day's open hours as offsets from local midnight; Close <=
// Open means closed.
type Hours struct{ Open, Close time.Duration }

// DefaultLocation is CDH Allegheny 202 (the address is made up).
func DefaultLocation() Location {
	return Location{GUID: DefaultLocationGUID, Name: "CDH Allegheny 202", Code: "ALG202",
		Address: "202 Allegheny Ave", City: "Pittsburgh", State: "PA", PostalCode: "15212"}
}

// DefaultScheduleView is the flows' schedule view.
func DefaultScheduleView() ScheduleView {
	return ScheduleView{GUID: DefaultScheduleViewGUID, Description: "Allegheny Ortho"}
}

// DefaultChairs is chair 8 of the flows and three more.
func DefaultChairs() []Chair {
	return []Chair{
		{Chair8GUID, "Chair 8"}, {Chair9GUID, "Chair 9"},
		{Chair10GUID, "Chair 10"}, {Chair11GUID, "Chair 11"},
	}
}

// DefaultOrthodontist is the made-up provider of the location.
func DefaultOrthodontist() Orthodontist {
	return Orthodontist{GUID: DefaultOrthodontistGUID, Name: "Dr. Dana Sim"}
}

// DefaultAppointmentTypes is New Patient Consult (45 min, online), an
// Adjustment (30 min, not online) and a deleted type.
func DefaultAppointmentTypes() []AppointmentType {
	return []AppointmentType{
		{GUID: DefaultAppointmentTypeGUID, Description: "New Patient Consult", Minutes: 45, AllowOnline: true,
			ClassGUID: DefaultAppointmentClass, ClassDescription: "New Patient"},
		{GUID: AdjustmentTypeGUID, Description: "Adjustment", Minutes: 30,
			ClassGUID: DefaultAppointmentClass, ClassDescription: "New Patient"},
		{GUID: RetiredTypeGUID, Description: "Records (retired)", Minutes: 45, AllowOnline: true, Deleted: true,
			ClassGUID: DefaultAppointmentClass, ClassDescription: "New Patient"},
	}
}

// DefaultWeek is Monday–Friday 8:00–17:00 (twelve 45-minute slots) and
// Saturday 8:00–12:30 (six).
func DefaultWeek() [7]Hours {
	var w [7]Hours
	for d := time.Monday; d <= time.Friday; d++ {
		w[d] = Hours{8 * time.Hour, 17 * time.Hour}
	}
	w[time.Saturday] = Hours{8 * time.Hour, 12*time.Hour + 30*time.Minute}
	return w
}

func defaultTimeZone() *time.Location {
	if loc, err := time.LoadLocation("America/New_York"); err == nil {
		return loc
	}
	return time.FixedZone("EST", -5*3600)
}

// DefaultScale is Config.Scale's default: simulated time runs as fast as
// real time.
const DefaultScale = 1.0

// DefaultWriteLimit is Config.WriteLimit's default: 5 per minute, Cloud9's
// own limit (docs/reference/cloud9-api.md).
func DefaultWriteLimit() Rate { return Rate{N: 5, Per: time.Minute} }

func (c Config) withDefaults() Config {
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Scale = valutil.PositiveOrDefault(c.Scale, DefaultScale)
	c.TimeZone = valutil.ValOrDefaultFunc(c.TimeZone, defaultTimeZone)
	c.WriteLimit = valutil.ValOrDefault(c.WriteLimit, DefaultWriteLimit())
	c.ReadLimit = valutil.ValOrDefault(c.ReadLimit, Unlimited)
	c.Window = valutil.ValOrDefault(c.Window, WindowSliding)
	c.Location = valutil.ValOrDefault(c.Location, DefaultLocation())
	c.ScheduleView = valutil.ValOrDefault(c.ScheduleView, DefaultScheduleView())
	c.Chairs = valutil.SliceOrDefault(c.Chairs, DefaultChairs())
	c.Orthodontist = valutil.ValOrDefault(c.Orthodontist, DefaultOrthodontist())
	c.AppointmentTypes = valutil.SliceOrDefault(c.AppointmentTypes, DefaultAppointmentTypes())
	c.Week = valutil.ValOrDefault(c.Week, DefaultWeek())
	c.SlotMinutes = valutil.PositiveOrDefault(c.SlotMinutes, 45)
	c.HorizonDays = valutil.PositiveOrDefault(c.HorizonDays, 90)
	return c
}

// Validate reports a configuration New would refuse (it panics on one).
func (c Config) Validate() error {
	c = c.withDefaults()
	guids := []struct{ what, g string }{
		{"Location.GUID", c.Location.GUID},
		{"ScheduleView.GUID", c.ScheduleView.GUID},
		{"Orthodontist.GUID", c.Orthodontist.GUID},
	}
	for i, ch := range c.Chairs {
		guids = append(guids, struct{ what, g string }{fmt.Sprintf("Chairs[%d].GUID", i), ch.GUID})
	}
	online := false
	for i, t := range c.AppointmentTypes {
		guids = append(guids, struct{ what, g string }{fmt.Sprintf("AppointmentTypes[%d].GUID", i), t.GUID})
		if t.ClassGUID != "" {
			guids = append(guids, struct{ what, g string }{fmt.Sprintf("AppointmentTypes[%d].ClassGUID", i), t.ClassGUID})
		}
		if t.Minutes <= 0 {
			return fmt.Errorf("cloud9sim: AppointmentTypes[%d].Minutes must be positive", i)
		}
		online = online || (t.AllowOnline && !t.Deleted)
	}
	for _, g := range guids {
		if _, err := uuid.Parse(g.g); err != nil {
			return fmt.Errorf("cloud9sim: %s %q is not a GUID", g.what, g.g)
		}
	}
	if !online {
		return fmt.Errorf("cloud9sim: no appointment type allows online scheduling, so no slot could be offered")
	}
	for d, h := range c.Week {
		if h.Open < 0 || h.Close > 24*time.Hour {
			return fmt.Errorf("cloud9sim: Week[%s] hours out of the day", time.Weekday(d))
		}
	}
	if c.Charset != "" {
		if _, err := htmlindex.Get(c.Charset); err != nil {
			return fmt.Errorf("cloud9sim: Charset %q: %w", c.Charset, err)
		}
	}
	for p, r := range c.Limits {
		if !r.unlimited() && r.Per <= 0 {
			return fmt.Errorf("cloud9sim: Limits[%s] needs Per > 0 (or N < 0 for none)", p)
		}
	}
	for what, r := range map[string]Rate{"WriteLimit": c.WriteLimit, "ReadLimit": c.ReadLimit} {
		if !r.unlimited() && r.Per <= 0 {
			return fmt.Errorf("cloud9sim: %s needs Per > 0 (or N < 0 for none)", what)
		}
	}
	return nil
}
