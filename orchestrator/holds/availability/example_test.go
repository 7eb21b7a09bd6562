package availability_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/orchestrator/holds/availability"
)

// A specialist working 00:00–03:00 on Chicago's fall-back night works four
// real hours: 01:00 happens twice, as two instants.
func ExampleGrid() {
	loc, _ := time.LoadLocation("America/Chicago")
	day, _ := availability.ParseDate("2026-11-01")
	open := availability.Grid(availability.GridInput{
		Loc: loc, From: day, Days: 1, Duration: time.Hour,
		Specialists: []availability.SpecialistHours{{ID: "dr-a",
			Weekly: availability.WeeklyHours{"sun": {{Start: "00:00", End: "03:00"}}}}},
	})
	for _, o := range open {
		fmt.Println(o.Start.Format(time.RFC3339), o.Start.In(loc).Format("15:04 MST"))
	}
	// Output:
	// 2026-11-01T05:00:00Z 00:00 CDT
	// 2026-11-01T06:00:00Z 01:00 CDT
	// 2026-11-01T07:00:00Z 01:00 CST
	// 2026-11-01T08:00:00Z 02:00 CST
}
