package test

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/loadgen"
)

// Web holds of a Cloud9 appointment type through the binary with its
// default catalogue (no HOLDS_SCHEDULE_FILE: Cloud9's open slots, read
// through the shared slot cache) against the simulator: rounds of creates
// on every distinct slot getApptSlots offers, then their releases, 64
// connections; /healthz of the same process in the same run. Every create
// is checked 201 and every release 200, the first round's too, which
// meets a cold cache; after it no request reaches Cloud9 (the simulator's
// call count is checked). Reports
// requests/s and flowgate's CPU per request. FLOWGATE_HOLDS_PPROF=<file>
// writes a CPU profile of the first rounds. Reproduce:
// go test -run TestLoadHoldsCloud9Binary -v ./test/  (FLOWGATE_LOAD_N to scale)
func TestLoadHoldsCloud9Binary(t *testing.T) {
	n := loadSize()
	db := newTestRedis(t)
	sim := startSim(t, 60, "5/min")
	// HOLDS_REQUEST_TIMEOUT: the cold round's 64 creates wait together
	// on the one Cloud9 read of a 28-day list (under BOOKING_SYNC_BUDGET
	// since the catalogue has its own budget), then claim under this
	// bound; under -race on a CI box shared with another package's tests
	// the round's p99 reached 2 s when one bound covered both (503s, in CI
	// on 2026-11-29; 0.6 s alone). What is checked here is that each
	// create is answered 201 from that one read, not the Redis budget.
	env := bookingEnv(db.URL(), sim, "100/min", map[string]string{"PRACTICE_TIME_ZONE": simZone, "LOG_LEVEL": "warn",
		"HOLDS_MAX_PER_CLIENT": "1000", "HOLDS_REQUEST_TIMEOUT": "15s"})
	prof := os.Getenv("FLOWGATE_HOLDS_PPROF")
	if prof != "" {
		env["PPROF_ADDR"] = freeAddr(t)
	}
	p := startFlowgate(t, env)
	c := newBookingClient(t, p)
	list := c.slots("load", 1)
	list = distinctSlots(t, list, len(list))
	typ := list[0].AppointmentTypeGUID
	bodies := make([][]byte, 0, len(list))
	for i, s := range list {
		if s.AppointmentTypeGUID != typ {
			continue
		}
		b, err := json.Marshal(map[string]string{"appointmentTypeId": typ, "clientId": "c" + strconv.Itoa(i),
			"slotStartDate": holds.FormatStart(utc(t, s.StartTime)), "specialistId": col(s)})
		require.NoError(t, err)
		bodies = append(bodies, b)
	}
	t.Logf("%d distinct slots of type %s offered", len(bodies), typ)
	addr := p.Addr()
	// The first round meets a cold slot cache for the hold's 28-day
	// horizon: every create at once, each must still be answered 201 (the
	// callers that miss together share one Cloud9 read; getApptSlots'
	// tier refreshes may still be reading beside it).
	before := sim.state().Calls["GetOnlineReservations"]
	create, release := holdCycle(addr, bodies)
	require.Zero(t, create.Failures+release.Failures, "cold round: %v %v", create.FirstError, release.FirstError)
	t.Logf("cold round: %s; Cloud9 reads meanwhile: %d", create, sim.state().Calls["GetOnlineReservations"]-before)
	// Background tier refreshes may still be reading: wait until Cloud9
	// has had no read for half a second.
	calls := sim.state().Calls["GetOnlineReservations"]
	for quiet := time.Now(); time.Since(quiet) < 500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if c := sim.state().Calls["GetOnlineReservations"]; c != calls {
			calls, quiet = c, time.Now()
		}
	}

	health := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
		Build: func(_ int, req *fasthttp.Request) { req.SetRequestURI("http://" + addr + "/healthz") },
		Check: status(200)})
	rounds := max(1, n/len(bodies))
	cpu0 := procCPU(p.PID())
	wait := profileCPU(t, env["PPROF_ADDR"], prof, 3*time.Second)
	var elapsed time.Duration
	for range rounds {
		create, release := holdCycle(addr, bodies)
		require.Zero(t, create.Failures+release.Failures, "%v %v", create.FirstError, release.FirstError)
		elapsed += create.Elapsed + release.Elapsed
	}
	cpu := float64(procCPU(p.PID())-cpu0) / 100
	wait()
	reqs := float64(2 * rounds * len(bodies))
	require.Equal(t, calls, sim.state().Calls["GetOnlineReservations"], "a round asked Cloud9")
	t.Logf("baseline GET /healthz, 64 conns: %s", health)
	t.Logf("Cloud9 web holds create+release through the binary: %d rounds of %d, %.0f requests/s = %.2f × /healthz; flowgate CPU %.0f µs per request",
		rounds, len(bodies), reqs/elapsed.Seconds(), reqs/elapsed.Seconds()/health.PerSecond(), 1e6*cpu/reqs)
}
