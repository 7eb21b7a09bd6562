package availability

import (
	"slices"
	"testing"
)

func TestDayCodecRoundTrip(t *testing.T) {
	in := []Timeslot{
		{utc("2026-11-23T14:00:00Z"), utc("2026-11-23T14:30:00Z"), []string{"dr-adams", "dr-baker"}},
		{utc("2026-11-23T14:40:00Z"), utc("2026-11-23T15:10:00Z"), []string{"dr-baker"}},
		{utc("2026-11-23T15:20:00Z"), utc("2026-11-23T15:50:00Z"), []string{}},
	}
	for _, list := range [][]Timeslot{in, nil} {
		got, err := decodeDay(nil, encodeDay(list))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, list, func(a, b Timeslot) bool {
			return a.SlotStartDate.Equal(b.SlotStartDate) && a.SlotEndDate.Equal(b.SlotEndDate) && slices.Equal(a.SpecialistIDs, b.SpecialistIDs)
		}) {
			t.Fatalf("round trip: %v → %v", list, got)
		}
	}
	for _, bad := range []string{"", "a\nx,1\n", "a\n1,2,5\n", "a\n1\n"} {
		if _, err := decodeDay(nil, bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// A request whose dates are partly cached computes only the rest, and the
// answer equals the uncached one.
func TestPartlyCachedWindow(t *testing.T) {
	b := setup(t, newDB(t))
	short := TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-24"), Days: 2}
	if _, err := b.catalog.Timeslots(bg, short); err != nil {
		t.Fatal(err)
	}
	long := TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 5}
	mixed, err := b.catalog.Timeslots(bg, long)
	if err != nil || mixed.Cached {
		t.Fatalf("cached=%v err %v", mixed.Cached, err)
	}
	if n := b.rdb.HLen(bg, b.store.keys.timeslots("consultation", PooledScope)).Val(); n != 5 {
		t.Fatalf("%d dates cached, want 5", n)
	}
	full, err := b.catalog.Timeslots(bg, long)
	if err != nil || !full.Cached {
		t.Fatalf("cached=%v err %v", full.Cached, err)
	}
	if _, err := b.store.Invalidate(bg, "consultation"); err != nil {
		t.Fatal(err)
	}
	fresh, _ := b.catalog.Timeslots(bg, long)
	eq := func(a, b Timeslot) bool {
		return a.SlotStartDate.Equal(b.SlotStartDate) && a.SlotEndDate.Equal(b.SlotEndDate) && slices.Equal(a.SpecialistIDs, b.SpecialistIDs)
	}
	if len(fresh.Slots) == 0 || !slices.EqualFunc(fresh.Slots, mixed.Slots, eq) || !slices.EqualFunc(fresh.Slots, full.Slots, eq) {
		t.Fatalf("answers differ: fresh %d, mixed %d, cached %d slots", len(fresh.Slots), len(mixed.Slots), len(full.Slots))
	}
	for i := 1; i < len(fresh.Slots); i++ {
		if !fresh.Slots[i-1].SlotStartDate.Before(fresh.Slots[i].SlotStartDate) {
			t.Fatalf("slots out of order at %d", i)
		}
	}
}
