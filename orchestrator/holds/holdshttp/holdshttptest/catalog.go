// Package holdshttptest is an in-memory availability catalogue for tests
// of the web face (holdshttp.Catalog), faithful to docs/holds.md: until
// the real availability catalogue is wired it stands in for it in the
// handler tests, the end-to-end tests and the benchmark.
package holdshttptest

import (
	"context"
	"sync"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
)

// Type is one appointment type of the catalogue.
type Type struct {
	ID              string
	CooldownMinutes int
	Minutes         int            // slot length and grid step (default 30)
	Specialists     map[string]int // specialist id → priority
	// Open reports whether start is a slot start (default: on the grid
	// between 09:00 and 17:00 UTC).
	Open func(start time.Time) bool
	// External: booked in the system of record through the web face's
	// Booker (AppointmentType.External).
	External bool
}

// Catalog is the in-memory catalogue. Booked slots are not free; errors are
// *contracts.Error (not_found, invalid with details.field).
type Catalog struct {
	mu    sync.Mutex
	types map[string]Type
	appts map[string]holdshttp.Appointment
	// Fail, when set, is returned by RecordBooking.
	Fail error
}

// New returns a catalogue of types.
func New(types ...Type) *Catalog {
	c := &Catalog{types: map[string]Type{}, appts: map[string]holdshttp.Appointment{}}
	for _, t := range types {
		if t.Minutes <= 0 {
			t.Minutes = 30
		}
		c.types[t.ID] = t
	}
	return c
}

func (c *Catalog) get(id string) (Type, error) {
	t, ok := c.types[id]
	if !ok {
		e := contracts.Errorf(contracts.CodeNotFound, "no appointment type %q", id)
		e.Details = map[string]any{"field": "appointmentTypeId"}
		return Type{}, e
	}
	return t, nil
}

// AppointmentType implements holdshttp.Catalog.
func (c *Catalog) AppointmentType(_ context.Context, id string) (holdshttp.AppointmentType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.get(id)
	if err != nil {
		return holdshttp.AppointmentType{}, err
	}
	ids := make([]string, 0, len(t.Specialists))
	for id := range t.Specialists {
		ids = append(ids, id)
	}
	return holdshttp.AppointmentType{ID: t.ID, CooldownMinutes: t.CooldownMinutes, SpecialistIDs: ids, External: t.External}, nil
}

func (t Type) open(start time.Time) bool {
	if t.Open != nil {
		return t.Open(start)
	}
	step := time.Duration(t.Minutes) * time.Minute
	day := start.Truncate(24 * time.Hour)
	off := start.Sub(day)
	return off%step == 0 && off >= 9*time.Hour && off+step <= 17*time.Hour
}

// Candidates implements holdshttp.Catalog.
func (c *Catalog) Candidates(_ context.Context, id string, start time.Time, specialistID string) (time.Time, []holds.Candidate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.get(id)
	if err != nil {
		return time.Time{}, nil, err
	}
	if _, ok := t.Specialists[specialistID]; specialistID != "" && !ok {
		e := contracts.Errorf(contracts.CodeNotFound, "no specialist %q for appointment type %q", specialistID, id)
		e.Details = map[string]any{"field": "specialistId"}
		return time.Time{}, nil, e
	}
	if !t.open(start) {
		e := contracts.Errorf(contracts.CodeInvalid, "slotStartDate %s is not a slot start of this appointment type", holds.FormatStart(start))
		e.Details = map[string]any{"field": "slotStartDate"}
		return time.Time{}, nil, e
	}
	out := []holds.Candidate{}
	for sp, prio := range t.Specialists {
		if (specialistID == "" || sp == specialistID) && !c.booked(sp, start) {
			out = append(out, holds.Candidate{SpecialistID: sp, Priority: prio})
		}
	}
	return start.Add(time.Duration(t.Minutes) * time.Minute), out, nil
}

func (c *Catalog) booked(specialistID string, start time.Time) bool {
	for _, a := range c.appts {
		if a.SpecialistID == specialistID && a.SlotStartDate.Equal(start) {
			return true
		}
	}
	return false
}

// RecordBooking implements holdshttp.Catalog.
func (c *Catalog) RecordBooking(_ context.Context, a holdshttp.Appointment) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Fail != nil {
		return c.Fail
	}
	if cur, ok := c.appts[a.AppointmentID]; ok && cur.SpecialistID == a.SpecialistID && cur.SlotStartDate.Equal(a.SlotStartDate) {
		return nil // a retried /book: already recorded, as the availability store does
	}
	if c.booked(a.SpecialistID, a.SlotStartDate) {
		return contracts.Errorf(contracts.CodeConflict, "slot already booked")
	}
	c.appts[a.AppointmentID] = a
	return nil
}

// CancelBooking implements holdshttp.Catalog.
func (c *Catalog) CancelBooking(_ context.Context, id string) (holdshttp.Appointment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.appts[id]
	if !ok {
		return holdshttp.Appointment{}, contracts.Errorf(contracts.CodeNotFound, "no appointment %q", id)
	}
	delete(c.appts, id)
	return a, nil
}

// SetFail sets Fail under the lock.
func (c *Catalog) SetFail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Fail = err
}

// Appointments returns the recorded appointments.
func (c *Catalog) Appointments() []holdshttp.Appointment {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]holdshttp.Appointment, 0, len(c.appts))
	for _, a := range c.appts {
		out = append(out, a)
	}
	return out
}

// AddSpecialist adds a specialist (priority 0) to type id.
func (c *Catalog) AddSpecialist(id, specialistID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.types[id]
	if t.Specialists == nil {
		t.Specialists = map[string]int{}
	}
	if _, ok := t.Specialists[specialistID]; !ok {
		t.Specialists[specialistID] = 0
	}
	c.types[id] = t
}
