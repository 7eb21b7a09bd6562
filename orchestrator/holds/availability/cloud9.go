package availability

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// errNoSchedule: the schedule-file source has nothing stored yet.
var errNoSchedule = errors.New("no schedule stored (HOLDS_SCHEDULE_FILE not loaded)")

// OpenSlotsReader is what Cloud9Source needs of the Cloud9 slot path: the
// open slots of GetOnlineReservations whose start falls between from and
// to (instants), through the shared slot cache.
type OpenSlotsReader interface {
	OpenSlots(ctx context.Context, from, to time.Time) ([]slots.Slot, error)
}

// DefaultCloud9Horizon is how many days of open slots Cloud9Source reads
// to learn the appointment types and chairs it offers.
const DefaultCloud9Horizon = 28

// DefaultCloud9Reach is how far ahead Cloud9Source offers slots: 28 weeks,
// the longest span GetOnlineReservations answers in one call.
const DefaultCloud9Reach = 196

// Cloud9Source offers Cloud9's open slots: each schedule column (chair) is
// a specialist, each Cloud9 appointment type GUID an appointment type
// whose duration is its slots' Minutes; the types and chairs are those of
// the open slots of the next Horizon days. Cloud9's wall-clock times are
// read in Loc.
//
// It reads Cloud9 in blocks of Horizon days aligned on today (block 0 is
// the horizon list), one slot-cache entry each, and nothing before today
// or past Reach: whatever dates an anonymous /v1 caller asks for, the
// reads it can cause are at most Reach/Horizon lists per SLOT_CACHE_FRESH
// (7 with the defaults), not one per date or window — a per-window read
// let one visitor spend the practice's Cloud9 read quota (code 8), which
// the IVA's slot refreshes share.
type Cloud9Source struct {
	Slots   OpenSlotsReader
	Loc     *time.Location
	Horizon int // days; default DefaultCloud9Horizon
	Reach   int // days from today with slots offered; default DefaultCloud9Reach
	Now     func() time.Time

	views *cloud9Views // NewCloud9Source's; nil: every call derives anew
}

var _ Source = Cloud9Source{}

// NewCloud9Source is s keeping what it derives from a horizon list (the
// types, the chairs, each slot's start instant) for as long as its Slots
// hand out the same list: slots.Cache.Get returns one decoded copy per
// change of a list, so a web hold does not walk thousands of slots twice
// per request. A Cloud9Source made without it answers the same, deriving
// on every call.
func NewCloud9Source(s Cloud9Source) Cloud9Source {
	s.views = &cloud9Views{}
	return s
}

// cloud9Views holds the view of the last horizon list.
type cloud9Views struct{ last atomic.Pointer[cloud9View] }

// cloud9View is what Snapshot and Openings derive from one list: shared,
// read-only. first and n identify the list (its first element, which the
// view keeps alive, and its length), loc the zone its starts were read in.
type cloud9View struct {
	first  *slots.Slot
	n      int
	loc    *time.Location
	types  []AppointmentType
	specs  []Specialist
	starts []time.Time // each slot's start instant (UTC); zero when it has none
}

// view derives list's view, or answers the kept one when list is the list
// it was derived from; keep stores a new one as the kept view.
func (s Cloud9Source) view(list []slots.Slot, keep bool) *cloud9View {
	if s.views != nil && len(list) > 0 {
		if v := s.views.last.Load(); v != nil && v.first == &list[0] && v.n == len(list) && v.loc == s.Loc {
			return v
		}
	}
	v := deriveView(list, s.Loc)
	if keep && s.views != nil && len(list) > 0 {
		s.views.last.Store(v)
	}
	return v
}

func deriveView(list []slots.Slot, loc *time.Location) *cloud9View {
	v := &cloud9View{n: len(list), loc: loc, starts: make([]time.Time, len(list))}
	if len(list) > 0 {
		v.first = &list[0]
	}
	types := map[string]*AppointmentType{}
	specs := map[string]Specialist{}
	for i, sl := range list {
		if wall, err := sl.Start(); err == nil {
			date := civil(wall.Year(), wall.Month(), wall.Day())
			v.starts[i] = slots.WallInstant(loc, date, wall.Hour()*60+wall.Minute()).UTC()
		}
		if sl.AppointmentTypeGUID == "" || sl.ScheduleColumnGUID == "" || checkID("", sl.AppointmentTypeGUID) != nil || checkID("", sl.ScheduleColumnGUID) != nil {
			continue
		}
		t, ok := types[sl.AppointmentTypeGUID]
		if !ok {
			t = &AppointmentType{ID: sl.AppointmentTypeGUID, Name: cmp.Or(sl.AppointmentTypeDescription, sl.AppointmentTypeGUID),
				DurationMinutes: int(sl.Length() / time.Minute), CooldownMinutes: DefaultCooldownMinutes}
			types[sl.AppointmentTypeGUID] = t
		}
		if !slices.Contains(t.SpecialistIDs, sl.ScheduleColumnGUID) {
			t.SpecialistIDs = append(t.SpecialistIDs, sl.ScheduleColumnGUID)
		}
		if _, ok := specs[sl.ScheduleColumnGUID]; !ok {
			specs[sl.ScheduleColumnGUID] = Specialist{ID: sl.ScheduleColumnGUID, Name: cmp.Or(sl.ScheduleColumnDescription, sl.ScheduleColumnGUID)}
		}
	}
	for _, t := range types {
		slices.Sort(t.SpecialistIDs)
		v.types = append(v.types, *t)
	}
	slices.SortFunc(v.types, func(a, b AppointmentType) int { return strings.Compare(a.ID, b.ID) })
	for _, sp := range specs {
		v.specs = append(v.specs, sp)
	}
	slices.SortFunc(v.specs, func(a, b Specialist) int { return strings.Compare(a.ID, b.ID) })
	return v
}

func (s Cloud9Source) withDefaults() Cloud9Source {
	s.Horizon = valutil.PositiveOrDefault(s.Horizon, DefaultCloud9Horizon)
	s.Reach = max(valutil.PositiveOrDefault(s.Reach, DefaultCloud9Reach), s.Horizon)
	s.Now = valutil.FuncOrDefault(s.Now, time.Now)
	s.Loc = valutil.ValOrDefault(s.Loc, time.UTC)
	return s
}

// Snapshot implements Source.
func (s Cloud9Source) Snapshot(ctx context.Context) (Snapshot, error) {
	s = s.withDefaults()
	today := DateIn(s.Now(), s.Loc)
	list, err := s.Slots.OpenSlots(ctx, slots.WallInstant(s.Loc, today, 0), slots.WallInstant(s.Loc, today.AddDate(0, 0, s.Horizon), 0))
	if err != nil {
		return Snapshot{}, unavailableErr("availability.Cloud9Source.Snapshot", err)
	}
	v := s.view(list, true)
	return Snapshot{Loc: s.Loc, open: list, openFrom: today, Types: v.types, Specialists: v.specs}, nil
}

// Openings implements Source: the open slots of type t on those dates.
func (s Cloud9Source) Openings(ctx context.Context, snap Snapshot, t AppointmentType, fromDate time.Time, days int) ([]Opening, error) {
	s = s.withDefaults()
	from, to := slots.WallInstant(s.Loc, fromDate, 0), slots.WallInstant(s.Loc, fromDate.AddDate(0, 0, days), 0)
	list := snap.open // the horizon list Snapshot read, when the window lies inside it
	if snap.open == nil || fromDate.Before(snap.openFrom) || fromDate.AddDate(0, 0, days).After(snap.openFrom.AddDate(0, 0, s.Horizon)) {
		var err error
		if list, err = s.blocks(ctx, fromDate, fromDate.AddDate(0, 0, days)); err != nil {
			return nil, unavailableErr("availability.Cloud9Source.Openings", err)
		}
	}
	v := s.view(list, false)
	out := make([]Opening, 0, len(list))
	for i, sl := range list {
		start := v.starts[i]
		if start.IsZero() || start.Before(from) || !start.Before(to) {
			continue
		}
		if !strings.EqualFold(sl.AppointmentTypeGUID, t.ID) || !slices.Contains(t.SpecialistIDs, sl.ScheduleColumnGUID) {
			continue
		}
		out = append(out, Opening{Start: start, End: start.Add(sl.Length()), SpecialistID: sl.ScheduleColumnGUID})
	}
	slices.SortFunc(out, func(a, b Opening) int {
		return cmp.Or(strings.Compare(a.SpecialistID, b.SpecialistID), a.Start.Compare(b.Start))
	})
	return out, nil
}

// OpenSlot is the open slot Cloud9 lists for type typeID in chair column
// at start (an instant) — its startTime text, schedule view, minutes and
// location, what booking it in Cloud9 needs; found false when Cloud9 does
// not list it open (any more).
func (s Cloud9Source) OpenSlot(ctx context.Context, typeID, column string, start time.Time) (slots.Slot, bool, error) {
	s = s.withDefaults()
	date := DateIn(start, s.Loc)
	list, err := s.blocks(ctx, date, date.AddDate(0, 0, 1))
	if err != nil {
		return slots.Slot{}, false, unavailableErr("availability.Cloud9Source.OpenSlot", err)
	}
	for _, sl := range list {
		if !strings.EqualFold(sl.AppointmentTypeGUID, typeID) || !strings.EqualFold(sl.ScheduleColumnGUID, column) {
			continue
		}
		if at, ok := s.instant(sl); ok && at.Equal(start.UTC()) {
			return sl, true, nil
		}
	}
	return slots.Slot{}, false, nil
}

// instant is a Cloud9 slot's start as an instant (its wall clock in Loc).
func (s Cloud9Source) instant(sl slots.Slot) (time.Time, bool) {
	wall, err := sl.Start()
	if err != nil {
		return time.Time{}, false
	}
	date := civil(wall.Year(), wall.Month(), wall.Day())
	return slots.WallInstant(s.Loc, date, wall.Hour()*60+wall.Minute()).Add(time.Duration(wall.Second()) * time.Second).UTC(), true
}

// taken reports whether start, which Cloud9 does not list open for type t
// (for the chair asked), is nevertheless one of t's slot starts — booked,
// by flowgate or anyone — rather than a start Cloud9 never offers. Cloud9
// gives no read of a day's appointments to these credentials
// (GetAppointmentListByDate is not authorized) and GetOnlineReservations
// lists open slots only, so the rule reads the shape of t's schedule from
// the open slots Snapshot read (the next Horizon days): start is taken
// when it lies within that horizon and, on some date of it with the same
// weekday, one of t's chairs has an open slot of t at the same wall-clock
// time in Loc (the weekly grid). A start off that grid — not a multiple of
// the slots' rhythm, outside the practice's hours, on a weekday t is never
// offered, past the horizon — stays "not on the grid". A weekday whose
// slots of t are all booked for the whole horizon reads as off the grid.
func (s Cloud9Source) taken(snap Snapshot, t AppointmentType, start time.Time) bool {
	s = s.withDefaults()
	if snap.open == nil {
		return false
	}
	lo, hi := slots.WallInstant(s.Loc, snap.openFrom, 0), slots.WallInstant(s.Loc, snap.openFrom.AddDate(0, 0, s.Horizon), 0)
	if start.Before(lo) || !start.Before(hi) {
		return false
	}
	want := start.In(s.Loc)
	for _, sl := range snap.open {
		if !strings.EqualFold(sl.AppointmentTypeGUID, t.ID) || !slices.ContainsFunc(t.SpecialistIDs, func(id string) bool {
			return strings.EqualFold(id, sl.ScheduleColumnGUID)
		}) {
			continue
		}
		wall, err := sl.Start()
		if err != nil {
			continue
		}
		if civil(wall.Year(), wall.Month(), wall.Day()).Weekday() == want.Weekday() &&
			wall.Hour() == want.Hour() && wall.Minute() == want.Minute() && wall.Second() == want.Second() {
			return true
		}
	}
	return false
}

// blocks reads the open slots of the dates from (inclusive) to (exclusive)
// as the whole blocks of Horizon days, aligned on today, that hold them:
// none before today or from Reach days on. A block is read as Snapshot
// reads the horizon (OpenSlots takes whole days, its last date included),
// so block 0 is the horizon list's cache entry and each block's last date
// is the next one's first: the list of several blocks is theirs
// concatenated without that date's second copy (a new slice; each block's
// list is shared, read-only).
func (s Cloud9Source) blocks(ctx context.Context, from, to time.Time) ([]slots.Slot, error) {
	today := DateIn(s.Now(), s.Loc)
	end := today.AddDate(0, 0, s.Reach)
	if from.Before(today) {
		from = today
	}
	if to.After(end) {
		to = end
	}
	if !from.Before(to) {
		return nil, nil
	}
	first := daysBetween(today, from) / s.Horizon
	last := (daysBetween(today, to) - 1) / s.Horizon
	var out []slots.Slot
	for b := first; b <= last; b++ {
		lo := today.AddDate(0, 0, b*s.Horizon)
		hi := lo.AddDate(0, 0, s.Horizon)
		if hi.After(end) {
			hi = end // the last block ends at Reach
		}
		list, err := s.Slots.OpenSlots(ctx, slots.WallInstant(s.Loc, lo, 0), slots.WallInstant(s.Loc, hi, 0))
		if err != nil {
			return nil, err
		}
		if first == last && hi.Before(end) {
			return list, nil
		}
		for _, sl := range list {
			if wall, err := sl.Start(); err == nil && (b > first || hi.Equal(end)) {
				date := civil(wall.Year(), wall.Month(), wall.Day())
				if (b > first && date.Equal(lo)) || !date.Before(end) {
					continue // the previous block's last date, or Reach's
				}
			}
			out = append(out, sl)
		}
	}
	return out, nil
}

// daysBetween counts the calendar days from a to b (dates at midnight UTC,
// as DateIn gives them).
func daysBetween(a, b time.Time) int { return int(b.Sub(a).Hours()+12) / 24 }
