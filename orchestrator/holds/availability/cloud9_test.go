package availability

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// The Cloud9 source over the sandbox simulator and the shared slot cache:
// chairs are specialists, the Cloud9 type GUID the appointment type, wall
// clocks read in the location's zone, booked slots leave the answer.
func TestCloud9Source(t *testing.T) {
	loc := chicago(t)
	sim := cloud9sim.New(cloud9sim.Config{WriteLimit: cloud9sim.Unlimited, TimeZone: loc})
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	client, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "x", Username: "x", Password: "x", VendorUsername: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	rdb := newDB(t)
	cache, err := slots.NewCache(rdb, slots.CacheConfig{KeyPrefix: "c9test"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewStore(rdb, StoreConfig{KeyPrefix: "c9test:"})
	if err != nil {
		t.Fatal(err)
	}
	reader := Cloud9Slots{Cloud9: client, Cache: cache, LocationGUID: cloud9sim.DefaultLocationGUID, Loc: loc, FreshFor: time.Hour}
	cat, err := NewCatalog(CatalogConfig{Source: Cloud9Source{Slots: reader, Loc: loc, Horizon: 7}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if cat.Editable() {
		t.Fatal("the Cloud9 source must not take admin changes")
	}
	if _, err := cat.Update(bg, DeleteSpecialist("x")); !errorsIs(err, ErrConflict) {
		t.Fatalf("admin change on Cloud9: %v", err)
	}
	at, err := cat.AppointmentType(bg, cloud9sim.DefaultAppointmentTypeGUID)
	if err != nil {
		t.Fatal(err)
	}
	if at.DurationMinutes != 45 || len(at.SpecialistIDs) != len(cloud9sim.DefaultChairs()) || at.CooldownMinutes != DefaultCooldownMinutes {
		t.Fatalf("type %+v", at)
	}
	ts, err := cat.Timeslots(bg, TimeslotQuery{AppointmentTypeID: at.ID, Days: 7})
	if err != nil || len(ts.Slots) == 0 {
		t.Fatalf("%d slots, err %v", len(ts.Slots), err)
	}
	calls := sim.Calls("GetOnlineReservations")
	// Every slot's instant shows, in Chicago, the wall clock Cloud9 offered.
	list, err := reader.OpenSlots(bg, time.Now(), time.Now().AddDate(0, 0, 7))
	if err != nil {
		t.Fatal(err)
	}
	if sim.Calls("GetOnlineReservations") != calls {
		t.Fatal("a fresh cached list was not used")
	}
	walls := map[string]bool{}
	for _, s := range list {
		w, _ := s.Start()
		walls[w.Format("2006-01-02 15:04")+"|"+s.ScheduleColumnGUID] = true
	}
	for _, s := range ts.Slots {
		for _, id := range s.SpecialistIDs {
			if k := s.SlotStartDate.In(loc).Format("2006-01-02 15:04") + "|" + id; !walls[k] {
				t.Fatalf("slot %s for %s is not a Cloud9 open slot", k, id)
			}
		}
	}
	first := ts.Slots[0]
	end, cands, err := cat.Candidates(bg, at.ID, first.SlotStartDate, "")
	if err != nil || !end.Equal(first.SlotStartDate.Add(45*time.Minute)) || len(cands) != len(first.SpecialistIDs) {
		t.Fatalf("candidates %v end %s err %v", cands, end, err)
	}
	chair := first.SpecialistIDs[0]
	if err := cat.RecordBooking(bg, Appointment{AppointmentID: "c9-1", AppointmentTypeID: at.ID, SpecialistID: chair,
		SlotStartDate: first.SlotStartDate, SlotEndDate: end, BookedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	again, err := cat.Timeslots(bg, TimeslotQuery{AppointmentTypeID: at.ID, Days: 7})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := findSlot(again.Slots, first.SlotStartDate.Format(time.RFC3339)); ok && slices.Contains(s.SpecialistIDs, chair) {
		t.Fatalf("booked chair still offered at %s", first.SlotStartDate)
	}
	if _, _, err := cat.Candidates(bg, at.ID, first.SlotStartDate.Add(time.Minute), ""); !errorsIs(err, ErrNotOnGrid) {
		t.Fatalf("off-grid start: %v", err)
	}
}

// A Cloud9 slot booked in Cloud9 (by anyone) leaves the open list; a hold
// on it is refused as taken (ErrSlotTaken, 409), not as off the grid,
// while a start Cloud9 never offers stays ErrNotOnGrid. OpenSlot finds an
// open slot's Cloud9 record, and not a booked one.
func TestCloud9BookedSlotIsTaken(t *testing.T) {
	loc := chicago(t)
	sim := cloud9sim.New(cloud9sim.Config{WriteLimit: cloud9sim.Unlimited, TimeZone: loc})
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	client, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "x", Username: "x", Password: "x", VendorUsername: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	store, err := NewStore(newDB(t), StoreConfig{KeyPrefix: "c9taken:"})
	if err != nil {
		t.Fatal(err)
	}
	// no slot cache: every read asks the simulator
	src := Cloud9Source{Slots: Cloud9Slots{Cloud9: client, LocationGUID: cloud9sim.DefaultLocationGUID, Loc: loc}, Loc: loc, Horizon: 14}
	cat, err := NewCatalog(CatalogConfig{Source: src, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	typ := cloud9sim.DefaultAppointmentTypeGUID
	ts, err := cat.Timeslots(bg, TimeslotQuery{AppointmentTypeID: typ, Days: 7})
	if err != nil || len(ts.Slots) == 0 {
		t.Fatalf("%d slots, err %v", len(ts.Slots), err)
	}
	first := ts.Slots[0]
	chair := first.SpecialistIDs[0]
	sl, found, err := src.OpenSlot(bg, typ, strings.ToUpper(chair), first.SlotStartDate)
	if err != nil || !found || !strings.EqualFold(sl.ScheduleColumnGUID, chair) || sl.ScheduleViewGUID == "" {
		t.Fatalf("OpenSlot: %+v found %v err %v", sl, found, err)
	}
	pat, _, err := client.SetPatient(bg, cloud9.PatientInput{FirstName: "Tess", LastName: "Taken",
		ProviderGUID: cloud9sim.DefaultOrthodontistGUID, LocationGUID: cloud9sim.DefaultLocationGUID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.SetAppointment(bg, cloud9.AppointmentInput{PatientGUID: pat, StartTime: sl.StartTime,
		ScheduleViewGUID: sl.ScheduleViewGUID, ScheduleColumnGUID: sl.ScheduleColumnGUID, AppointmentTypeGUID: typ,
		Minutes: sl.Minutes}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := src.OpenSlot(bg, typ, chair, first.SlotStartDate); err != nil || found {
		t.Fatalf("booked slot still open: found %v err %v", found, err)
	}
	_, _, err = cat.Candidates(bg, typ, first.SlotStartDate, chair)
	if !errorsIs(err, ErrSlotTaken) || contracts.ErrorCode(err) != contracts.CodeConflict {
		t.Fatalf("booked chair: %v", err)
	}
	var ce *contracts.Error
	if !errors.As(err, &ce) || ce.Details["reason"] != "slot_taken" {
		t.Fatalf("details: %+v", ce)
	}
	// another chair is still free at that start
	if _, cands, err := cat.Candidates(bg, typ, first.SlotStartDate, ""); err != nil || len(cands) != len(first.SpecialistIDs)-1 {
		t.Fatalf("other chairs: %v %v", cands, err)
	}
	// the same wall clock a week later is on the grid; 7 minutes off is not
	if _, _, err := cat.Candidates(bg, typ, first.SlotStartDate.Add(7*time.Minute), chair); !errorsIs(err, ErrNotOnGrid) {
		t.Fatalf("off-grid start: %v", err)
	}
	// the same weekday and wall clock past the simulator's 90 days and the
	// source's horizon: not offered, and not known to be booked
	if _, _, err := cat.Candidates(bg, typ, first.SlotStartDate.AddDate(0, 0, 98), chair); !errorsIs(err, ErrNotOnGrid) {
		t.Fatalf("far start: %v", err)
	}
}
