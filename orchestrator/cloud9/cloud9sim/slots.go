package cloud9sim

import (
	"time"
)

// Slot is one open slot of the weekly template.
type Slot struct {
	Start   time.Time // local, Config.TimeZone
	Minutes int
	Chair   Chair
}

// End is Start plus Minutes.
func (s Slot) End() time.Time { return s.Start.Add(time.Duration(s.Minutes) * time.Minute) }

// slotFilter narrows openSlots the way GetOnlineReservations can.
type slotFilter struct {
	from, to           time.Time // inclusive bounds on the start
	morning, afternoon bool
	days               [7]bool // by time.Weekday
}

func allDays() [7]bool { return [7]bool{true, true, true, true, true, true, true} }

// OpenSlots answers the open slots starting in [from, to] (both inclusive),
// ordered by start then chair: the template's slots from the simulated now
// to the end of the horizon that no active appointment overlaps.
func (s *Sim) OpenSlots(from, to time.Time) []Slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openSlots(s.Now(), slotFilter{from: from, to: to, morning: true, afternoon: true, days: allDays()})
}

// openSlots is OpenSlots with a filter; s.mu must be held.
func (s *Sim) openSlots(now time.Time, f slotFilter) []Slot {
	var out []Slot
	loc := s.cfg.TimeZone
	today := midnight(now, loc)
	slotLen := time.Duration(s.cfg.SlotMinutes) * time.Minute
	for d := 0; d < s.cfg.HorizonDays; d++ {
		day := time.Date(today.Year(), today.Month(), today.Day()+d, 0, 0, 0, 0, loc)
		if dayEnd := day.AddDate(0, 0, 1); dayEnd.Before(f.from) || day.After(f.to) {
			continue
		}
		if !f.days[day.Weekday()] {
			continue
		}
		h := s.cfg.Week[day.Weekday()]
		for off := h.Open; off+slotLen <= h.Close; off += slotLen {
			start := atOffset(day, off)
			if start.Before(now) || start.Before(f.from) || start.After(f.to) {
				continue
			}
			if start.Hour() < 12 && !f.morning || start.Hour() >= 12 && !f.afternoon {
				continue
			}
			for _, ch := range s.cfg.Chairs {
				if s.free(ch.GUID, start, start.Add(slotLen)) {
					out = append(out, Slot{Start: start, Minutes: s.cfg.SlotMinutes, Chair: ch})
				}
			}
		}
	}
	return out
}

// fits reports that [start, start+minutes) lies inside one day's open
// hours of the template, inside the horizon, and overlaps no active
// appointment in column; s.mu must be held.
func (s *Sim) fits(now time.Time, column string, start time.Time, minutes int) bool {
	loc := s.cfg.TimeZone
	start = start.In(loc)
	day := midnight(start, loc)
	today := midnight(now, loc)
	last := time.Date(today.Year(), today.Month(), today.Day()+s.cfg.HorizonDays, 0, 0, 0, 0, loc)
	if day.Before(today) || !day.Before(last) {
		return false
	}
	h := s.cfg.Week[day.Weekday()]
	off := time.Duration(start.Hour())*time.Hour + time.Duration(start.Minute())*time.Minute +
		time.Duration(start.Second())*time.Second
	if off < h.Open || off+time.Duration(minutes)*time.Minute > h.Close {
		return false
	}
	end := start.Add(time.Duration(minutes) * time.Minute)
	return s.free(column, start, end)
}

// free reports that no active appointment in column overlaps [start, end);
// s.mu must be held.
func (s *Sim) free(column string, start, end time.Time) bool {
	for _, a := range s.byColumnDay[columnDay{column, start.Format(time.DateOnly)}] {
		if a.Start.Before(end) && start.Before(a.End()) {
			return false
		}
	}
	return true
}

func midnight(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
}

// atOffset is the wall-clock time off after day's midnight (not the
// elapsed duration, which differs on the days clocks change).
func atOffset(day time.Time, off time.Duration) time.Time {
	h := int(off / time.Hour)
	m := int(off % time.Hour / time.Minute)
	sec := int(off % time.Minute / time.Second)
	return time.Date(day.Year(), day.Month(), day.Day(), h, m, sec, 0, day.Location())
}
