package test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// Web holds of a Cloud9 type while Cloud9 takes 3 s to list the 28-day
// horizon, which no create has read yet. Within BOOKING_SYNC_BUDGET (the
// Cloud9 catalogue's budget, as the timeslots'; HOLDS_REQUEST_TIMEOUT's
// 2 s keeps bounding the hold's Redis work) the create waits for the read
// and is answered 201. Past it the create answers 503, but the read it
// started goes on and fills the slot cache, so a create after Cloud9
// answered is served from it at once. Before, each create started a read
// and abandoned it at 2 s: no web hold of a Cloud9 type could be made.
// Reproduce: go test -run TestWebHoldWithASlowCloud9 -v ./test/
func TestWebHoldWithASlowCloud9(t *testing.T) {
	t.Parallel()
	sim := startSim(t, 60, "5/min")
	start := func(t *testing.T, budget string) (*proc, []contracts.ApptSlot) {
		env := map[string]string{"PRACTICE_TIME_ZONE": simZone}
		if budget != "" {
			env["BOOKING_SYNC_BUDGET"] = budget
		}
		p := startFlowgate(t, bookingEnv(newTestRedis(t).URL(), sim, "100/min", env))
		return p, distinctSlots(t, newBookingClient(t, p).slots("slow-1", 2), 2)
	}
	slow := func(t *testing.T) {
		sim.setFaults(cloud9sim.FaultsJSON{Latency: "3s", Procedures: []string{"GetOnlineReservations"}})
		t.Cleanup(func() { sim.setFaults(cloud9sim.FaultsJSON{}) })
	}
	timed := func(t *testing.T, p *proc, client string, s contracts.ApptSlot) (int, time.Duration) {
		t0 := time.Now()
		status, _ := binaryHold(t, p.Base, s.AppointmentTypeGUID, client, s)
		return status, time.Since(t0)
	}

	t.Run("within the budget", func(t *testing.T) {
		p, list := start(t, "")
		slow(t)
		status, took := timed(t, p, "web-1", list[0])
		require.Equal(t, http.StatusCreated, status)
		require.GreaterOrEqual(t, took, 2900*time.Millisecond, "not the read started here")
	})
	t.Run("past the budget", func(t *testing.T) {
		p, list := start(t, "2s")
		slow(t)
		status, took := timed(t, p, "web-1", list[0])
		require.Equal(t, http.StatusServiceUnavailable, status, "Cloud9 answers after the budget")
		require.Less(t, took, 2900*time.Millisecond, "the create waited past its budget")
		time.Sleep(2 * time.Second) // Cloud9 answers the read the first create started
		status, took = timed(t, p, "web-1", list[0])
		require.Equal(t, http.StatusCreated, status, "the read the first create started was abandoned")
		require.Less(t, took, 2500*time.Millisecond, "served by a read of its own (3 s), not from the cache")
	})
}
