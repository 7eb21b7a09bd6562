package test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An anonymous visitor walking the public timeslots of a Cloud9 type
// across the calendar — 40 one-day windows 9 days apart from a month ago
// to 10 months ahead, then ten years ahead — costs Cloud9 at most the six
// 28-day blocks beyond the horizon list (Cloud9Source reads aligned blocks
// within 28 weeks), not a GetOnlineReservations call per window: those
// calls are the practice's rate-limited read quota, which the IVA's slot
// refreshes share.
// Reproduce: go test -run TestTimeslotsCannotSpendCloud9Reads -v ./test/
func TestTimeslotsCannotSpendCloud9Reads(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	sim := startSim(t, 60, "5/min")
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "100/min", map[string]string{"PRACTICE_TIME_ZONE": simZone}))
	c := newBookingClient(t, p)
	typ := c.slots("reads", 1)[0].AppointmentTypeGUID
	get := func(from string) int {
		resp, err := http.Get(fmt.Sprintf("%s/v1/appointment-types/%s/timeslots?from=%s&days=1", p.Base, typ, from))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get(time.Now().Format("2006-01-02"))) // the horizon list
	// Background tier refreshes may still be reading: wait for quiet.
	calls := sim.state().Calls["GetOnlineReservations"]
	for quiet := time.Now(); time.Since(quiet) < 500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if n := sim.state().Calls["GetOnlineReservations"]; n != calls {
			calls, quiet = n, time.Now()
		}
	}
	today := time.Now()
	for i := range 40 {
		day := today.AddDate(0, 0, -30+i*9)
		require.Equal(t, http.StatusOK, get(day.Format("2006-01-02")), day)
	}
	require.Equal(t, http.StatusOK, get(today.AddDate(10, 0, 0).Format("2006-01-02")))
	reads := sim.state().Calls["GetOnlineReservations"] - calls
	t.Logf("41 windows: %d Cloud9 reads", reads)
	// Six blocks, and room for one background tier refresh (3 reads) that
	// may fall in these seconds; a read per window was 38.
	require.LessOrEqual(t, reads, 9, "each window cost a Cloud9 read")
}
