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
