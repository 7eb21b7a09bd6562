package availability

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuClock is the process's user+system CPU time: on a machine shared with
// other work, wall time per op measures the queue for a core, CPU time
// per op the work itself. Benchmarks report both.
func cpuClock(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs fn, adding its CPU time to *cpu.
func timed(b *testing.B, cpu *time.Duration, fn func()) {
	start := cpuClock(b)
	fn()
	*cpu += cpuClock(b) - start
}

func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// benchSchedule is 20 specialists working Monday–Saturday 08:00–12:00 and
// 13:00–18:00 (America/Chicago) on one 30-minute type with a 10-minute
// buffer: ~13 slots per specialist-day, ~20,000 openings over 90 days.
func benchSchedule() Schedule {
	s := Schedule{TimeZone: "America/Chicago"}
	hours := WeeklyHours{}
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat"} {
		hours[d] = []Interval{{"08:00", "12:00"}, {"13:00", "18:00"}}
	}
	t := AppointmentType{ID: "bench", Name: "Bench", DurationMinutes: 30, BufferMinutes: 10, CooldownMinutes: 60}
	for i := range 20 {
		id := fmt.Sprintf("spec-%02d", i)
		s.Specialists = append(s.Specialists, ScheduledSpecialist{Specialist: Specialist{ID: id, Name: id, Priority: i % 3}, WeeklyHours: hours})
		t.SpecialistIDs = append(t.SpecialistIDs, id)
	}
	s.AppointmentTypes = []AppointmentType{t}
	s.normalize()
	return s
}

// benchCatalog stores benchSchedule and 200 appointments in a leased
// database.
func benchCatalog(b *testing.B) (*bundle, TimeslotQuery) {
	b.Helper()
	bd := setup(b, newDB(b))
	if _, err := bd.store.SeedSchedule(bg, benchSchedule(), "bench"); err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		start := monday0800.Add(time.Duration(i) * 7 * time.Hour).Truncate(time.Hour)
		if err := bd.catalog.RecordBooking(bg, Appointment{AppointmentID: fmt.Sprintf("a%d", i), AppointmentTypeID: "bench",
			SpecialistID: fmt.Sprintf("spec-%02d", i%20), SlotStartDate: start, SlotEndDate: start.Add(30 * time.Minute)}); err != nil {
			b.Fatal(err)
		}
	}
	return bd, TimeslotQuery{AppointmentTypeID: "bench", Days: 90}
}

// BenchmarkTimeslots is one GET's catalogue work for 20 specialists × 90
// days: uncached (the cache invalidated before each call: schedule and
// appointments read from Redis, grid, subtraction, pooling, encoding and
// the cache fill) and cached (one MGET and decoding).
func BenchmarkTimeslots(b *testing.B) {
	bd, q := benchCatalog(b)
	b.Run("uncached", func(b *testing.B) {
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			if _, err := bd.store.Invalidate(bg, "bench"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			timed(b, &cpu, func() {
				ts, err := bd.catalog.Timeslots(bg, q)
				if err != nil || ts.Cached || len(ts.Slots) == 0 {
					b.Fatalf("cached=%v slots=%d err %v", ts.Cached, len(ts.Slots), err)
				}
			})
		}
		reportCPU(b, cpu)
	})
	b.Run("cached", func(b *testing.B) {
		var cpu time.Duration
		for b.Loop() {
			timed(b, &cpu, func() {
				ts, err := bd.catalog.Timeslots(bg, q)
				if err != nil || !ts.Cached {
					b.Fatalf("cached=%v err %v", ts.Cached, err)
				}
			})
		}
		reportCPU(b, cpu)
	})
}

// BenchmarkGrid is the pure part: Grid, Free and Pool for 20 specialists
// × 90 days.
func BenchmarkGrid(b *testing.B) {
	s := benchSchedule()
	loc, _ := s.Location()
	t := s.AppointmentTypes[0]
	in := GridInput{Loc: loc, From: DateIn(monday0800, loc), Days: 90, Duration: t.Duration(), Buffer: t.Buffer(), Specialists: s.hours(t.SpecialistIDs)}
	prio := map[string]int{}
	var cpu time.Duration
	for b.Loop() {
		timed(b, &cpu, func() {
			if slots := Pool(Free(Grid(in), nil, t.Buffer()), prio); len(slots) == 0 {
				b.Fatal("no slots")
			}
		})
	}
	reportCPU(b, cpu)
}
