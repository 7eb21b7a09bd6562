package availability

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

// rangeReader records the date ranges (in its zone) it is asked for and
// answers one open slot of type-a in chair-1 at 9:00 on every date of it,
// the last included (as Cloud9Slots: whole days from from's to to's).
type rangeReader struct {
	loc    *time.Location
	mu     sync.Mutex
	ranges []string
}

func (r *rangeReader) OpenSlots(_ context.Context, from, to time.Time) ([]slots.Slot, error) {
	lo, hi := DateIn(from, r.loc), DateIn(to, r.loc)
	r.mu.Lock()
	r.ranges = append(r.ranges, lo.Format(DateLayout)+".."+hi.Format(DateLayout))
	r.mu.Unlock()
	var out []slots.Slot
	for d := lo; !d.After(hi); d = d.AddDate(0, 0, 1) {
		out = append(out, slots.Slot{StartTime: d.Format("1/2/2006") + " 9:00:00 AM", ScheduleViewGUID: "view",
			ScheduleColumnGUID: "chair-1", AppointmentTypeGUID: "type-a", Minutes: 30, LocationGUID: "loc"})
	}
	return out, nil
}

func (r *rangeReader) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ranges
	r.ranges = nil
	return out
}

// Whatever window a caller asks for, Cloud9Source reads whole blocks of
// Horizon days aligned on today, none before today or past Reach: distinct
// windows and dates (an anonymous /v1 caller's choice) share the few
// blocks' slot-cache entries instead of costing a Cloud9 read each.
func TestCloud9SourceReadsAlignedBlocks(t *testing.T) {
	loc := chicago(t)
	now := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC) // 08:00 in Chicago
	today := DateIn(now, loc)
	r := &rangeReader{loc: loc}
	src := Cloud9Source{Slots: r, Loc: loc, Horizon: 28, Reach: 196, Now: func() time.Time { return now }}
	snap, err := src.Snapshot(bg)
	if err != nil {
		t.Fatal(err)
	}
	block := func(b, n int) string {
		lo := today.AddDate(0, 0, 28*b)
		return lo.Format(DateLayout) + ".." + lo.AddDate(0, 0, 28*n).Format(DateLayout)
	}
	if got := r.take(); !reflect.DeepEqual(got, []string{block(0, 1)}) {
		t.Fatalf("the snapshot read %v", got)
	}
	typ := snap.Types[0]
	for _, tc := range []struct {
		name       string
		from, days int // from today
		reads      []string
		openings   int
	}{
		{"inside the horizon: the snapshot's list", 3, 7, nil, 7},
		{"one day in block 1", 30, 1, []string{block(1, 1)}, 1},
		{"another day of block 1", 41, 1, []string{block(1, 1)}, 1},
		{"a window across blocks 1 and 2", 50, 10, []string{block(1, 1), block(2, 1)}, 10},
		{"the last day within reach", 195, 1, []string{block(6, 1)}, 1},
		{"across reach: its last block, nothing from reach on", 190, 14, []string{block(6, 1)}, 6},
		{"past reach: no read, nothing offered", 196, 5, nil, 0},
		{"years ahead", 3650, 1, nil, 0},
		{"before today: no read", -40, 10, nil, 0},
		{"from yesterday: today's block", -1, 3, []string{block(0, 1)}, 2},
	} {
		open, err := src.Openings(bg, snap, typ, today.AddDate(0, 0, tc.from), tc.days)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := r.take(); !reflect.DeepEqual(got, tc.reads) {
			t.Errorf("%s: read %v, want %v", tc.name, got, tc.reads)
		}
		if len(open) != tc.openings {
			t.Errorf("%s: %d openings, want %d", tc.name, len(open), tc.openings)
		}
	}
	// OpenSlot (a web booking of a held slot) reads the slot's block too.
	start := slots.WallInstant(loc, today.AddDate(0, 0, 60), 9*60)
	if _, found, err := src.OpenSlot(bg, "type-a", "chair-1", start); err != nil || !found {
		t.Fatalf("OpenSlot: %v %v", found, err)
	}
	if got := r.take(); !reflect.DeepEqual(got, []string{block(2, 1)}) {
		t.Fatalf("OpenSlot read %v", got)
	}
}
