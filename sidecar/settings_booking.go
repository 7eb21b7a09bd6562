package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// BookingConfig holds the booking path's settings (docs/booking.md);
// defaults are the original flow's (docs/reference/nodered-endpoints.md §5).
type BookingConfig struct {
	SpacingMS      int
	UncertainGrace time.Duration
	LimitMargin    time.Duration
	WriteTimeout   time.Duration
	NoteTimeout    time.Duration
	ReadTimeout    time.Duration
	AuthMode       string
	SyncBudget     time.Duration
	InCallWait     time.Duration
	RedisTimeout   time.Duration
	SyncRetryDelay time.Duration
	SyncAttempts   int
	MaxAttempts    int
	BackoffBase    time.Duration
	BackoffMax     time.Duration
	Retention      time.Duration
	SessionTTL     time.Duration
	ReserveTTL     time.Duration
	BookedTTL      time.Duration
	SlotFresh      time.Duration
	SlotCacheTTL   time.Duration
	EventsWebhook  string
	LocationGUID   string
	ProviderGUID   string
	ScheduleView   string
	ScheduleColumn string
	// SlotColumns are CLOUD9_SLOT_COLUMNS' chairs; nil: ScheduleColumn
	// only; SlotColumnsAll: every chair.
	SlotColumns     []string
	SlotColumnsAll  bool
	PatientModel    string
	AppointmentType string
	SimScale        float64
	SimWriteLimit   Rate
	SimWindow       cloud9sim.Window
	// WriteLimiter is CLOUD9_WRITE_LIMITER: LimiterWindow or LimiterSpacing.
	WriteLimiter string
	// DayHalfFormat is CLOUD9_MORNING_AFTERNOON_FORMAT: cloud9.DayHalfBool
	// or cloud9.DayHalfBit.
	DayHalfFormat string
	// CommentReserve is CLOUD9_COMMENT_RESERVE.
	CommentReserve int
}

// The Cloud9 write limiters CLOUD9_WRITE_LIMITER picks.
const (
	LimiterWindow  = "window"  // cloud9.WindowLimiter: N in any Per + margin
	LimiterSpacing = "spacing" // cloud9.RedisLimiter: one per Per/N + margin
)

func bookingDuration(dst func(*BookingConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.Booking) })
}

func bookingInt(dst func(*BookingConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.Booking) }, min, max)
}

func bookingGUID(dst func(*BookingConfig) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if !guidRE.MatchString(v) {
			return fmt.Errorf("want a GUID, got %q", v)
		}
		*dst(&c.Booking) = v
		return nil
	}
}

// bookingSettings are the booking path's variables (listed after the core ones).
var bookingSettings = []setting{
	{name: "BOOKING_SPACING_MS", help: "minimum spacing between Cloud9 writes in ms (the original Node-RED flow: 10000); when set it replaces CLOUD9_WRITE_LIMIT", apply: bookingInt(func(b *BookingConfig) *int { return &b.SpacingMS }, 1, 3600000)},
	{name: "CLOUD9_LIMIT_MARGIN", def: durStr(cloud9.DefaultMargin), help: "added to each Cloud9 write window (or interval, with spacing) against network jitter", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.LimitMargin })},
	{name: "CLOUD9_WRITE_LIMITER", def: LimiterWindow, help: "window: at most N writes per procedure in any Per + margin, so a family's writes go through at once; spacing: one every Per/N + margin", apply: func(c *Config, v string) error {
		switch v {
		case LimiterWindow, LimiterSpacing:
			c.Booking.WriteLimiter = v
			return nil
		}
		return fmt.Errorf("want %s or %s, got %q", LimiterWindow, LimiterSpacing, v)
	}},
	{name: "CLOUD9_WRITE_TIMEOUT", def: durStr(cloud9.DefaultWriteTimeout), help: "timeout of a Cloud9 write (SetAppointment, SetPatient)", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.WriteTimeout })},
	{name: "CLOUD9_NOTE_TIMEOUT", def: durStr(cloud9.DefaultNoteTimeout), help: "timeout of SetPatientComment", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.NoteTimeout })},
	{name: "CLOUD9_READ_TIMEOUT", def: durStr(cloud9.DefaultReadTimeout), help: "timeout of a Cloud9 read", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.ReadTimeout })},
	{name: "CLOUD9_COMMENT_RESERVE", def: itoa(cloud9.DefaultCommentReserve), help: "places of the SetPatientComment write window kept for comments a caller's answer waits on (editInsurance): booking notes and bookConsultation's comments take a place only while more than this many are free (window limiter only; 0: no reserve)", apply: bookingInt(func(b *BookingConfig) *int { return &b.CommentReserve }, 0, 1000)},
	{name: "CLOUD9_MORNING_AFTERNOON_FORMAT", def: cloud9.DayHalfBool, help: "how slot searches send GetOnlineReservations' morning/afternoon: bool (True/False, what the production flow has always sent) or bit (1/0, the vendor guide's form)", apply: oneOf(func(c *Config) *string { return &c.Booking.DayHalfFormat }, cloud9.DayHalfBool, cloud9.DayHalfBit)},
	{name: "CLOUD9_LOCATION_GUID", def: booking.DefaultLocationGUID, help: "the practice location (slots of other locations are left out)", apply: bookingGUID(func(b *BookingConfig) *string { return &b.LocationGUID })},
	{name: "CLOUD9_PROVIDER_GUID", help: "providerGUID of new patients; required with a real Cloud9 (the simulator's orthodontist otherwise)", apply: bookingGUID(func(b *BookingConfig) *string { return &b.ProviderGUID })},
	{name: "CLOUD9_SCHEDULE_VIEW_GUID", def: booking.DefaultScheduleViewGUID, help: "default schedule view of createAppt", apply: bookingGUID(func(b *BookingConfig) *string { return &b.ScheduleView })},
	{name: "CLOUD9_SCHEDULE_COLUMN_GUID", def: booking.DefaultScheduleColumnGUID, help: "default chair: when a request names none, and createAppt's fallback when it names a chair that is not one of CLOUD9_SLOT_COLUMNS' (the original booked Chair 8 whatever was sent)", apply: bookingGUID(func(b *BookingConfig) *string { return &b.ScheduleColumn })},
	{name: "CLOUD9_SLOT_COLUMNS", help: "chairs whose open slots getApptSlots / getGroupedApptSlots offer: unset = CLOUD9_SCHEDULE_COLUMN_GUID only (as the original), all, or comma-separated column GUIDs; they are also the chairs createAppt books (another column is booked on CLOUD9_SCHEDULE_COLUMN_GUID; bookConsultation honours the column as the original)", apply: slotColumns},
	{name: "CLOUD9_APPOINTMENT_TYPE_GUID", def: booking.DefaultAppointmentTypeGUID, help: "default appointment type", apply: bookingGUID(func(b *BookingConfig) *string { return &b.AppointmentType })},
	{name: "BOOKING_AUTH_MODE", def: booking.AuthModeSession, help: "createAppt (and /v1 Cloud9 /book) authorization: token, session (token or matching session cache) or legacy (any well-formed GUID; warned at start)", apply: oneOf(func(c *Config) *string { return &c.Booking.AuthMode }, "token", "session", "legacy")},
	{name: "BOOKING_PATIENT_MODEL", def: booking.DefaultPatientModel, help: "createPatient's guidance: parent (the original Node-RED flow: the parent is the patient, children are booked with its GUID and a note) or individual (the original's current guidance: each child is created as its own patient)", apply: oneOf(func(c *Config) *string { return &c.Booking.PatientModel }, booking.PatientModelParent, booking.PatientModelIndividual)},
	{name: "BOOKING_SYNC_BUDGET", def: durStr(booking.DefaultSyncBudget), help: "how long createAppt may wait (limiter + one retry) before answering queued; also bounds the Redis work of createAppt, createPatient and queue-status (answered within it + 0.2 s when Redis hangs)", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.SyncBudget })},
	{name: "BOOKING_INCALL_WAIT", def: durStr(booking.DefaultInCallWait), help: "how long a booking call (createAppt, its children[], bookConsultation) waits in the call for the shared Cloud9 write window to admit it before it is queued (the original confirmed about 15 s after one code 8); the call's budget is the larger of this and BOOKING_SYNC_BUDGET", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.InCallWait })},
	{name: "BOOKING_REDIS_TIMEOUT", def: durStr(booking.DefaultRedisTimeout), help: "bound of each Redis step of getApptSlots / getGroupedApptSlots (slot cache, reservation filter), which fail open past it; createAppt, createPatient and queue-status are bounded by BOOKING_SYNC_BUDGET (+0.2 s) instead", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.RedisTimeout })},
	{name: "BOOKING_SYNC_RETRY_DELAY", def: durStr(booking.DefaultSyncRetryDelay), help: "wait before the second sync attempt after a rate-limit answer", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.SyncRetryDelay })},
	{name: "BOOKING_SYNC_ATTEMPTS", def: itoa(booking.DefaultSyncAttempts), help: "sync SetAppointment attempts", apply: bookingInt(func(b *BookingConfig) *int { return &b.SyncAttempts }, 1, 10)},
	{name: "BOOKING_UNCERTAIN_GRACE", def: durStr(booking.DefaultLeaseGrace), help: "after an uncertain SetAppointment (timeout, dropped answer) no other attempt of that booking runs for this long, so a late commit lands before anyone checks Cloud9", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.UncertainGrace })},
	{name: "BOOKING_MAX_ATTEMPTS", def: itoa(booking.DefaultAsyncMaxAttempts), help: "attempts of a queued booking before it is failed and dead-lettered", apply: bookingInt(func(b *BookingConfig) *int { return &b.MaxAttempts }, 1, 100)},
	{name: "BOOKING_BACKOFF_BASE", def: durStr(booking.DefaultBackoffBase), help: "queued-booking backoff base: min(BOOKING_BACKOFF_MAX, base·2^n)", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.BackoffBase })},
	{name: "BOOKING_BACKOFF_MAX", def: durStr(booking.DefaultBackoffMax), help: "queued-booking backoff cap", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.BackoffMax })},
	{name: "BOOKING_COMPLETED_RETENTION", def: durStr(booking.DefaultCompletedRetention), help: "how long completed operations stay in queue-status and Asynqmon", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.Retention })},
	{name: "BOOKING_SESSION_TTL", def: durStr(booking.DefaultSessionTTL), help: "bookingSessions cache and bookingAuthToken lifetime", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.SessionTTL })},
	{name: "SLOT_RESERVATION_TTL", def: durStr(reservation.DefaultReserveTTL), help: "SlotReservation hold while a booking is made; at least the longest booking call, max(BOOKING_SYNC_BUDGET, BOOKING_INCALL_WAIT) + CLOUD9_WRITE_TIMEOUT, + 5 s", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.ReserveTTL })},
	{name: "SLOT_RESERVATION_BOOKED_TTL", def: durStr(reservation.DefaultConfirmTTL), help: "SlotReservation hold after a successful booking, and kept at each run of a queued booking: at its default raised to the booking task's timeout + BOOKING_BACKOFF_MAX + 1 min, so it outlasts the gap between two retries (a shorter value set is warned at start)", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.BookedTTL })},
	{name: "SLOT_CACHE_FRESH", def: durStr(slotcache.DefaultFresh), help: "a cached slot list younger than this is answered without asking Cloud9", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.SlotFresh })},
	{name: "SLOT_CACHE_TTL", def: durStr(slots.DefaultCacheTTL), help: "how long a slot list (and the bookingTokens of its slots) stays usable", apply: bookingDuration(func(b *BookingConfig) *time.Duration { return &b.SlotCacheTTL })},
	{name: "BOOKING_EVENTS_WEBHOOK", help: "URL that receives a POST signed with OUTBOUND_HMAC_SECRET when a queued booking completes or fails for good (redirects are not followed)", apply: func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http(s) URL, got %q", v)
		}
		c.Booking.EventsWebhook = v
		return nil
	}},
	{name: "CLOUD9_SIM_SCALE", def: strconv.FormatFloat(cloud9sim.DefaultScale, 'g', -1, 64), help: "embedded simulator only: simulated seconds per real second (60 makes 5/min five per second)", apply: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 100000 {
			return fmt.Errorf("want a positive number up to 100000, got %q", v)
		}
		c.Booking.SimScale = f
		return nil
	}},
	{name: "CLOUD9_SIM_WRITE_LIMIT", def: cloud9sim.DefaultWriteLimit().String(), help: "embedded simulator only: writes per procedure it accepts before answering code 8, in simulated time", apply: func(c *Config, v string) error {
		r, err := ParseRate(v)
		c.Booking.SimWriteLimit = r
		return err
	}},
	{name: "CLOUD9_SIM_WINDOW", def: string(cloud9sim.WindowSliding), help: "embedded simulator only: how it counts its write limit, sliding (N in any Per) or fixed (N per clock minute for 5/min)", apply: func(c *Config, v string) error {
		w, err := cloud9sim.ParseWindow(v)
		c.Booking.SimWindow = w
		return err
	}},
}

// slotColumns reads CLOUD9_SLOT_COLUMNS: "all" or GUIDs.
func slotColumns(c *Config, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "all") {
		c.Booking.SlotColumns, c.Booking.SlotColumnsAll = nil, true
		return nil
	}
	var cols []string
	for _, g := range strings.Split(v, ",") {
		g = strings.TrimSpace(g)
		if !guidRE.MatchString(g) {
			return fmt.Errorf("want all or comma-separated GUIDs, got %q", g)
		}
		cols = append(cols, g)
	}
	c.Booking.SlotColumns, c.Booking.SlotColumnsAll = cols, false
	return nil
}

// offeredColumns are the chairs whose slots are offered; nil: all.
func (b BookingConfig) offeredColumns() []string {
	switch {
	case b.SlotColumnsAll:
		return nil
	case len(b.SlotColumns) > 0:
		return b.SlotColumns
	}
	return []string{b.ScheduleColumn}
}

// reserveMargin is what a SlotReservation must outlast a booking call by:
// the call's Redis steps around the write.
const reserveMargin = 5 * time.Second

// callBound is the longest a booking call may run: its write turn's wait
// (the call's budget) and the write.
func (b BookingConfig) callBound() time.Duration {
	return max(b.SyncBudget, b.InCallWait) + b.WriteTimeout
}

// bookingRequestTimeout is the booking endpoints' deadline: the longest
// call and its Redis steps, and at least bookinghttp's default.
func (b BookingConfig) bookingRequestTimeout() time.Duration {
	return max(bookinghttp.DefaultRequestTimeout, b.callBound()+reserveMargin)
}

// validateBooking checks what one variable cannot tell alone.
func (c *Config) validateBooking(p *problems) {
	b := c.Booking
	p.positive(namedDuration{"CLOUD9_WRITE_TIMEOUT", b.WriteTimeout}, namedDuration{"CLOUD9_NOTE_TIMEOUT", b.NoteTimeout},
		namedDuration{"CLOUD9_READ_TIMEOUT", b.ReadTimeout}, namedDuration{"BOOKING_SYNC_BUDGET", b.SyncBudget}, namedDuration{"BOOKING_INCALL_WAIT", b.InCallWait},
		namedDuration{"BOOKING_REDIS_TIMEOUT", b.RedisTimeout}, namedDuration{"BOOKING_BACKOFF_BASE", b.BackoffBase},
		namedDuration{"BOOKING_BACKOFF_MAX", b.BackoffMax}, namedDuration{"BOOKING_SESSION_TTL", b.SessionTTL},
		namedDuration{"SLOT_RESERVATION_TTL", b.ReserveTTL}, namedDuration{"SLOT_RESERVATION_BOOKED_TTL", b.BookedTTL},
		namedDuration{"SLOT_CACHE_FRESH", b.SlotFresh}, namedDuration{"SLOT_CACHE_TTL", b.SlotCacheTTL},
		namedDuration{"BOOKING_UNCERTAIN_GRACE", b.UncertainGrace})
	if b.BackoffMax < b.BackoffBase {
		p.addf("BOOKING_BACKOFF_MAX", "must not be below BOOKING_BACKOFF_BASE")
	}
	if b.SlotCacheTTL < b.SlotFresh {
		p.addf("SLOT_CACHE_TTL", "must not be below SLOT_CACHE_FRESH")
	}
	// A booking call waits for its write turn up to the call's budget,
	// then writes for up to CLOUD9_WRITE_TIMEOUT (b.callBound): what must
	// outlast it does.
	call := b.callBound()
	if b.WriteTimeout > 0 && c.HTTPDrain < call {
		p.addf("HTTP_SHUTDOWN_TIMEOUT", "must cover a booking call under way, max(BOOKING_SYNC_BUDGET, BOOKING_INCALL_WAIT) + CLOUD9_WRITE_TIMEOUT = %s, got %s",
			call, c.HTTPDrain)
	}
	if b.WriteTimeout > 0 && b.ReserveTTL > 0 && b.ReserveTTL < call+reserveMargin {
		p.addf("SLOT_RESERVATION_TTL", "must outlast a booking call, max(BOOKING_SYNC_BUDGET, BOOKING_INCALL_WAIT) + CLOUD9_WRITE_TIMEOUT + %s = %s, got %s (the slot would be free while its write is in flight)",
			reserveMargin, call+reserveMargin, b.ReserveTTL)
	}
	if c.Cloud9Endpoint != "" && b.ProviderGUID == "" {
		p.addf("CLOUD9_PROVIDER_GUID", "required with a real Cloud9 (CLOUD9_ENDPOINT)")
	}
	if c.Cloud9Endpoint != "" && c.Cloud9VendorUsername == "" {
		p.addf("CLOUD9_VENDOR_USERNAME", "required with a real Cloud9 (SetAppointment and SetPatient send it)")
	}
}
