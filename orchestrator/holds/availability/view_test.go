package availability

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
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
	other, err := NewStore(b.rdb, StoreConfig{KeyPrefix: b.prefix, Now: b.clock.Now})
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

// fixedSlots is an OpenSlotsReader handing out one list for the horizon,
// as the slot cache hands out its decoded copy while the list is
// unchanged, and a copy of it for a window of a day (another range).
type fixedSlots struct{ list *[]slots.Slot }

func (f fixedSlots) OpenSlots(_ context.Context, from, to time.Time) ([]slots.Slot, error) {
	if to.Sub(from) <= 25*time.Hour {
		return slices.Clone(*f.list), nil
	}
	return *f.list, nil
}

// A Cloud9 source made with NewCloud9Source answers exactly as one
// without, derives the types, chairs and starts once per list it is
// handed, and derives them again when the list changes.
func TestCloud9SourceKeepsItsViewWhileTheListIsUnchanged(t *testing.T) {
	loc := chicago(t)
	now := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	slot := func(typ, chair, start string) slots.Slot {
		return slots.Slot{StartTime: start, ScheduleViewGUID: "view", ScheduleColumnGUID: chair, AppointmentTypeGUID: typ, Minutes: 30,
			LocationGUID: "loc"}
	}
	list := []slots.Slot{slot("type-a", "chair-2", "11/24/2026 9:00:00 AM"), slot("type-a", "chair-1", "11/24/2026 9:00:00 AM"),
		slot("type-b", "chair-1", "11/25/2026 10:30:00 AM"), slot("type-a", "chair-1", "11/26/2026 8:00:00 AM"),
		slot("type-a", "bad:chair", "11/24/2026 9:30:00 AM"), slot("type-a", "chair-3", "not a time")}
	reader := fixedSlots{list: &list}
	plain := Cloud9Source{Slots: reader, Loc: loc, Horizon: 7, Now: func() time.Time { return now }}
	kept := NewCloud9Source(plain)
	same := func(label string) Snapshot {
		t.Helper()
		want, err := plain.Snapshot(bg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := kept.Snapshot(bg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want.Types, got.Types) || !reflect.DeepEqual(want.Specialists, got.Specialists) {
			t.Fatalf("%s: types %+v / %+v, chairs %+v / %+v", label, want.Types, got.Types, want.Specialists, got.Specialists)
		}
		for _, typ := range want.Types {
			wo, err := plain.Openings(bg, want, typ, DateIn(now, loc), 7)
			if err != nil {
				t.Fatal(err)
			}
			ko, err := kept.Openings(bg, got, typ, DateIn(now, loc), 7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(wo, ko) || len(wo) == 0 {
				t.Fatalf("%s: openings of %s %v / %v", label, typ.ID, wo, ko)
			}
		}
		return got
	}
	first := same("first")
	if len(first.Types) != 2 || !reflect.DeepEqual(first.Types[0].SpecialistIDs, []string{"chair-1", "chair-2", "chair-3"}) {
		t.Fatalf("types %+v", first.Types)
	}
	if again := same("again"); &again.Types[0] != &first.Types[0] {
		t.Fatal("the same list was derived twice")
	}
	// A window past the horizon reads another list: answered from it, and
	// the kept view stays.
	far, err := kept.Openings(bg, first, first.Types[0], DateIn(now, loc).AddDate(0, 0, 30), 1)
	if err != nil || len(far) != 0 {
		t.Fatalf("openings past the horizon %v, %v", far, err)
	}
	if again := same("after a window past the horizon"); &again.Types[0] != &first.Types[0] {
		t.Fatal("a list read for another window replaced the kept view")
	}

	// The cache hands out a new list: chair-2 booked, type-b gone.
	list = []slots.Slot{list[1], list[3]}
	changed := same("changed")
	if len(changed.Types) != 1 || !reflect.DeepEqual(changed.Types[0].SpecialistIDs, []string{"chair-1"}) {
		t.Fatalf("types after the change %+v", changed.Types)
	}
	if len(first.Types) != 2 {
		t.Fatal("a snapshot taken before the change was changed")
	}
}

// slowCloud9 answers GetOnlineReservations after a pause, counting calls.
type slowCloud9 struct {
	calls atomic.Int32
	pause time.Duration
	list  []cloud9.Slot
}

func (s *slowCloud9) GetOnlineReservations(ctx context.Context, _ cloud9.ReservationQuery) ([]cloud9.Slot, error) {
	s.calls.Add(1)
	select {
	case <-time.After(s.pause):
		return s.list, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Web holds arriving together on a cold (or stale) slot cache make one
// Cloud9 read between them, and each gets the list; the next one finds it
// cached.
func TestCloud9SlotsReadCloud9OnceForCallersThatMissTogether(t *testing.T) {
	rdb := newDB(t)
	cache, err := slots.NewCache(rdb, slots.CacheConfig{KeyPrefix: "herd" + itoa64(prefixSeq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	c9 := &slowCloud9{pause: 200 * time.Millisecond, list: []cloud9.Slot{{StartTime: "11/24/2026 9:00:00 AM",
		ScheduleViewGUID: "view", ScheduleColumnGUID: "chair-1", AppointmentTypeGUID: "type-a", Minutes: 30, LocationGUID: "loc"}}}
	reader := Cloud9Slots{Cloud9: c9, Cache: cache, LocationGUID: "loc", Loc: chicago(t)}
	from := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			list, err := reader.OpenSlots(bg, from, from.AddDate(0, 0, 28))
			if err == nil && len(list) != 1 {
				err = fmt.Errorf("%d slots", len(list))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := c9.calls.Load(); n != 1 {
		t.Fatalf("%d Cloud9 reads for 64 callers that missed together", n)
	}
	if _, err := reader.OpenSlots(bg, from, from.AddDate(0, 0, 28)); err != nil || c9.calls.Load() != 1 {
		t.Fatalf("the next read: %v, %d Cloud9 reads", err, c9.calls.Load())
	}
}

// refusingCloud9 refuses every GetOnlineReservations, counting calls.
type refusingCloud9 struct {
	calls atomic.Int32
	err   error
}

func (s *refusingCloud9) GetOnlineReservations(context.Context, cloud9.ReservationQuery) ([]cloud9.Slot, error) {
	s.calls.Add(1)
	return nil, s.err
}

// While Cloud9 refuses (code 8), requests one after another on a range
// the cache does not hold fresh make one read between them per
// FailureHold, not one each: /v1 visitors cannot spend the practice's
// read quota by retrying. A list cached within MaxStale still answers.
func TestCloud9SlotsDoNotRereadAFailingRange(t *testing.T) {
	rdb := newDB(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cache, err := slots.NewCache(rdb, slots.CacheConfig{KeyPrefix: "fail" + itoa64(prefixSeq.Add(1)), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	c9 := &refusingCloud9{err: &cloud9.Error{Code: cloud9.CodeRateLimited, Message: "Too many requests"}}
	reader := Cloud9Slots{Cloud9: c9, Cache: cache, LocationGUID: "loc", Loc: chicago(t), Now: clock}
	from := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i := range 20 {
		if _, err := reader.OpenSlots(bg, from, from.AddDate(0, 0, 28)); err == nil {
			t.Fatalf("request %d answered while Cloud9 refuses and nothing is cached", i)
		}
	}
	if n := c9.calls.Load(); n != 1 {
		t.Fatalf("%d Cloud9 reads for 20 requests within the failure hold", n)
	}
	now = now.Add(slots.DefaultFailureHold)
	if _, err := reader.OpenSlots(bg, from, from.AddDate(0, 0, 28)); err == nil || c9.calls.Load() != 2 {
		t.Fatalf("after the hold: %v, %d reads", err, c9.calls.Load())
	}

	// A list cached a minute ago answers, stale, while the hold lasts.
	r := slots.Range{LocationGUID: "loc", From: DateIn(from.AddDate(0, 0, 28), chicago(t)), To: DateIn(from.AddDate(0, 0, 56), chicago(t))}
	if err := cache.Put(bg, r, slots.FromCloud9([]cloud9.Slot{{StartTime: "12/22/2026 9:00:00 AM", ScheduleViewGUID: "view",
		ScheduleColumnGUID: "chair-1", AppointmentTypeGUID: "type-a", Minutes: 30, LocationGUID: "loc"}}, "loc")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute) // older than FreshFor (30 s), younger than MaxStale (5 min)
	stale := reader
	stale.FreshFor = 30 * time.Second
	for range 5 {
		list, err := stale.OpenSlots(bg, from.AddDate(0, 0, 28), from.AddDate(0, 0, 56))
		if err != nil || len(list) != 1 {
			t.Fatalf("stale list within MaxStale: %v, %d slots", err, len(list))
		}
	}
	if n := c9.calls.Load(); n != 3 {
		t.Fatalf("%d Cloud9 reads: want one more for the stale range", n)
	}
}
