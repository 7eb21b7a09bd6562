package availability

import (
	"slices"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

func chicago(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWallInstant(t *testing.T) {
	loc := chicago(t)
	cases := []struct {
		name   string
		date   string
		minute int
		want   string
	}{
		{"winter 09:00 CST", "2026-01-15", 9 * 60, "2026-01-15T15:00:00Z"},
		{"summer 09:00 CDT", "2026-07-15", 9 * 60, "2026-07-15T14:00:00Z"},
		{"spring-forward day before the gap", "2026-03-08", 60 + 59, "2026-03-08T07:59:00Z"},
		{"spring-forward gap 02:00 → 03:00 CDT", "2026-03-08", 2 * 60, "2026-03-08T08:00:00Z"},
		{"spring-forward gap 02:30 → 03:00 CDT", "2026-03-08", 2*60 + 30, "2026-03-08T08:00:00Z"},
		{"spring-forward 03:00 CDT", "2026-03-08", 3 * 60, "2026-03-08T08:00:00Z"},
		{"spring-forward 09:00 CDT", "2026-03-08", 9 * 60, "2026-03-08T14:00:00Z"},
		{"fall-back 00:30 CDT", "2026-11-01", 30, "2026-11-01T05:30:00Z"},
		{"fall-back ambiguous 01:00 → the earlier (CDT)", "2026-11-01", 60, "2026-11-01T06:00:00Z"},
		{"fall-back ambiguous 01:30 → the earlier (CDT)", "2026-11-01", 90, "2026-11-01T06:30:00Z"},
		{"fall-back 02:00 CST", "2026-11-01", 120, "2026-11-01T08:00:00Z"},
		{"fall-back 09:00 CST", "2026-11-01", 9 * 60, "2026-11-01T15:00:00Z"},
		{"24:00 is the next midnight", "2026-11-01", 24 * 60, "2026-11-02T06:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseDate(c.date)
			if err != nil {
				t.Fatal(err)
			}
			if got := slots.WallInstant(loc, d, c.minute); !got.Equal(utc(c.want)) {
				t.Fatalf("got %s (%s), want %s", got.UTC().Format(time.RFC3339), got.In(loc), c.want)
			}
		})
	}
}

func starts(list []Opening) []string {
	out := make([]string, len(list))
	for i, o := range list {
		out[i] = o.Start.UTC().Format(time.RFC3339)
	}
	return out
}

func TestGridDST(t *testing.T) {
	loc := chicago(t)
	allWeek := func(start, end string) WeeklyHours {
		w := WeeklyHours{}
		for _, k := range weekdayKeys {
			w[k] = []Interval{{start, end}}
		}
		return w
	}
	cases := []struct {
		name      string
		date      string
		hours     WeeklyHours
		dur, buf  time.Duration
		want      []string
		wantWalls []string // the location's wall clocks, for the reader
	}{
		{
			name: "spring-forward night: 00:00–05:00 is four real hours, no 02:00, nothing twice",
			date: "2026-03-08", hours: allWeek("00:00", "05:00"), dur: time.Hour,
			want:      []string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T09:00:00Z"},
			wantWalls: []string{"00:00 CST", "01:00 CST", "03:00 CDT", "04:00 CDT"},
		},
		{
			name: "spring-forward: hours opening inside the gap start when the clocks resume",
			date: "2026-03-08", hours: allWeek("02:30", "04:00"), dur: 30 * time.Minute,
			want:      []string{"2026-03-08T08:00:00Z", "2026-03-08T08:30:00Z"},
			wantWalls: []string{"03:00 CDT", "03:30 CDT"},
		},
		{
			name: "spring-forward day office hours: CDT from the first slot",
			date: "2026-03-08", hours: allWeek("09:00", "11:00"), dur: 30 * time.Minute, buf: 10 * time.Minute,
			want:      []string{"2026-03-08T14:00:00Z", "2026-03-08T14:40:00Z", "2026-03-08T15:20:00Z"},
			wantWalls: []string{"09:00 CDT", "09:40 CDT", "10:20 CDT"},
		},
		{
			name: "fall-back night: 00:00–03:00 is four real hours, 01:00 happens twice as two instants",
			date: "2026-11-01", hours: allWeek("00:00", "03:00"), dur: time.Hour,
			want:      []string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"},
			wantWalls: []string{"00:00 CDT", "01:00 CDT", "01:00 CST", "02:00 CST"},
		},
		{
			name: "fall-back: hours opening at the repeated 01:30 start at the first one",
			date: "2026-11-01", hours: allWeek("01:30", "02:00"), dur: 30 * time.Minute,
			want:      []string{"2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"},
			wantWalls: []string{"01:30 CDT", "01:00 CST", "01:30 CST"},
		},
		{
			name: "fall-back day office hours: CST",
			date: "2026-11-01", hours: allWeek("09:00", "10:00"), dur: 30 * time.Minute,
			want:      []string{"2026-11-01T15:00:00Z", "2026-11-01T15:30:00Z"},
			wantWalls: []string{"09:00 CST", "09:30 CST"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from, _ := ParseDate(c.date)
			got := Grid(GridInput{Loc: loc, From: from, Days: 1, Duration: c.dur, Buffer: c.buf,
				Specialists: []SpecialistHours{{ID: "s1", Weekly: c.hours}}})
			if !slices.Equal(starts(got), c.want) {
				t.Fatalf("starts %v, want %v", starts(got), c.want)
			}
			for i, o := range got {
				if w := o.Start.In(loc).Format("15:04 MST"); w != c.wantWalls[i] {
					t.Errorf("slot %d wall clock %s, want %s", i, w, c.wantWalls[i])
				}
				if o.End.Sub(o.Start) != c.dur {
					t.Errorf("slot %d lasts %s, want %s", i, o.End.Sub(o.Start), c.dur)
				}
			}
		})
	}
}

func TestGridWeekdaysAndOverrides(t *testing.T) {
	loc := chicago(t)
	from, _ := ParseDate("2026-11-23") // a Monday
	in := GridInput{Loc: loc, From: from, Days: 7, Duration: time.Hour, Specialists: []SpecialistHours{{
		ID:     "a",
		Weekly: WeeklyHours{"mon": {{"09:00", "11:00"}}, "tue": {{"09:00", "10:00"}, {"13:00", "14:30"}}, "wed": {{"09:00", "10:00"}}},
		Overrides: map[string][]Interval{
			"2026-11-25": {},                   // Wednesday closed
			"2026-11-28": {{"10:00", "11:00"}}, // Saturday opened
		},
	}}}
	want := []string{
		"2026-11-23T15:00:00Z", "2026-11-23T16:00:00Z", // Mon 09:00, 10:00 CST
		"2026-11-24T15:00:00Z", "2026-11-24T19:00:00Z", // Tue 09:00, 13:00 (13:00–14:30 fits one hour)
		"2026-11-28T16:00:00Z", // Sat 10:00 by override
	}
	if got := starts(Grid(in)); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestFree(t *testing.T) {
	at := func(s string) time.Time { return utc("2026-11-23T" + s + ":00Z") }
	grid := []Opening{
		{at("15:00"), at("15:30"), "a"}, {at("15:40"), at("16:10"), "a"}, {at("16:20"), at("16:50"), "a"},
		{at("15:00"), at("15:30"), "b"}, {at("15:40"), at("16:10"), "b"},
	}
	cases := []struct {
		name   string
		appts  []Appointment
		buffer time.Duration
		want   []Opening
	}{
		{"no appointments", nil, 10 * time.Minute, grid},
		{"an appointment takes its own slot only for its specialist",
			[]Appointment{{SpecialistID: "a", SlotStartDate: at("15:40"), SlotEndDate: at("16:10")}}, 10 * time.Minute,
			[]Opening{grid[0], grid[2], grid[3], grid[4]}},
		{"an off-grid appointment takes every slot it touches, buffer included",
			[]Appointment{{SpecialistID: "b", SlotStartDate: at("15:25"), SlotEndDate: at("15:35")}}, 10 * time.Minute,
			[]Opening{grid[0], grid[1], grid[2]}},
		{"the buffer keeps a slot ending 5 min before an appointment taken",
			[]Appointment{{SpecialistID: "a", SlotStartDate: at("16:15"), SlotEndDate: at("16:20")}}, 10 * time.Minute,
			[]Opening{grid[0], grid[3], grid[4]}},
		{"without a buffer back-to-back is fine",
			[]Appointment{{SpecialistID: "a", SlotStartDate: at("15:30"), SlotEndDate: at("15:40")}}, 0,
			grid},
		{"a long appointment and a short one inside it",
			[]Appointment{{SpecialistID: "a", SlotStartDate: at("14:00"), SlotEndDate: at("16:00")},
				{SpecialistID: "a", SlotStartDate: at("14:10"), SlotEndDate: at("14:20")}}, 0,
			[]Opening{grid[2], grid[3], grid[4]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Free(grid, c.appts, c.buffer)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v\nwant %v", starts(got), starts(c.want))
			}
		})
	}
}

func TestPool(t *testing.T) {
	at := func(s string) time.Time { return utc("2026-11-23T" + s + ":00Z") }
	open := []Opening{
		{at("16:00"), at("16:30"), "a"}, {at("15:00"), at("15:30"), "a"},
		{at("15:00"), at("15:30"), "c"}, {at("15:00"), at("15:30"), "b"},
	}
	got := Pool(open, map[string]int{"a": 1, "b": 5, "c": 5})
	if len(got) != 2 || !got[0].SlotStartDate.Equal(at("15:00")) || !got[1].SlotStartDate.Equal(at("16:00")) {
		t.Fatalf("slots %+v", got)
	}
	if want := []string{"b", "c", "a"}; !slices.Equal(got[0].SpecialistIDs, want) {
		t.Fatalf("15:00 specialists %v, want %v (priority, then id)", got[0].SpecialistIDs, want)
	}
}

func TestWeeklyHoursValidate(t *testing.T) {
	bad := []WeeklyHours{
		{"monday": {{"09:00", "10:00"}}},
		{"mon": {{"9:00", "10:00"}}},
		{"mon": {{"09:00", "24:01"}}},
		{"mon": {{"10:00", "09:00"}}},
		{"mon": {{"09:00", "11:00"}, {"10:00", "12:00"}}},
		{"mon": {{"09:60", "11:00"}}},
	}
	for _, w := range bad {
		if err := w.Validate(); err == nil {
			t.Errorf("%v: accepted", w)
		}
	}
	if err := (WeeklyHours{"mon": {{"00:00", "24:00"}}, "sun": nil}).Validate(); err != nil {
		t.Fatal(err)
	}
}
