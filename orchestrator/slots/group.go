package slots

import (
	"slices"
	"time"
)

// DefaultWindow is getGroupedApptSlots' default timeWindowMinutes.
const DefaultWindow = 40 * time.Minute

// Group is a set of consecutive slots for siblings, shaped as
// getGroupedApptSlots answers it.
type Group struct {
	Slots []Slot   `json:"slots"`
	Date  string   `json:"date"`  // of the first slot, "01/20/2026"
	Day   string   `json:"day"`   // "Monday"
	Times []string `json:"times"` // each slot's "9:10 AM"
}

// Groups finds every group of exactly n slots by docs/reference/nodered-endpoints.md §1.5's rule:
// sort the slots; starting from each slot, greedily add the next later slot
// that starts 0 to window after the previous slot's end (start + Length).
// Groups may overlap (each slot starts one). Slots whose start does not
// parse are left out. The input is not modified. n < 1 gives nil.
func Groups(list []Slot, n int, window time.Duration) []Group {
	if n < 1 || window < 0 {
		return nil
	}
	type timed struct {
		s     Slot
		start time.Time
	}
	sorted := slices.Clone(list)
	Sort(sorted)
	ts := make([]timed, 0, len(sorted))
	for _, s := range sorted {
		if t, err := s.Start(); err == nil {
			ts = append(ts, timed{s, t})
		}
	}
	var out []Group
	for i := range ts {
		members := []timed{ts[i]}
		for j := i + 1; j < len(ts) && len(members) < n; j++ {
			last := members[len(members)-1]
			gap := ts[j].start.Sub(last.start.Add(last.s.Length()))
			if gap < 0 {
				continue // overlaps the previous slot (another chair, same time)
			}
			if gap > window {
				break // later slots start later still
			}
			members = append(members, ts[j])
		}
		if len(members) != n {
			continue
		}
		g := Group{
			Slots: make([]Slot, n),
			Date:  Date(members[0].start),
			Day:   members[0].start.Weekday().String(),
			Times: make([]string, n),
		}
		for k, m := range members {
			g.Slots[k] = m.s
			g.Times[k] = TimeOfDay(m.start)
		}
		out = append(out, g)
	}
	return out
}
