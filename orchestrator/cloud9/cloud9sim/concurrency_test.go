package cloud9sim_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func TestConcurrentBookingsOfOneSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	patients := make([]string, n)
	for i := range patients {
		patients[i] = b.createPatient(t, "P", "Racer")
	}
	results := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = b.book(t, patients[i], "11/24/2026 9:30:00 AM", cloud9sim.Chair8GUID).result(t)
		}()
	}
	close(start)
	wg.Wait()

	won := 0
	for _, r := range results {
		if strings.HasPrefix(r, "Appointment GUID Added: ") {
			won++
		} else {
			require.Equal(t, cloud9sim.ResultSlotTaken, r)
		}
	}
	require.Equal(t, 1, won)
	require.Len(t, b.sim.Appointments(), 1)
	require.Equal(t, n, b.sim.Calls("SetAppointment"))
}

func TestConcurrentMixedTraffic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := b.createPatient(t, "P", "Mixed")
			for i := 0; i < 5; i++ {
				slots := b.slots(t, "11/24/2026", "11/27/2026")
				s := slots[(g*5+i)%len(slots)]
				res := b.book(t, p, s["StartTime"], s["ScheduleColumnGUID"]).result(t)
				if strings.HasPrefix(res, "Appointment GUID Added: ") && i%2 == 0 {
					b.call(t, "SetAppointmentStatusCanceled", "apptGUID", strings.TrimPrefix(res, "Appointment GUID Added: "))
				}
				b.sim.SetFaults(cloud9sim.Faults{})
			}
		}()
	}
	wg.Wait()
	// No two active appointments share a chair and start.
	seen := map[string]bool{}
	for _, a := range b.sim.Appointments() {
		if a.Active() {
			k := a.ScheduleColumnGUID + a.Start.String()
			require.False(t, seen[k], "double booking %s", k)
			seen[k] = true
		}
	}
}
