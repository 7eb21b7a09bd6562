package availability

// The /v1 bookings the catalogue records: candidates at a slot, booking
// records (retries, pruning, overlap across types) and bookings racing
// timeslot reads. The timeslot answers and their cache are in catalog_test.go.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

func TestCandidates(t *testing.T) {
	b := setup(t, newDB(t))
	tue0900 := utc("2026-11-24T15:00:00Z") // Tuesday 09:00 CST: Baker (09:00) on the grid, Chen (07:30 + 40k) not
	end, cands, err := b.catalog.Candidates(bg, "consultation", tue0900, "")
	if err != nil || !end.Equal(tue0900.Add(30*time.Minute)) || len(cands) != 1 || cands[0] != (Candidate{SpecialistID: "dr-baker", Priority: 5}) {
		t.Fatalf("end %s cands %v err %v", end, cands, err)
	}
	mon1300 := utc("2026-11-23T19:00:00Z")
	_, cands, err = b.catalog.Candidates(bg, "consultation", mon1300, "")
	if err != nil || !slices.Equal(cands, []Candidate{{SpecialistID: "dr-adams", Priority: 10}, {SpecialistID: "dr-baker", Priority: 5}}) {
		t.Fatalf("Monday 13:00: %v err %v", cands, err)
	}
	if err := b.catalog.RecordBooking(bg, Appointment{AppointmentID: "a1", AppointmentTypeID: "consultation", SpecialistID: "dr-adams",
		ClientID: "c", SlotStartDate: mon1300, SlotEndDate: mon1300.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_, cands, _ = b.catalog.Candidates(bg, "consultation", mon1300, "")
	if !slices.Equal(cands, []Candidate{{SpecialistID: "dr-baker", Priority: 5}}) {
		t.Fatalf("after booking Adams: %v", cands)
	}
	_, cands, err = b.catalog.Candidates(bg, "consultation", mon1300, "dr-adams")
	if err != nil || len(cands) != 0 {
		t.Fatalf("booked specialist named: %v err %v (want none free)", cands, err)
	}
	refusals := []struct {
		typ, spec string
		start     time.Time
		want      error
	}{
		{"nope", "", mon1300, ErrNotFound},
		{"consultation", "ghost", mon1300, ErrNotFound},
		{"adjustment", "dr-adams", mon1300, ErrNotFound},
		{"consultation", "", mon1300.Add(time.Minute), ErrNotOnGrid},
		{"consultation", "dr-adams", tue0900, ErrNotOnGrid},             // Adams does not work Tuesdays
		{"consultation", "", utc("2026-11-23T13:20:00Z"), ErrNotOnGrid}, // before now
	}
	for _, r := range refusals {
		if _, _, err := b.catalog.Candidates(bg, r.typ, r.start, r.spec); !errors.Is(err, r.want) {
			t.Errorf("%s/%s at %s: err %v, want %v", r.typ, r.spec, r.start, err, r.want)
		}
	}
}

func TestBookingRecords(t *testing.T) {
	b := setup(t, newDB(t))
	a := Appointment{AppointmentID: "a1", AppointmentTypeID: "consultation", SpecialistID: "dr-adams", ClientID: "c",
		SlotStartDate: utc("2026-11-23T19:00:00Z"), SlotEndDate: utc("2026-11-23T19:30:00Z"), BookedAt: monday0800}
	if err := b.catalog.RecordBooking(bg, a); err != nil {
		t.Fatal(err)
	}
	if err := b.catalog.RecordBooking(bg, a); err != nil {
		t.Fatalf("recording the same appointment again: %v", err)
	}
	retry := a
	retry.BookedAt = monday0800.Add(3 * time.Second)
	if err := b.catalog.RecordBooking(bg, retry); err != nil {
		t.Fatalf("a retried /book (same id and slot, later bookedAt): %v", err)
	}
	if n := b.rdb.HLen(bg, b.store.keys.appointments()).Val(); n != 1 {
		t.Fatalf("%d appointments recorded for one booking", n)
	}
	other := a
	other.SpecialistID = "dr-baker"
	if err := b.catalog.RecordBooking(bg, other); !errors.Is(err, ErrConflict) {
		t.Fatalf("another appointment with the id: %v", err)
	}
	bad := a
	bad.AppointmentTypeID = "nope"
	if err := b.catalog.RecordBooking(bg, bad); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown type: %v", err)
	}
	got, err := b.catalog.CancelBooking(bg, "a1")
	if err != nil || got.SpecialistID != "dr-adams" || !got.SlotStartDate.Equal(a.SlotStartDate) {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	if _, err := b.catalog.CancelBooking(bg, "a1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second cancel: %v", err)
	}
	if n := b.rdb.HLen(bg, b.store.keys.appointments()).Val() + b.rdb.ZCard(bg, b.store.keys.appointmentsByEnd()).Val(); n != 0 {
		t.Fatalf("%d appointment entries left", n)
	}
}

func TestEndedAppointmentsArePruned(t *testing.T) {
	b := setup(t, newDB(t))
	old := Appointment{AppointmentID: "old", AppointmentTypeID: "consultation", SpecialistID: "dr-adams",
		SlotStartDate: utc("2026-11-23T19:00:00Z"), SlotEndDate: utc("2026-11-23T19:30:00Z")}
	if err := b.catalog.RecordBooking(bg, old); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(DefaultRetention + 24*time.Hour)
	next := old
	next.AppointmentID, next.SlotStartDate, next.SlotEndDate = "new", b.clock.Now().Add(time.Hour), b.clock.Now().Add(90*time.Minute)
	if err := b.catalog.RecordBooking(bg, next); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.store.Appointment(bg, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ended appointment kept past the retention: %v", err)
	}
}

// Concurrent admin changes are never lost (read–check–write in one
// script) and concurrent recordings of one id keep exactly one.
func TestConcurrentReadsAndBookings(t *testing.T) {
	b := setup(t, newDB(t))
	q := TimeslotQuery{AppointmentTypeID: "consultation", From: mustDate("2026-11-23"), Days: 7}
	start := utc("2026-11-24T15:00:00Z") // Tuesday, Baker's grid: 09:00 CST + 40 min steps
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := b.catalog.Timeslots(bg, q); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 12 {
		s := start.Add(time.Duration(i) * 40 * time.Minute)
		if err := b.catalog.RecordBooking(bg, Appointment{AppointmentID: fmt.Sprintf("b%d", i), AppointmentTypeID: "consultation",
			SpecialistID: "dr-baker", SlotStartDate: s, SlotEndDate: s.Add(30 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cached, err := b.catalog.Timeslots(bg, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cached.Slots {
		if s.SlotStartDate.After(start.Add(-time.Minute)) && s.SlotStartDate.Before(start.Add(8*time.Hour)) && slices.Contains(s.SpecialistIDs, "dr-baker") {
			t.Fatalf("booked slot %s still offers dr-baker (cached=%v)", s.SlotStartDate, cached.Cached)
		}
	}
}

// A specialist's appointments never overlap, whatever their types: the
// record script refuses one that overlaps another widened by the new
// type's buffer (consultation: 10 minutes; adjustment: none) with 409.
func TestRecordRefusesOverlapAcrossTypes(t *testing.T) {
	b := setup(t, newDB(t))
	rec := func(id, typ, spec, start string, minutes int) error {
		s := utc(start)
		return b.catalog.RecordBooking(bg, Appointment{AppointmentID: id, AppointmentTypeID: typ, SpecialistID: spec,
			ClientID: "c", SlotStartDate: s, SlotEndDate: s.Add(time.Duration(minutes) * time.Minute), BookedAt: monday0800})
	}
	if err := rec("adj1", "adjustment", "dr-baker", "2026-11-23T19:00:00Z", 20); err != nil {
		t.Fatal(err)
	}
	if err := rec("con1", "consultation", "dr-baker", "2026-11-23T19:25:00Z", 30); !errors.Is(err, ErrConflict) {
		t.Fatalf("19:25 consultation within the 10-minute buffer of the 19:00-19:20 adjustment: %v", err)
	} else if ce := (*contracts.Error)(nil); !errors.As(err, &ce) || ce.Code.HTTPStatus() != 409 {
		t.Fatalf("not a 409: %v", err)
	}
	if err := rec("con2", "consultation", "dr-baker", "2026-11-23T19:30:00Z", 30); err != nil {
		t.Fatalf("19:30 consultation, just clear of the buffer: %v", err)
	}
	if err := rec("adj2", "adjustment", "dr-chen", "2026-11-23T19:10:00Z", 20); err != nil {
		t.Fatalf("another specialist: %v", err)
	}
	if err := rec("adj3", "adjustment", "dr-baker", "2026-11-23T19:50:00Z", 20); !errors.Is(err, ErrConflict) {
		t.Fatalf("adjustment overlapping the 19:30-20:00 consultation: %v", err)
	}
	if n := b.rdb.HLen(bg, b.store.keys.appointments()).Val(); n != 3 {
		t.Fatalf("%d appointments recorded, want 3", n)
	}
}
