package availability

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
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

// Cloud9Source offers Cloud9's open slots: each schedule column (chair) is
// a specialist, each Cloud9 appointment type GUID an appointment type
// whose duration is its slots' Minutes; the types and chairs are those of
// the open slots of the next Horizon days. Cloud9's wall-clock times are
// read in Loc.
type Cloud9Source struct {
	Slots   OpenSlotsReader
	Loc     *time.Location
	Horizon int // days; default DefaultCloud9Horizon
	Now     func() time.Time
}

var _ Source = Cloud9Source{}

func (s Cloud9Source) withDefaults() Cloud9Source {
	s.Horizon = valutil.PositiveOrDefault(s.Horizon, DefaultCloud9Horizon)
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
	types := map[string]*AppointmentType{}
	specs := map[string]Specialist{}
	for _, sl := range list {
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
	snap := Snapshot{Loc: s.Loc, open: list, openFrom: today}
	for _, t := range types {
		slices.Sort(t.SpecialistIDs)
		snap.Types = append(snap.Types, *t)
	}
	slices.SortFunc(snap.Types, func(a, b AppointmentType) int { return strings.Compare(a.ID, b.ID) })
	for _, sp := range specs {
		snap.Specialists = append(snap.Specialists, sp)
	}
	slices.SortFunc(snap.Specialists, func(a, b Specialist) int { return strings.Compare(a.ID, b.ID) })
	return snap, nil
}

// Openings implements Source: the open slots of type t on those dates.
func (s Cloud9Source) Openings(ctx context.Context, snap Snapshot, t AppointmentType, fromDate time.Time, days int) ([]Opening, error) {
	s = s.withDefaults()
	from, to := slots.WallInstant(s.Loc, fromDate, 0), slots.WallInstant(s.Loc, fromDate.AddDate(0, 0, days), 0)
	list := snap.open // the horizon list Snapshot read, when the window lies inside it
	if snap.open == nil || fromDate.Before(snap.openFrom) || fromDate.AddDate(0, 0, days).After(snap.openFrom.AddDate(0, 0, s.Horizon)) {
		var err error
		if list, err = s.Slots.OpenSlots(ctx, from, to); err != nil {
			return nil, unavailableErr("availability.Cloud9Source.Openings", err)
		}
	}
	out := make([]Opening, 0, len(list))
	for _, sl := range list {
		if !strings.EqualFold(sl.AppointmentTypeGUID, t.ID) || !slices.Contains(t.SpecialistIDs, sl.ScheduleColumnGUID) {
			continue
		}
		wall, err := sl.Start()
		if err != nil {
			continue
		}
		date := civil(wall.Year(), wall.Month(), wall.Day())
		start := slots.WallInstant(s.Loc, date, wall.Hour()*60+wall.Minute()).UTC()
		if start.Before(from) || !start.Before(to) {
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
	list, err := s.Slots.OpenSlots(ctx, slots.WallInstant(s.Loc, date, 0), slots.WallInstant(s.Loc, date.AddDate(0, 0, 1), 0))
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
