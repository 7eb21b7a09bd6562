package availability

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowgate/flowgate/test/logtest"
)

// restoreLine is the warning of the instance whose write restored the
// schedule.
const restoreLine = "stored the schedule file's again"

// Redis lost the schedule (a FLUSHDB, a failover to an
// empty replica answered 503 until a restart). Two instances — a Store and
// a Catalog each, on the same keys — read it from 32 goroutines at once:
// every read answers, the file's schedule is stored exactly once (one
// warning, version 1) and the timeslots cached from the lost schedule are
// invalidated.
func TestScheduleRestoredOnceAfterRedisLostIt(t *testing.T) {
	b := setup(t, newDB(t))
	sched, hash, err := LoadScheduleFile(filepath.Join("testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := update(b, DeleteSpecialist("dr-chen")); err != nil {
		t.Fatal(err)
	}
	b.fillAll2(t)
	if len(b.keysLike(t, "timeslots:*")) == 0 {
		t.Fatal("nothing cached before the loss")
	}

	logs := &logtest.Buffer{}
	instance := func() *Catalog {
		store, err := NewStore(b.rdb, StoreConfig{KeyPrefix: b.prefix, Now: b.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		seed := &ScheduleSeed{Schedule: sched, Hash: hash, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
		cat, err := NewCatalog(CatalogConfig{Source: ScheduleSource{Store: store, Seed: seed}, Store: store, Now: b.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return cat
	}
	cats := []*Catalog{instance(), instance()}

	if err := b.rdb.Del(bg, b.prefix+"{availability}:schedule").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.catalog.AppointmentTypes(bg); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("without a seed a lost schedule is ErrUnavailable, got %v", err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			types, err := cats[i%2].AppointmentTypes(bg)
			if err == nil && len(types) == 0 {
				err = errors.New("no appointment types")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a read after the loss: %v", err)
		}
	}
	if n := len(logs.Lines(restoreLine)); n != 1 {
		t.Fatalf("restored %d times across two instances, want once:\n%s", n, logs.String())
	}
	if v := b.rdb.HGet(bg, b.prefix+"{availability}:schedule", "version").Val(); v != "1" {
		t.Fatalf("schedule version %q after the restore, want 1 (one write)", v)
	}
	if s, _, _, _ := b.store.Schedule(bg); s.specialistIndex("dr-chen") < 0 {
		t.Fatal("the restore did not store the file's schedule (dr-chen, deleted by the admin change, is the file's)")
	}
	if ks := b.keysLike(t, "timeslots:*"); len(ks) != 0 {
		t.Fatalf("timeslots cached from the lost schedule survived its restore: %v", ks)
	}

	// Stored again, a read restores nothing; the admin endpoints heal too.
	if _, err := cats[0].AppointmentTypes(bg); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.Del(bg, b.prefix+"{availability}:schedule").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := cats[1].Schedule(bg); err != nil {
		t.Fatalf("admin read after the loss: %v", err)
	}
	if err := b.rdb.Del(bg, b.prefix+"{availability}:schedule").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := cats[0].Update(bg, DeleteSpecialist("dr-chen")); err != nil {
		t.Fatalf("admin change after the loss: %v", err)
	}
	if n := len(logs.Lines(restoreLine)); n != 3 {
		t.Fatalf("%d restores after three losses:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("a restore is a warning:\n%s", logs.String())
	}
}

// RestoreSchedule keeps a schedule that is stored (an admin change, another
// instance's restore): it writes only where none is.
func TestRestoreScheduleKeepsAStoredOne(t *testing.T) {
	b := setup(t, newDB(t))
	sched, hash, err := LoadScheduleFile(filepath.Join("testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := update(b, DeleteSpecialist("dr-chen")); err != nil {
		t.Fatal(err)
	}
	stored, err := b.store.RestoreSchedule(bg, sched, hash)
	if err != nil || stored {
		t.Fatalf("stored=%v err=%v over a stored schedule", stored, err)
	}
	if s, _, _, _ := b.store.Schedule(bg); s.specialistIndex("dr-chen") >= 0 {
		t.Fatal("RestoreSchedule replaced a stored schedule")
	}
}
