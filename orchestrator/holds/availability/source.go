package availability

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Source is where an appointment type's openings come from: the schedule
// file (ScheduleSource) or Cloud9 (Cloud9Source).
type Source interface {
	// Snapshot reads the location, the appointment types and the
	// specialists as they are now.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Openings lists type t's openings on days dates from fromDate (a
	// calendar date of the location, midnight UTC), before appointments
	// booked through /v1 are taken out.
	Openings(ctx context.Context, snap Snapshot, t AppointmentType, fromDate time.Time, days int) ([]Opening, error)
}

// Snapshot is a Source's view of the catalogue at one moment.
type Snapshot struct {
	Loc         *time.Location
	Types       []AppointmentType
	Specialists []Specialist
	schedule    *Schedule    // ScheduleSource's, for Openings
	open        []slots.Slot // Cloud9Source's horizon list, for Openings within it
	openFrom    time.Time    // the date openings starts on (Cloud9Source)
}

// Type returns the appointment type with id.
func (s Snapshot) Type(id string) (AppointmentType, bool) {
	for _, t := range s.Types {
		if t.ID == id {
			return t, true
		}
	}
	return AppointmentType{}, false
}

// Priorities maps specialist id to priority.
func (s Snapshot) Priorities() map[string]int {
	out := make(map[string]int, len(s.Specialists))
	for _, sp := range s.Specialists {
		out[sp.ID] = sp.Priority
	}
	return out
}

// SpecialistsOf lists type t's specialists (in t's order), or only the one
// with id when id is not empty.
func (s Snapshot) SpecialistsOf(t AppointmentType, id string) []Specialist {
	byID := make(map[string]Specialist, len(s.Specialists))
	for _, sp := range s.Specialists {
		byID[sp.ID] = sp
	}
	var out []Specialist
	for _, sid := range t.SpecialistIDs {
		if sp, ok := byID[sid]; ok && (id == "" || sid == id) {
			out = append(out, sp)
		}
	}
	return out
}

// ScheduleSource computes openings from the schedule kept in the Store
// (seeded from the schedule file, changed by the admin endpoints).
type ScheduleSource struct {
	Store *Store
	// Seed, when set, is stored again (Store.RestoreSchedule) by a read
	// that finds no schedule stored — Redis lost its keys — which then
	// reads once more; without it such a read is ErrUnavailable until a
	// restart seeds the file again.
	Seed *ScheduleSeed
}

// ScheduleSeed is the schedule file a ScheduleSource restores: its
// content and hash as LoadScheduleFile read them at start.
type ScheduleSeed struct {
	Schedule Schedule
	Hash     string
	Logger   *slog.Logger // the restore's warning; default slog.Default()
}

var _ Source = ScheduleSource{}

// Snapshot implements Source. The snapshot shares the decoded schedule
// with every other snapshot of the same stored document: read-only.
func (s ScheduleSource) Snapshot(ctx context.Context) (Snapshot, error) {
	const op = "availability.ScheduleSource.Snapshot"
	v, err := s.schedule(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	if v.locErr != nil {
		return Snapshot{}, unavailableErr(op, v.locErr)
	}
	return Snapshot{Loc: v.loc, Types: v.sched.AppointmentTypes, schedule: &v.sched, Specialists: v.specialists}, nil
}

// schedule reads the stored schedule, restoring Seed's first when none is
// stored.
func (s ScheduleSource) schedule(ctx context.Context) (*scheduleView, error) {
	const op = "availability.ScheduleSource.schedule"
	v, err := s.Store.scheduleView(ctx)
	if err != nil || v != nil {
		return v, err
	}
	if s.Seed == nil {
		return nil, unavailableErr(op, errNoSchedule)
	}
	stored, err := s.Store.RestoreSchedule(ctx, s.Seed.Schedule, s.Seed.Hash)
	if err != nil {
		return nil, err
	}
	if stored {
		logger := s.Seed.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("availability: no schedule was stored (Redis lost its keys); stored the schedule file's again, admin changes made since it was loaded are lost",
			"appointment_types", len(s.Seed.Schedule.AppointmentTypes), "specialists", len(s.Seed.Schedule.Specialists))
	}
	v, err = s.Store.scheduleView(ctx)
	if err == nil && v == nil { // lost again at once
		err = unavailableErr(op, errNoSchedule)
	}
	return v, err
}

// Openings implements Source: Grid over the schedule's hours.
func (s ScheduleSource) Openings(_ context.Context, snap Snapshot, t AppointmentType, fromDate time.Time, days int) ([]Opening, error) {
	if snap.schedule == nil {
		return nil, nil
	}
	return Grid(GridInput{Loc: snap.Loc, From: fromDate, Days: days, Duration: t.Duration(), Buffer: t.Buffer(),
		Specialists: snap.schedule.hours(t.SpecialistIDs)}), nil
}
