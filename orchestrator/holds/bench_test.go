package holds_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/redistest"
)

// BenchmarkClaimRelease is one hold claimed and released through the
// engine (no HTTP), 64 goroutines. Reproduce:
// go test -run '^$' -bench ClaimRelease -benchtime 20000x ./orchestrator/holds/
func BenchmarkClaimRelease(b *testing.B) {
	db := redistest.New(b)
	eng, err := holds.New(db.Client, holds.Config{KeyPrefix: fmt.Sprintf("bench%d:", time.Now().UnixNano())})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b.SetParallelism(32) // × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := time.Now().UnixNano()
		i := 0
		for pb.Next() {
			i++
			start := base.Add(time.Duration(i) * time.Minute)
			client := fmt.Sprint("c", g, "-", i)
			h, err := eng.Claim(ctx, holds.ClaimRequest{AppointmentTypeID: "t", ClientID: client, SlotStart: start,
				SlotEnd: start.Add(30 * time.Minute), SpecialistID: fmt.Sprint("s", g)})
			if err != nil {
				b.Error(err)
				return
			}
			if ok, err := eng.Release(ctx, client, h.HoldID); err != nil || !ok {
				b.Error(ok, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
