package availability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

var bg = context.Background()

func mustDate(s string) time.Time {
	d, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func findSlot(list []Timeslot, start string) (Timeslot, bool) {
	for _, s := range list {
		if s.SlotStartDate.Equal(utc(start)) {
			return s, true
		}
	}
	return Timeslot{}, false
}

func TestTimeslotsFromSchedule(t *testing.T) {
	b := setup(t, newDB(t))
	got, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got.TimeZone != "America/Chicago" || got.Cached || len(got.Specialists) != 3 {
		t.Fatalf("answer %+v", got)
	}
	// Monday: Adams 08:00–12:00 and 13:00–17:00, Baker 09:00–17:00, every 40 min
	// (30 + 10 buffer); 6 of their starts coincide in the afternoon.
	if len(got.Slots) != 18 {
		t.Fatalf("%d slots, want 18: %v", len(got.Slots), got.Slots)
	}
	for start, want := range map[string][]string{
		"2026-11-23T14:00:00Z": {"dr-adams"},             // 08:00 CST, starting now
		"2026-11-23T15:00:00Z": {"dr-baker"},             // 09:00 CST
		"2026-11-23T19:00:00Z": {"dr-adams", "dr-baker"}, // 13:00 CST, priority order
	} {
		s, ok := findSlot(got.Slots, start)
		if !ok || !slices.Equal(s.SpecialistIDs, want) || s.SlotEndDate.Sub(s.SlotStartDate) != 30*time.Minute {
			t.Errorf("slot %s = %+v (found %v), want specialists %v", start, s, ok, want)
		}
	}
	again, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || !slices.EqualFunc(again.Slots, got.Slots, func(a, b Timeslot) bool {
		return a.SlotStartDate.Equal(b.SlotStartDate) && slices.Equal(a.SpecialistIDs, b.SpecialistIDs)
	}) {
		t.Fatalf("cached answer differs: cached=%v %v", again.Cached, again.Slots)
	}
	if ks := b.keysLike(t, "timeslots:consultation:pooled"); len(ks) != 1 {
		t.Fatalf("cache key %v", ks)
	}
	if n, _ := b.rdb.SCard(bg, b.store.keys.index("consultation")).Result(); n != 1 {
		t.Fatalf("index holds %d keys, want 1", n)
	}
	if ttl := b.rdb.PTTL(bg, b.store.keys.timeslots("consultation", PooledScope)).Val(); ttl <= 0 || ttl > DefaultCacheTTL {
		t.Fatalf("cache TTL %s, want ≤ %s", ttl, DefaultCacheTTL)
	}
	// One specialist: its own key, its own slots.
	one, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 1, SpecialistID: "dr-baker"})
	if err != nil || len(one.Slots) != 12 || len(one.Specialists) != 1 {
		t.Fatalf("dr-baker: %d slots, err %v", len(one.Slots), err)
	}
	// Slots that started are left out as time goes by.
	b.clock.Set(utc("2026-11-23T15:01:00Z"))
	later, _ := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 1})
	if len(later.Slots) != 18-3 || !later.Cached {
		t.Fatalf("after 09:01 CST: %d slots (cached %v), want 15", len(later.Slots), later.Cached)
	}
}

func TestTimeslotsBadInput(t *testing.T) {
	b := setup(t, newDB(t))
	cases := []struct {
		q     TimeslotQuery
		code  contracts.Code
		field string
	}{
		{TimeslotQuery{AppointmentTypeID: "nope", Days: 1}, contracts.CodeNotFound, ""},
		{TimeslotQuery{AppointmentTypeID: "adjustment", Days: 1, SpecialistID: "dr-adams"}, contracts.CodeNotFound, ""}, // not of this type
		{TimeslotQuery{AppointmentTypeID: "adjustment", Days: 1, SpecialistID: "ghost"}, contracts.CodeNotFound, ""},
		{TimeslotQuery{AppointmentTypeID: "adjustment", Days: 0}, contracts.CodeInvalid, "days"},
		{TimeslotQuery{AppointmentTypeID: "adjustment", Days: 91}, contracts.CodeInvalid, "days"},
	}
	for _, c := range cases {
		_, err := b.catalog.Timeslots(bg, c.q)
		var ce *contracts.Error
		if !errors.As(err, &ce) || ce.Code != c.code || (c.field != "" && ce.Details["field"] != c.field) {
			t.Errorf("%+v: err %v, want %s naming %q", c.q, err, c.code, c.field)
		}
	}
	if ks := b.keysLike(t, "timeslots:*"); len(ks) != 0 {
		t.Fatalf("refusals left keys: %v", ks)
	}
}

func TestTimeslotsOutsideTheCachedWindowAreComputed(t *testing.T) {
	b := setup(t, newDB(t))
	// 2026-12-26 (Saturday): Chen's override 10:00–12:00 CST replaces 09:00–13:00.
	got, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "adjustment", From: mustDate("2026-12-26"), Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Slots) != 6 || !got.Slots[0].SlotStartDate.Equal(utc("2026-12-26T16:00:00Z")) {
		t.Fatalf("override day: %v", got.Slots)
	}
	// Beyond MaxDays from today: answered, not cached.
	far, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "adjustment", From: mustDate("2027-03-01"), Days: 7})
	if err != nil || far.Cached || len(far.Slots) == 0 {
		t.Fatalf("far window: %d slots cached=%v err %v", len(far.Slots), far.Cached, err)
	}
	// In the past: answered with nothing that already started.
	past, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: "adjustment", From: mustDate("2026-11-16"), Days: 7})
	if err != nil || len(past.Slots) != 0 {
		t.Fatalf("past window: %v err %v", past.Slots, err)
	}
}

// fillAll caches both types, pooled and per specialist.
func (b *bundle) fillAll(t *testing.T) {
	t.Helper()
	for _, q := range []TimeslotQuery{
		{AppointmentTypeID: "consultation"}, {AppointmentTypeID: "consultation", SpecialistID: "dr-adams"},
		{AppointmentTypeID: "adjustment"}, {AppointmentTypeID: "adjustment", SpecialistID: "dr-chen"},
	} {
		q.Days = 7
		if _, err := b.catalog.Timeslots(bg, q); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.keysLike(t, "timeslots:*")); n != 4 {
		t.Fatalf("%d cache keys, want 4", n)
	}
}

func (b *bundle) cachedTypes(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, typ := range []string{"consultation", "adjustment"} {
		out[typ] = len(b.keysLike(t, "timeslots:"+typ+":*"))
	}
	return out
}

// TestInvalidationTable walks the invalidation table of
// docs/holds.md#availability-appointment-types-and-timeslots row by row:
// the event deletes exactly the cache keys of the types the row names.
func TestInvalidationTable(t *testing.T) {
	rdb := newDB(t)
	booked := Appointment{AppointmentID: "appt-1", AppointmentTypeID: "consultation", SpecialistID: "dr-adams", ClientID: "c1",
		SlotStartDate: utc("2026-11-24T15:00:00Z"), SlotEndDate: utc("2026-11-24T15:30:00Z"), BookedAt: monday0800}
	rows := []struct {
		event   string
		prepare func(b *bundle) error
		act     func(b *bundle) error
		left    map[string]int // cache keys left per type
	}{
		{"Appointment created", nil, func(b *bundle) error { return b.catalog.RecordBooking(bg, booked) },
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Appointment cancelled", func(b *bundle) error { return b.catalog.RecordBooking(bg, booked) },
			func(b *bundle) error { _, err := b.catalog.CancelBooking(bg, "appt-1"); return err },
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Appointment rescheduled", func(b *bundle) error { return b.catalog.RecordBooking(bg, booked) },
			func(b *bundle) error {
				_, err := b.catalog.RescheduleBooking(bg, "appt-1", utc("2026-11-27T14:00:00Z"), "") // Friday 08:00 CST
				return err
			},
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Weekly hours changed (a specialist of one type)", nil,
			func(b *bundle) error {
				return update(b, SetWeeklyHours("dr-adams", WeeklyHours{"mon": {{"10:00", "11:00"}}}))
			},
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Weekly hours changed (a specialist of both types)", nil,
			func(b *bundle) error { return update(b, SetWeeklyHours("dr-baker", WeeklyHours{})) },
			map[string]int{"consultation": 0, "adjustment": 0}},
		{"Override created", nil,
			func(b *bundle) error { return update(b, PutOverride("dr-adams", "2026-11-27", nil)) },
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Override updated", func(b *bundle) error { return update(b, PutOverride("dr-adams", "2026-11-27", nil)) },
			func(b *bundle) error {
				return update(b, PutOverride("dr-adams", "2026-11-27", []Interval{{"09:00", "10:00"}}))
			},
			map[string]int{"consultation": 0, "adjustment": 2}},
		{"Override deleted", nil,
			func(b *bundle) error { return update(b, DeleteOverride("dr-chen", "2026-12-26")) },
			map[string]int{"consultation": 0, "adjustment": 0}}, // Chen serves both types
		{"Appointment type updated", nil,
			func(b *bundle) error {
				return update(b, PutAppointmentType(AppointmentType{ID: "adjustment", Name: "Adjustment", DurationMinutes: 15,
					SpecialistIDs: []string{"dr-chen"}}))
			},
			map[string]int{"consultation": 2, "adjustment": 0}},
		{"Specialist deleted", nil,
			func(b *bundle) error { return update(b, DeleteSpecialist("dr-adams")) },
			map[string]int{"consultation": 0, "adjustment": 2}},
	}
	for _, r := range rows {
		t.Run(r.event, func(t *testing.T) {
			b := setup(t, rdb)
			if r.prepare != nil {
				if err := r.prepare(b); err != nil {
					t.Fatal(err)
				}
			}
			b.fillAll(t)
			if err := r.act(b); err != nil {
				t.Fatal(err)
			}
			if got := b.cachedTypes(t); got["consultation"] != r.left["consultation"] || got["adjustment"] != r.left["adjustment"] {
				t.Fatalf("cache keys left %v, want %v", got, r.left)
			}
			for typ, n := range r.left {
				if idx := b.rdb.SCard(bg, b.store.keys.index(typ)).Val(); int(idx) != n {
					t.Errorf("%s index holds %d keys, want %d", typ, idx, n)
				}
			}
		})
	}
}

func update(b *bundle, c Change) error {
	_, err := b.catalog.Update(bg, c)
	return err
}

func TestChangesShowInTheNextAnswer(t *testing.T) {
	b := setup(t, newDB(t))
	q := TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-24"), Days: 1} // Tuesday: Baker 09–17, Chen 07:30–15:30
	first, err := b.catalog.Timeslots(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := findSlot(first.Slots, "2026-11-24T15:00:00Z")
	if !slices.Contains(s.SpecialistIDs, "dr-baker") {
		t.Fatalf("09:00 CST Tuesday: %v", s.SpecialistIDs)
	}
	if err := b.catalog.RecordBooking(bg, Appointment{AppointmentID: "a1", AppointmentTypeID: "consultation", SpecialistID: "dr-baker",
		ClientID: "c1", SlotStartDate: utc("2026-11-24T15:00:00Z"), SlotEndDate: utc("2026-11-24T15:30:00Z"), BookedAt: monday0800}); err != nil {
		t.Fatal(err)
	}
	second, _ := b.catalog.Timeslots(bg, q)
	if second.Cached {
		t.Fatal("answered from the cache after a booking")
	}
	if s, _ := findSlot(second.Slots, "2026-11-24T15:00:00Z"); slices.Contains(s.SpecialistIDs, "dr-baker") {
		t.Fatalf("booked specialist still offered: %v", s.SpecialistIDs)
	}
	if err := update(b, PutOverride("dr-chen", "2026-11-24", nil)); err != nil {
		t.Fatal(err)
	}
	third, _ := b.catalog.Timeslots(bg, q)
	for _, s := range third.Slots {
		if slices.Contains(s.SpecialistIDs, "dr-chen") {
			t.Fatalf("closed specialist offered at %s", s.SlotStartDate)
		}
	}
}

// A fill computed before an invalidation must not land after it.
func TestStaleFillIsRefused(t *testing.T) {
	b := setup(t, newDB(t))
	days := []string{"2026-11-23"}
	fields, gen, err := b.store.cachedDays(bg, "consultation", PooledScope, days)
	if err != nil || fields[0] != nil {
		t.Fatalf("fields %v err %v", fields, err)
	}
	if _, err := b.store.Invalidate(bg, "consultation"); err != nil {
		t.Fatal(err)
	}
	ok, err := b.store.fillDays(bg, "consultation", PooledScope, gen, map[string]string{"2026-11-23": "\n"})
	if err != nil || ok {
		t.Fatalf("stale fill stored=%v err %v", ok, err)
	}
	if ks := b.keysLike(t, "timeslots:*"); len(ks) != 0 {
		t.Fatalf("stale value cached: %v", ks)
	}
	_, gen, _ = b.store.cachedDays(bg, "consultation", PooledScope, days)
	if ok, err := b.store.fillDays(bg, "consultation", PooledScope, gen, map[string]string{"2026-11-23": "\n"}); err != nil || !ok {
		t.Fatalf("fresh fill stored=%v err %v", ok, err)
	}
}

func TestConcurrentChanges(t *testing.T) {
	b := setup(t, newDB(t))
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- update(b, PutOverride("dr-chen", mustDate("2027-01-01").AddDate(0, 0, i).Format(DateLayout), nil))
		}()
		go func() {
			defer wg.Done()
			errs <- b.catalog.RecordBooking(bg, Appointment{AppointmentID: "same", AppointmentTypeID: "adjustment",
				SpecialistID: fmt.Sprintf("spec-%d", i), SlotStartDate: utc("2026-11-24T15:00:00Z"), SlotEndDate: utc("2026-11-24T15:20:00Z")})
		}()
	}
	wg.Wait()
	close(errs)
	conflicts := 0
	for err := range errs {
		switch {
		case errors.Is(err, ErrConflict):
			conflicts++
		case err != nil:
			t.Fatal(err)
		}
	}
	if conflicts != n-1 {
		t.Fatalf("%d conflicting recordings, want %d", conflicts, n-1)
	}
	sched, _, _, err := b.store.Schedule(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sched.Overrides); got != 2+n {
		t.Fatalf("%d overrides after %d concurrent changes, want %d", got, n, 2+n)
	}
}

// dumpAll is every key under the bundle's prefix with its DUMP, so a test
// can see that a refusal changed nothing.
func (b *bundle) dumpAll(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range b.keysLike(t, "*") {
		out[k] = b.rdb.Dump(bg, k).Val()
	}
	return out
}

func TestRefusedChangesChangeNothing(t *testing.T) {
	b := setup(t, newDB(t))
	b.fillAll(t)
	before := b.dumpAll(t)
	refused := []struct {
		change Change
		want   error
	}{
		{SetWeeklyHours("ghost", WeeklyHours{}), ErrNotFound},
		{SetWeeklyHours("dr-adams", WeeklyHours{"mon": {{"10:00", "09:00"}}}), ErrInvalid},
		{SetWeeklyHours("dr-adams", WeeklyHours{"funday": {{"09:00", "10:00"}}}), ErrInvalid},
		{PutOverride("ghost", "2026-12-01", nil), ErrNotFound},
		{PutOverride("dr-adams", "2026-13-01", nil), ErrInvalid},
		{PutOverride("dr-adams", "2026-12-01", []Interval{{"25:00", "26:00"}}), ErrInvalid},
		{DeleteOverride("dr-adams", "2026-12-01"), ErrNotFound},
		{DeleteSpecialist("ghost"), ErrNotFound},
		{PutAppointmentType(AppointmentType{ID: "x", DurationMinutes: 0}), ErrInvalid},
		{PutAppointmentType(AppointmentType{ID: "x", DurationMinutes: 10, SpecialistIDs: []string{"ghost"}}), ErrNotFound},
		{PutAppointmentType(AppointmentType{ID: "x:y", DurationMinutes: 10}), ErrInvalid},
	}
	for i, r := range refused {
		if err := update(b, r.change); !errors.Is(err, r.want) {
			t.Errorf("change %d: err %v, want %v", i, err, r.want)
		}
	}
	if after := b.dumpAll(t); !mapsEqual(before, after) {
		t.Fatalf("a refused change touched Redis:\nbefore %v\nafter  %v", keysOf(before), keysOf(after))
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestSeedSchedule(t *testing.T) {
	b := setup(t, newDB(t))
	sched, hash, err := LoadScheduleFile("testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := update(b, DeleteSpecialist("dr-chen")); err != nil {
		t.Fatal(err)
	}
	b.fillAll2(t)
	// The same file again (a restart): the admin change survives, nothing is invalidated.
	if stored, err := b.store.SeedSchedule(bg, sched, hash); err != nil || stored {
		t.Fatalf("same file: stored=%v err %v", stored, err)
	}
	if s, _, _, _ := b.store.Schedule(bg); s.specialistIndex("dr-chen") >= 0 {
		t.Fatal("the admin change was lost on a restart with the same file")
	}
	if n := len(b.keysLike(t, "timeslots:*")); n == 0 {
		t.Fatal("a restart with the same file invalidated the cache")
	}
	// An edited file replaces the stored schedule and invalidates every type.
	if stored, err := b.store.SeedSchedule(bg, sched, "other-hash"); err != nil || !stored {
		t.Fatalf("edited file: stored=%v err %v", stored, err)
	}
	if s, _, _, _ := b.store.Schedule(bg); s.specialistIndex("dr-chen") < 0 {
		t.Fatal("the edited file did not replace the stored schedule")
	}
	if ks := b.keysLike(t, "timeslots:*"); len(ks) != 0 {
		t.Fatalf("cache survived a new schedule file: %v", ks)
	}
}

// fillAll2 caches both types after dr-chen was removed.
func (b *bundle) fillAll2(t *testing.T) {
	t.Helper()
	for _, typ := range []string{"consultation", "adjustment"} {
		if _, err := b.catalog.Timeslots(bg, TimeslotQuery{AppointmentTypeID: typ, Days: 3}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadScheduleFileRefusesMistakes(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown key":           `{"timeZone":"America/Chicago","specialist":[]}`,
		"bad zone":              `{"timeZone":"Mars/Olympus"}`,
		"type names a stranger": `{"timeZone":"UTC","appointmentTypes":[{"id":"a","durationMinutes":30,"specialistIds":["x"]}]}`,
		"zero duration":         `{"timeZone":"UTC","appointmentTypes":[{"id":"a","durationMinutes":0}]}`,
		"duplicate specialist":  `{"timeZone":"UTC","specialists":[{"id":"x"},{"id":"x"}]}`,
		"reserved id":           `{"timeZone":"UTC","specialists":[{"id":"pooled"}]}`,
		"bad hours":             `{"timeZone":"UTC","specialists":[{"id":"x","weeklyHours":{"mon":[{"start":"9","end":"10:00"}]}}]}`,
		"override of stranger":  `{"timeZone":"UTC","overrides":[{"specialistId":"x","date":"2026-01-01"}]}`,
		"override bad date":     `{"timeZone":"UTC","specialists":[{"id":"x"}],"overrides":[{"specialistId":"x","date":"01/01/2026"}]}`,
	}
	for name, body := range cases {
		p := dir + "/" + name + ".json"
		if err := writeFile(p, body); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadScheduleFile(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Readers filling the cache while bookings invalidate it: once the
// writers stop, the cached answer equals a fresh computation (no fill
// computed before an invalidation survived it).
