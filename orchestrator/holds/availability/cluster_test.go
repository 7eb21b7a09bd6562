package availability

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// Every key shares the {availability} hash tag, so each script — seeding
// the schedule, an admin change invalidating several types, a booking,
// a cache fill — runs on Redis Cluster.
func TestOnRedisCluster(t *testing.T) {
	c := rediscluster.Start(t)
	clock := clocktest.New(monday0800)
	store, err := NewStore(c.Client(), StoreConfig{KeyPrefix: "cl:", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sched, hash, err := LoadScheduleFile(filepath.Join("testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SeedSchedule(bg, sched, hash); err != nil {
		t.Fatal(err)
	}
	seed := &ScheduleSeed{Schedule: sched, Hash: hash, Logger: slog.New(slog.DiscardHandler)}
	cat, err := NewCatalog(CatalogConfig{Source: ScheduleSource{Store: store, Seed: seed}, Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	q := TimeslotQuery{AppointmentTypeID: "adjustment", Days: 7}
	fill := func() bool {
		t.Helper()
		ts, err := cat.Timeslots(bg, q)
		if err != nil {
			t.Fatal(err)
		}
		return ts.Cached
	}
	fill()
	if !fill() {
		t.Fatal("not cached on the cluster")
	}
	// Weekly hours of a specialist of both types: one script, two types.
	if _, err := cat.Update(bg, SetWeeklyHours("dr-baker", WeeklyHours{"mon": {{"09:00", "10:00"}}})); err != nil {
		t.Fatal(err)
	}
	if fill() {
		t.Fatal("cached after an admin change")
	}
	fill()
	start := utc("2026-11-24T13:50:00Z") // Tuesday 07:50 CST: on Chen's grid (07:30 + 20 min)
	a := Appointment{AppointmentID: "x", AppointmentTypeID: "adjustment", SpecialistID: "dr-chen",
		SlotStartDate: start, SlotEndDate: start.Add(20 * time.Minute)}
	if err := cat.RecordBooking(bg, a); err != nil {
		t.Fatal(err)
	}
	if fill() {
		t.Fatal("cached after a booking")
	}
	if _, err := cat.CancelBooking(bg, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cat.Candidates(bg, "adjustment", start, "dr-chen"); err != nil {
		t.Fatal(err)
	}
	// The schedule lost: its restore is one script on one slot too, and
	// invalidates what was cached.
	fill()
	if err := c.Client().Del(bg, "cl:{availability}:schedule").Err(); err != nil {
		t.Fatal(err)
	}
	if fill() {
		t.Fatal("cached after the schedule was restored")
	}
}
