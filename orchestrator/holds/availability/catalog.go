package availability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// DefaultMaxDays is the longest timeslot window one request may ask for,
// and the window a cached entry covers from today.
const DefaultMaxDays = 90

// CatalogConfig configures a Catalog. Source and Store are required.
type CatalogConfig struct {
	Source Source
	Store  *Store
	// MaxDays bounds a request's days and is the cached window. Default
	// DefaultMaxDays.
	MaxDays int
	Now     func() time.Time
	Logger  *slog.Logger
}

// Catalog answers the appointment types, their timeslots (cached), the
// candidates of a slot and booking records, from one Source and the Store.
type Catalog struct {
	cfg CatalogConfig
}

// NewCatalog checks cfg and returns a Catalog.
func NewCatalog(cfg CatalogConfig) (*Catalog, error) {
	if cfg.Source == nil || cfg.Store == nil {
		return nil, errors.New("availability: a Catalog needs a Source and a Store")
	}
	cfg.MaxDays = valutil.ValOrDefault(cfg.MaxDays, DefaultMaxDays)
	if cfg.MaxDays < 1 || cfg.MaxDays > 366 {
		return nil, fmt.Errorf("availability: MaxDays must be between 1 and 366, got %d", cfg.MaxDays)
	}
	cfg.Now = valutil.FuncOrDefault(cfg.Now, time.Now)
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	return &Catalog{cfg: cfg}, nil
}

// MaxDays is the configured request limit.
func (c *Catalog) MaxDays() int { return c.cfg.MaxDays }

// Store is the catalog's store.
func (c *Catalog) Store() *Store { return c.cfg.Store }

// Editable reports whether the admin endpoints apply (the schedule-file
// source; Cloud9's schedule is Cloud9's).
func (c *Catalog) Editable() bool {
	_, ok := c.cfg.Source.(ScheduleSource)
	return ok
}

// Snapshot is the source's current view.
func (c *Catalog) Snapshot(ctx context.Context) (Snapshot, error) { return c.cfg.Source.Snapshot(ctx) }

// AppointmentTypes lists the appointment types.
func (c *Catalog) AppointmentTypes(ctx context.Context) ([]AppointmentType, error) {
	snap, err := c.cfg.Source.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Types, nil
}

// AppointmentType returns one type; ErrNotFound (404) when unknown.
func (c *Catalog) AppointmentType(ctx context.Context, id string) (AppointmentType, error) {
	snap, err := c.cfg.Source.Snapshot(ctx)
	if err != nil {
		return AppointmentType{}, err
	}
	t, ok := snap.Type(id)
	if !ok {
		return AppointmentType{}, notFound("availability.AppointmentType", "no appointment type %q", id)
	}
	return t, nil
}

// TimeslotQuery asks for a type's timeslots on Days dates from From.
type TimeslotQuery struct {
	AppointmentTypeID string
	From              time.Time // calendar date (midnight UTC); zero: today in the location
	Days              int       // 1..MaxDays
	SpecialistID      string    // empty: every specialist of the type (pooled)
}

// Timeslots is the answer: the type, the location's zone, the window, the
// specialists and the slots (not yet filtered by holds).
type Timeslots struct {
	Type        AppointmentType
	TimeZone    string
	From        time.Time
	Days        int
	Specialists []Specialist
	Slots       []Timeslot
	Cached      bool // answered from the timeslot cache
}

// Timeslots answers q: from the cache when it covers the window, else
// computed (and cached when the window lies within MaxDays from today).
// Slots that already started are left out.
func (c *Catalog) Timeslots(ctx context.Context, q TimeslotQuery) (Timeslots, error) {
	const op = "availability.Timeslots"
	if q.Days < 1 || q.Days > c.cfg.MaxDays {
		return Timeslots{}, invalidField(op, "days", "days must be between 1 and %d, got %d", c.cfg.MaxDays, q.Days)
	}
	snap, err := c.cfg.Source.Snapshot(ctx)
	if err != nil {
		return Timeslots{}, err
	}
	t, ok := snap.Type(q.AppointmentTypeID)
	if !ok {
		return Timeslots{}, notFound(op, "no appointment type %q", q.AppointmentTypeID)
	}
	specs := snap.SpecialistsOf(t, q.SpecialistID)
	if q.SpecialistID != "" && len(specs) == 0 {
		return Timeslots{}, notFound(op, "no specialist %q for appointment type %q", q.SpecialistID, t.ID)
	}
	now := c.cfg.Now()
	today := DateIn(now, snap.Loc)
	if q.From.IsZero() {
		q.From = today
	}
	out := Timeslots{Type: t, TimeZone: snap.Loc.String(), From: q.From, Days: q.Days, Specialists: specs}
	if out.Specialists == nil {
		out.Specialists = []Specialist{}
	}
	list, cached, err := c.window(ctx, snap, t, q, today)
	if err != nil {
		return Timeslots{}, err
	}
	out.Cached = cached
	lo, hi := slots.WallInstant(snap.Loc, q.From, 0), slots.WallInstant(snap.Loc, q.From.AddDate(0, 0, q.Days), 0)
	out.Slots = make([]Timeslot, 0, len(list))
	for _, s := range list {
		if !s.SlotStartDate.Before(lo) && s.SlotStartDate.Before(hi) && !s.SlotStartDate.Before(now) {
			out.Slots = append(out.Slots, s)
		}
	}
	return out, nil
}

// window returns the slots of q's dates: from the cache, per date, when
// they lie within MaxDays from today (the dates missing computed in one go
// and cached), else computed for q alone.
func (c *Catalog) window(ctx context.Context, snap Snapshot, t AppointmentType, q TimeslotQuery, today time.Time) ([]Timeslot, bool, error) {
	scope := PooledScope
	if q.SpecialistID != "" {
		scope = q.SpecialistID
	}
	if q.From.Before(today) || q.From.AddDate(0, 0, q.Days).After(today.AddDate(0, 0, c.cfg.MaxDays)) {
		slots, err := c.compute(ctx, snap, t, scope, q.From, q.Days)
		return slots, false, err
	}
	dates := make([]string, q.Days)
	for i := range dates {
		dates[i] = q.From.AddDate(0, 0, i).Format(DateLayout)
	}
	fields, gen, err := c.cfg.Store.cachedDays(ctx, t.ID, scope, dates)
	if err != nil {
		return nil, false, err
	}
	days, first, last := decodeDays(fields)
	if first < 0 {
		return slices.Concat(days...), true, nil
	}
	fresh, err := c.compute(ctx, snap, t, scope, q.From.AddDate(0, 0, first), last-first+1)
	if err != nil {
		return nil, false, err
	}
	c.fill(ctx, snap.Loc, t.ID, scope, gen, fresh, dates[first:last+1])
	return slices.Concat(slices.Concat(days[:first]...), fresh, slices.Concat(days[last+1:]...)), false, nil
}

// decodeDays decodes the cached fields; first and last are the indexes of
// the first and last date not cached (or unreadable), -1 when all are.
func decodeDays(fields []any) (days [][]Timeslot, first, last int) {
	first, last = -1, -1
	days = make([][]Timeslot, len(fields))
	for i, f := range fields {
		if v, ok := f.(string); ok {
			var err error
			if days[i], err = decodeDay(nil, v); err == nil {
				continue
			}
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	return days, first, last
}

// fill caches computed slots per date (every date of dates, an empty one
// too); a failure is logged, the answer stands.
func (c *Catalog) fill(ctx context.Context, loc *time.Location, typeID, scope, gen string, slots []Timeslot, dates []string) {
	byDate := make(map[string][]Timeslot, len(dates))
	for _, d := range dates {
		byDate[d] = nil
	}
	for _, s := range slots {
		d := DateIn(s.SlotStartDate, loc).Format(DateLayout)
		if _, ok := byDate[d]; ok {
			byDate[d] = append(byDate[d], s)
		}
	}
	days := make(map[string]string, len(byDate))
	for d, list := range byDate {
		days[d] = encodeDay(list)
	}
	if _, err := c.cfg.Store.fillDays(ctx, typeID, scope, gen, days); err != nil {
		c.cfg.Logger.Warn("timeslot cache fill failed; answering uncached", "appointmentTypeId", typeID, "scope", scope, "err", err)
	}
}

// compute is the uncached answer: the source's openings of the scope's
// specialists minus the appointments, pooled by start.
func (c *Catalog) compute(ctx context.Context, snap Snapshot, t AppointmentType, scope string, from time.Time, days int) ([]Timeslot, error) {
	if scope != PooledScope {
		t.SpecialistIDs = []string{scope}
	}
	open, err := c.cfg.Source.Openings(ctx, snap, t, from, days)
	if err != nil {
		return nil, err
	}
	lo, hi := slots.WallInstant(snap.Loc, from, 0), slots.WallInstant(snap.Loc, from.AddDate(0, 0, days), 0)
	appts, err := c.cfg.Store.Appointments(ctx, lo.Add(-t.Buffer()), hi.Add(t.Buffer()))
	if err != nil {
		return nil, err
	}
	slots := Pool(Free(open, appts, t.Buffer()), snap.Priorities())
	if slots == nil {
		slots = []Timeslot{}
	}
	return slots, nil
}

// Candidates checks that start is a slot start of the type (of the named
// specialist, when one is named) and returns the slot's end and the
// specialists free at it before holds are considered, highest priority
// first. ErrNotFound: unknown type or specialist; ErrNotOnGrid: not a slot
// start, or in the past; ErrSlotTaken (409): for the Cloud9 source, a
// start Cloud9 no longer lists open (for the chair asked, or for any)
// that is on the type's weekly grid — booked (Cloud9Source.taken has the
// rule). Computed uncached, so a booking never trusts a stale list.
func (c *Catalog) Candidates(ctx context.Context, appointmentTypeID string, start time.Time, specialistID string) (time.Time, []Candidate, error) {
	const op = "availability.Candidates"
	snap, err := c.cfg.Source.Snapshot(ctx)
	if err != nil {
		return time.Time{}, nil, err
	}
	t, ok := snap.Type(appointmentTypeID)
	if !ok {
		return time.Time{}, nil, notFound(op, "no appointment type %q", appointmentTypeID)
	}
	whole := t // every chair of the type: its grid (takenSource)
	if specialistID != "" {
		if len(snap.SpecialistsOf(t, specialistID)) == 0 {
			return time.Time{}, nil, notFound(op, "no specialist %q for appointment type %q", specialistID, t.ID)
		}
		t.SpecialistIDs = []string{specialistID}
	}
	start = start.UTC()
	if start.Before(c.cfg.Now()) {
		return time.Time{}, nil, notOnGrid(op, start)
	}
	open, err := c.cfg.Source.Openings(ctx, snap, t, DateIn(start, snap.Loc), 1)
	if err != nil {
		return time.Time{}, nil, err
	}
	var at []Opening
	for _, o := range open {
		if o.Start.Equal(start) {
			at = append(at, o)
		}
	}
	if len(at) == 0 {
		if ts, ok := c.cfg.Source.(takenSource); ok && ts.taken(snap, whole, start) {
			return time.Time{}, nil, slotTaken(op, start)
		}
		return time.Time{}, nil, notOnGrid(op, start)
	}
	end := at[0].End
	appts, err := c.cfg.Store.Appointments(ctx, start.Add(-t.Buffer()), end.Add(t.Buffer()))
	if err != nil {
		return time.Time{}, nil, err
	}
	free := Pool(Free(at, appts, t.Buffer()), snap.Priorities())
	prio := snap.Priorities()
	cands := []Candidate{}
	if len(free) == 1 {
		for _, id := range free[0].SpecialistIDs {
			cands = append(cands, Candidate{SpecialistID: id, Priority: prio[id]})
		}
	}
	return end, cands, nil
}

// takenSource is a Source that tells a booked slot start from one it
// never offers (Cloud9Source: the schedule-file source's booked starts
// are still openings, taken out by the appointments instead).
type takenSource interface {
	taken(snap Snapshot, t AppointmentType, start time.Time) bool
}

// RecordBooking stores an appointment booked through /v1 and invalidates
// timeslots:{appointmentTypeId}:* (seed table: "Appointment created").
// Recording the same appointment again is a no-op.
func (c *Catalog) RecordBooking(ctx context.Context, a Appointment) error {
	const op = "availability.RecordBooking"
	switch {
	case checkID("appointment", a.AppointmentID) != nil:
		return invalidField(op, "appointmentId", "appointmentId %q is not a valid id", a.AppointmentID)
	case a.SpecialistID == "":
		return invalidField(op, "specialistId", "specialistId is required")
	case a.SlotStartDate.IsZero() || !a.SlotEndDate.After(a.SlotStartDate):
		return invalidField(op, "slotEndDate", "an appointment needs a start and an end after it")
	}
	t, err := c.AppointmentType(ctx, a.AppointmentTypeID)
	if err != nil {
		return err
	}
	a.SlotStartDate, a.SlotEndDate, a.BookedAt = a.SlotStartDate.UTC(), a.SlotEndDate.UTC(), a.BookedAt.UTC()
	return c.cfg.Store.Record(ctx, a, t.Buffer())
}

// CancelBooking deletes a recorded appointment and invalidates its type's
// timeslots (seed table: "Appointment cancelled"); ErrNotFound when none.
func (c *Catalog) CancelBooking(ctx context.Context, appointmentID string) (Appointment, error) {
	return c.cfg.Store.Cancel(ctx, appointmentID)
}

// RescheduleBooking moves a recorded appointment to another slot start of
// its type (specialistID empty: keep the specialist), which must be on the
// grid and free, and invalidates the type's timeslots (seed table:
// "Appointment rescheduled").
func (c *Catalog) RescheduleBooking(ctx context.Context, appointmentID string, start time.Time, specialistID string) (Appointment, error) {
	const op = "availability.RescheduleBooking"
	a, _, err := c.cfg.Store.Appointment(ctx, appointmentID)
	if err != nil {
		return Appointment{}, err
	}
	if specialistID == "" {
		specialistID = a.SpecialistID
	}
	end, cands, err := c.Candidates(ctx, a.AppointmentTypeID, start, specialistID)
	if err != nil {
		return Appointment{}, err
	}
	if len(cands) == 0 {
		return Appointment{}, conflict(op, "specialist %q is not free at %s", specialistID, start.UTC().Format(time.RFC3339))
	}
	return c.cfg.Store.Reschedule(ctx, appointmentID, start, end, specialistID)
}

// Schedule is the stored schedule (schedule-file source only; 409
// otherwise).
func (c *Catalog) Schedule(ctx context.Context) (Schedule, error) {
	src, ok := c.cfg.Source.(ScheduleSource)
	if !ok {
		return Schedule{}, conflict("availability.Schedule", "the schedule comes from Cloud9 and is not kept here")
	}
	v, err := src.schedule(ctx)
	if err != nil {
		return Schedule{}, err
	}
	return v.sched.clone(), nil // the caller's own: the decoded one is shared
}

// Update applies an admin change (schedule-file source only; 409
// otherwise) and invalidates as the change says, in one script. A
// schedule Redis lost is restored from the source's seed first.
func (c *Catalog) Update(ctx context.Context, change Change) (Schedule, error) {
	src, ok := c.cfg.Source.(ScheduleSource)
	if !ok {
		return Schedule{}, conflict("availability.Update", "the schedule comes from Cloud9 and cannot be changed here")
	}
	if _, err := src.schedule(ctx); err != nil {
		return Schedule{}, err
	}
	return c.cfg.Store.Update(ctx, change)
}

// Booked lists the appointments of one type recorded through /v1 that
// start in [from, to), for views that show booked slots (the board).
func (c *Catalog) Booked(ctx context.Context, appointmentTypeID string, from, to time.Time) ([]Appointment, error) {
	appts, err := c.cfg.Store.Appointments(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := appts[:0]
	for _, a := range appts {
		if strings.EqualFold(a.AppointmentTypeID, appointmentTypeID) && !a.SlotStartDate.Before(from) { // Cloud9 spells GUIDs in either case
			out = append(out, a)
		}
	}
	return out, nil
}
