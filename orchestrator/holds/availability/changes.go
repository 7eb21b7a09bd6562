package availability

import (
	"slices"
)

// Change is one admin change of the schedule: it edits a copy and names
// the appointment types whose cached timeslots it invalidates (the invalidation
// table of docs/holds.md#availability-appointment-types-and-timeslots). It answers a *contracts.Error (404 / 400) when the
// change does not apply; then nothing is stored.
type Change func(s *Schedule) (affected []string, err error)

// SetWeeklyHours replaces a specialist's weekly hours. Seed table: "Weekly
// hours changed — all timeslots:* for affected appointment types", the
// types the specialist serves.
func SetWeeklyHours(specialistID string, w WeeklyHours) Change {
	const op = "availability.SetWeeklyHours"
	return func(s *Schedule) ([]string, error) {
		i := s.specialistIndex(specialistID)
		if i < 0 {
			return nil, notFound(op, "no specialist %q", specialistID)
		}
		if err := w.Validate(); err != nil {
			return nil, invalidField(op, "weeklyHours", "weeklyHours: %v", err)
		}
		if w == nil {
			w = WeeklyHours{}
		}
		s.Specialists[i].WeeklyHours = w
		return s.typesServing(specialistID), nil
	}
}

// PutOverride creates or replaces a specialist's override of one date (no
// hours: closed). Seed table: "Override created/updated/deleted —
// timeslots:{appointmentTypeId}:*" for each type the specialist serves.
func PutOverride(specialistID, date string, hours []Interval) Change {
	const op = "availability.PutOverride"
	return func(s *Schedule) ([]string, error) {
		if s.specialistIndex(specialistID) < 0 {
			return nil, notFound(op, "no specialist %q", specialistID)
		}
		if _, err := ParseDate(date); err != nil {
			return nil, invalidField(op, "date", "date: %v", err)
		}
		if _, err := spans(hours); err != nil {
			return nil, invalidField(op, "hours", "hours: %v", err)
		}
		if hours == nil {
			hours = []Interval{}
		}
		o := Override{SpecialistID: specialistID, Date: date, Hours: hours}
		if i := s.overrideIndex(specialistID, date); i >= 0 {
			s.Overrides[i] = o
		} else {
			s.Overrides = append(s.Overrides, o)
		}
		return s.typesServing(specialistID), nil
	}
}

// DeleteOverride removes a specialist's override of one date (404 when
// there is none). Invalidates like PutOverride.
func DeleteOverride(specialistID, date string) Change {
	const op = "availability.DeleteOverride"
	return func(s *Schedule) ([]string, error) {
		if s.specialistIndex(specialistID) < 0 {
			return nil, notFound(op, "no specialist %q", specialistID)
		}
		if _, err := ParseDate(date); err != nil {
			return nil, invalidField(op, "date", "date: %v", err)
		}
		i := s.overrideIndex(specialistID, date)
		if i < 0 {
			return nil, notFound(op, "no override of specialist %q on %s", specialistID, date)
		}
		s.Overrides = slices.Delete(s.Overrides, i, i+1)
		return s.typesServing(specialistID), nil
	}
}

// PutAppointmentType creates or updates an appointment type (a cooldown
// of 0 takes DefaultCooldownMinutes). Seed table: "Appointment type
// updated — timeslots:{appointmentTypeId}:*".
func PutAppointmentType(t AppointmentType) Change {
	const op = "availability.PutAppointmentType"
	return func(s *Schedule) ([]string, error) {
		specs := map[string]bool{}
		for _, sp := range s.Specialists {
			specs[sp.ID] = true
		}
		for _, id := range t.SpecialistIDs {
			if !specs[id] {
				return nil, notFound(op, "no specialist %q", id)
			}
		}
		if t.CooldownMinutes == 0 {
			t.CooldownMinutes = DefaultCooldownMinutes
		}
		if t.SpecialistIDs == nil {
			t.SpecialistIDs = []string{}
		}
		if err := t.validate(specs); err != nil {
			return nil, invalidField(op, "appointmentType", "%v", err)
		}
		i := slices.IndexFunc(s.AppointmentTypes, func(x AppointmentType) bool { return x.ID == t.ID })
		if i >= 0 {
			s.AppointmentTypes[i] = t
		} else {
			s.AppointmentTypes = append(s.AppointmentTypes, t)
		}
		return []string{t.ID}, nil
	}
}

// DeleteSpecialist removes a specialist, its overrides and its place in
// every type. Seed table: "Specialist deleted — all timeslots:* for
// affected appointment types".
func DeleteSpecialist(specialistID string) Change {
	const op = "availability.DeleteSpecialist"
	return func(s *Schedule) ([]string, error) {
		i := s.specialistIndex(specialistID)
		if i < 0 {
			return nil, notFound(op, "no specialist %q", specialistID)
		}
		affected := s.typesServing(specialistID)
		s.Specialists = slices.Delete(s.Specialists, i, i+1)
		s.Overrides = slices.DeleteFunc(s.Overrides, func(o Override) bool { return o.SpecialistID == specialistID })
		for j := range s.AppointmentTypes {
			s.AppointmentTypes[j].SpecialistIDs = slices.DeleteFunc(s.AppointmentTypes[j].SpecialistIDs,
				func(id string) bool { return id == specialistID })
		}
		return affected, nil
	}
}

func (s Schedule) overrideIndex(specialistID, date string) int {
	return slices.IndexFunc(s.Overrides, func(o Override) bool { return o.SpecialistID == specialistID && o.Date == date })
}
