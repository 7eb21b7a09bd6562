package holds

import (
	"hash/fnv"
	"slices"
	"time"
)

// Order is the assignment order (docs/holds.md#availability-appointment-types-and-timeslots) of the candidates for a slot:
// highest Priority first; within a priority, ascending FNV-1a 32 of
// appointmentTypeID + ":" + FormatStart(start) + ":" + specialistID — the
// hash seeded by appointmentTypeId + ":" + slotStartDate, continued over the
// specialist — so one slot always orders its specialists the same way and
// different slots spread the load; equal hashes fall back to the id.
// Duplicate specialists keep their first entry. The input is not modified.
func Order(appointmentTypeID string, start time.Time, cands []Candidate) []Candidate {
	seed := appointmentTypeID + ":" + FormatStart(start) + ":"
	type scored struct {
		c    Candidate
		hash uint32
	}
	seen := make(map[string]bool, len(cands))
	list := make([]scored, 0, len(cands))
	for _, c := range cands {
		if seen[c.SpecialistID] {
			continue
		}
		seen[c.SpecialistID] = true
		h := fnv.New32a()
		_, _ = h.Write([]byte(seed + c.SpecialistID)) // never fails
		list = append(list, scored{c: c, hash: h.Sum32()})
	}
	slices.SortFunc(list, func(a, b scored) int {
		switch {
		case a.c.Priority != b.c.Priority:
			return b.c.Priority - a.c.Priority
		case a.hash != b.hash:
			if a.hash < b.hash {
				return -1
			}
			return 1
		case a.c.SpecialistID < b.c.SpecialistID:
			return -1
		case a.c.SpecialistID > b.c.SpecialistID:
			return 1
		}
		return 0
	})
	out := make([]Candidate, len(list))
	for i, s := range list {
		out[i] = s.c
	}
	return out
}
