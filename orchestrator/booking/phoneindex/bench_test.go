package phoneindex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/redistest"
)

// The original's phone search (GetPatientList, then GetPatientInformation
// for 200 patients, 10 at a time, per call) against a search whose
// records are kept (one GetPatientList), on the simulator with 5 ms of latency per Cloud9 answer:
//
//	go test -run '^$' -bench . -benchtime 20x ./orchestrator/booking/phoneindex/
func BenchmarkPhoneSearch(b *testing.B) {
	e := familytest.New(b, cloud9sim.Config{})
	for i := range 200 {
		e.Patient(b, fmt.Sprintf("Kid%03d", i), "Smith", fmt.Sprintf("412-555-%04d", i))
	}
	e.Sim.SetFaults(cloud9sim.Faults{Latency: 5 * time.Millisecond})
	ctx := context.Background()

	b.Run("original_per_call_crawl", func(b *testing.B) {
		for range b.N {
			list, err := e.Client.GetPatientList(ctx, []string{e.Location()})
			if err != nil {
				b.Fatal(err)
			}
			for lo := 0; lo < len(list) && lo < 200; lo += 10 {
				done := make(chan error, 10)
				n := 0
				for _, r := range list[lo:min(lo+10, len(list))] {
					n++
					go func() { _, err := e.Client.GetPatientInformation(ctx, r.Get("PatientGUID")); done <- err }()
				}
				for range n {
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
	b.Run("kept_records_lookup", func(b *testing.B) {
		db := redistest.New(b)
		x, err := phoneindex.New(db.Client, e.Client, phoneindex.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Lookup(ctx, "4125550123", ""); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			res, err := x.Lookup(ctx, "4125550123", "")
			if err != nil || len(res.Matches) != 1 {
				b.Fatalf("%v %d", err, len(res.Matches))
			}
		}
	})
}
