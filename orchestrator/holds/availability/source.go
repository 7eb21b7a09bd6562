package availability

import (
	"context"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/slots"
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
type ScheduleSource struct{ Store *Store }

var _ Source = ScheduleSource{}

// Snapshot implements Source.
func (s ScheduleSource) Snapshot(ctx context.Context) (Snapshot, error) {
	const op = "availability.ScheduleSource.Snapshot"
	sched, _, found, err := s.Store.Schedule(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	if !found {
		return Snapshot{}, unavailableErr(op, errNoSchedule)
	}
	loc, err := sched.Location()
	if err != nil {
		return Snapshot{}, unavailableErr(op, err)
	}
	snap := Snapshot{Loc: loc, Types: sched.AppointmentTypes, schedule: &sched,
		Specialists: make([]Specialist, len(sched.Specialists))}
	for i, sp := range sched.Specialists {
		snap.Specialists[i] = sp.Specialist
	}
	return snap, nil
}

// Openings implements Source: Grid over the schedule's hours.
func (s ScheduleSource) Openings(_ context.Context, snap Snapshot, t AppointmentType, fromDate time.Time, days int) ([]Opening, error) {
	if snap.schedule == nil {
		return nil, nil
	}
	return Grid(GridInput{Loc: snap.Loc, From: fromDate, Days: days, Duration: t.Duration(), Buffer: t.Buffer(),
		Specialists: snap.schedule.hours(t.SpecialistIDs)}), nil
}
