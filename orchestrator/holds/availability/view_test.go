package availability

import (
	"path/filepath"
	"slices"
	"testing"
)

// The stored schedule is decoded once per document and shared by every
// snapshot built from it, yet a change made through another instance is
// seen by the next snapshot, a snapshot taken before the change keeps what
// it saw, a schedule handed out to change is the caller's own, and a
// schedule Redis lost and got back is read again.
func TestSnapshotsShareTheDecodedScheduleUntilItChanges(t *testing.T) {
	b := setup(t, newDB(t))
	first, err := b.catalog.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.catalog.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	if first.schedule != again.schedule {
		t.Fatal("the same stored document was decoded twice")
	}
	consult := func(s Snapshot) []string {
		typ, ok := s.Type("consultation")
		if !ok {
			t.Fatal("no consultation type")
		}
		return typ.SpecialistIDs
	}
	if !slices.Contains(consult(first), "dr-chen") {
		t.Fatalf("consultation specialists %v: dr-chen expected before the change", consult(first))
	}

	// Another instance (its own Store and Catalog on the same keys) changes it.
	other, err := NewStore(b.rdb, StoreConfig{Prefix: b.prefix, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Update(bg, DeleteSpecialist("dr-chen")); err != nil {
		t.Fatal(err)
	}
	after, err := b.catalog.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(consult(after), "dr-chen") {
		t.Fatalf("consultation specialists %v after dr-chen was deleted elsewhere", consult(after))
	}
	if !slices.Contains(consult(first), "dr-chen") {
		t.Fatal("a snapshot taken before the change was changed under its holder")
	}

	// The schedule handed out (the admin GET) is a copy: changing it
	// changes no snapshot.
	own, err := b.catalog.Schedule(bg)
	if err != nil {
		t.Fatal(err)
	}
	own.AppointmentTypes[0].Name = "changed by a caller"
	own.AppointmentTypes[0].SpecialistIDs[0] = "dr-nobody"
	later, err := b.catalog.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	if later.schedule != after.schedule {
		t.Fatal("the document did not change, yet it was decoded again")
	}
	if later.Types[0].Name == "changed by a caller" || later.Types[0].SpecialistIDs[0] == "dr-nobody" {
		t.Fatalf("a caller's change to its schedule reached the shared one: %+v", later.Types[0])
	}

	// Redis loses the schedule and the file's is stored again: read anew.
	if err := b.rdb.Del(bg, b.prefix+"{availability}:schedule").Err(); err != nil {
		t.Fatal(err)
	}
	sched, hash, err := LoadScheduleFile(filepath.Join("testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := other.RestoreSchedule(bg, sched, hash); err != nil || !stored {
		t.Fatalf("restore: stored %v, %v", stored, err)
	}
	back, err := b.catalog.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(consult(back), "dr-chen") {
		t.Fatalf("consultation specialists %v: the restored file's schedule has dr-chen", consult(back))
	}
}
