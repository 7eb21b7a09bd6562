package cloud9sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

const tooMany = "Too many requests within the timeframe for procedure SetAppointment"

func defaultLimit(c *cloud9sim.Config) { c.WriteLimit = cloud9sim.Rate{} }

func TestRateLimitSixthWriteWithinAMinute(t *testing.T) {
	t.Parallel()
	b := setup(t, defaultLimit) // 5 per minute, sliding
	p := b.createPatient(t, "Ann", "Lee")
	starts := []string{"8:00 AM", "8:45 AM", "9:30 AM", "10:15 AM", "11:00 AM", "11:45 AM", "12:30 PM"}
	at := func(i int) string { return "11/24/2026 " + starts[i] }

	for i := 0; i < 5; i++ {
		b.bookOK(t, p, at(i), cloud9sim.Chair8GUID)
		b.clock.Advance(10 * time.Second) // calls at 0, 10, 20, 30, 40 s
	}
	b.book(t, p, at(5), cloud9sim.Chair8GUID).requireError(t, cloud9sim.CodeTooManyRequests, tooMany) // 50 s
	require.Equal(t, 1, b.sim.RateLimited("SetAppointment"))
	require.Equal(t, 6, b.sim.Calls("SetAppointment"))
	require.Len(t, b.sim.Appointments(), 5, "a refused call does not run")

	// Other procedures have their own windows; reads have none.
	b.createPatient(t, "Bob", "Ray")
	for i := 0; i < 20; i++ {
		require.Equal(t, "Success", b.call(t, "GetLocations").Status)
	}

	b.clock.Advance(9 * time.Second) // 59 s: the 0 s call is still inside
	b.book(t, p, at(5), cloud9sim.Chair8GUID).requireError(t, 8, tooMany)
	b.clock.Advance(time.Second) // 60 s: it has left, one call fits
	b.bookOK(t, p, at(5), cloud9sim.Chair8GUID)
	b.book(t, p, at(6), cloud9sim.Chair8GUID).requireError(t, 8, tooMany)
	b.clock.Advance(10 * time.Second) // 70 s: the 10 s call has left
	b.bookOK(t, p, at(6), cloud9sim.Chair8GUID)
	require.Equal(t, 3, b.sim.RateLimited("SetAppointment"))
	require.Zero(t, b.sim.RateLimited("GetLocations"))
}

func TestRateLimitCountsBusinessErrorsNotRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, defaultLimit)
	// Business-rule failures still count (the call ran) ...
	for i := 0; i < 5; i++ {
		require.Equal(t, cloud9sim.ResultNoPatient, b.book(t, "00000000-0000-0000-0000-000000000001", "11/24/2026 8:00 AM", cloud9sim.Chair8GUID).result(t))
	}
	// ... refusals do not: knocking every second for a minute does not
	// push the window on.
	for i := 0; i < 59; i++ {
		b.book(t, "00000000-0000-0000-0000-000000000001", "11/24/2026 8:00 AM", cloud9sim.Chair8GUID).requireError(t, 8, tooMany)
		b.clock.Advance(time.Second)
	}
	b.clock.Advance(time.Second)
	require.Equal(t, cloud9sim.ResultNoPatient, b.book(t, "00000000-0000-0000-0000-000000000001", "11/24/2026 8:00 AM", cloud9sim.Chair8GUID).result(t))
}

func TestRateLimitScaleRunsInRealTime(t *testing.T) {
	t.Parallel()
	// The real clock, 60 simulated seconds per second: the minute's window
	// is one real second.
	b := setup(t, defaultLimit, func(c *cloud9sim.Config) { c.Now, c.Scale, c.TimeZone = nil, 60, nil })
	for i := 0; i < 5; i++ {
		require.Equal(t, "Success", b.call(t, "SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x").Status)
	}
	b.call(t, "SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x").
		requireError(t, 8, "Too many requests within the timeframe for procedure SetPatientComment")
	time.Sleep(1100 * time.Millisecond) // under test: the scaled window passes in real time
	require.Equal(t, "Success", b.call(t, "SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x").Status)
	require.Equal(t, 1, b.sim.RateLimited("SetPatientComment"))

	// The template stays in calendar days of the simulated clock.
	now := b.sim.Now()
	for _, s := range b.sim.OpenSlots(now, now.AddDate(0, 0, 100)) {
		require.True(t, s.Start.Before(now.AddDate(0, 0, 91)))
	}
}

func TestRateLimitOverrides(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *cloud9sim.Config) {
		c.WriteLimit = cloud9sim.Rate{N: 1, Per: time.Hour}
		c.Limits = map[string]cloud9sim.Rate{
			"GetLocations":      {N: 2, Per: time.Minute},
			"SetPatient":        cloud9sim.Unlimited,
			"GetChairSchedules": {N: 0, Per: time.Minute}, // always refused
		}
	})
	b.call(t, "GetLocations")
	b.call(t, "GetLocations")
	b.call(t, "GetLocations").requireError(t, 8, "Too many requests within the timeframe for procedure GetLocations")
	b.call(t, "GetChairSchedules").requireError(t, 8, "Too many requests within the timeframe for procedure GetChairSchedules")
	for i := 0; i < 10; i++ {
		b.createPatient(t, "Ann", "Lee")
	}
	p := b.sim.Patients()[0].GUID
	b.call(t, "SetPatientComment", "patGUID", p, "patComment", "x").result(t)
	b.call(t, "SetPatientComment", "patGUID", p, "patComment", "x").requireError(t, 8, "Too many requests within the timeframe for procedure SetPatientComment")
	b.clock.Advance(time.Hour)
	b.call(t, "SetPatientComment", "patGUID", p, "patComment", "x").result(t)
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]cloud9sim.Rate{
		"5/min": {5, time.Minute}, "5/m": {5, time.Minute}, " 10 / s ": {10, time.Second},
		"100/hour": {100, time.Hour}, "3/30s": {3, 30 * time.Second}, "off": cloud9sim.Unlimited,
	} {
		got, err := cloud9sim.ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "5", "0/min", "-1/min", "x/min", "5/fortnight", "5/-1s"} {
		_, err := cloud9sim.ParseRate(in)
		require.Error(t, err, in)
	}
	require.Equal(t, "5/min", cloud9sim.Rate{N: 5, Per: time.Minute}.String())
	require.Equal(t, "3/30s", cloud9sim.Rate{N: 3, Per: 30 * time.Second}.String())
}

// Fixed windows (Config.Window): at most N calls in each [k·Per,
// (k+1)·Per) of the simulated clock, so N at the end of one minute and N
// more at the start of the next pass within seconds, and a refusal lasts
// only until the window turns.
func TestRateLimitFixedWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *cloud9sim.Config) { c.WriteLimit = cloud9sim.Rate{}; c.Window = cloud9sim.WindowFixed })
	require.Equal(t, cloud9sim.WindowFixed, b.sim.Config().Window)
	p := b.createPatient(t, "Ann", "Lee") // SetPatient: its own counter
	edge := b.clock.Now().Truncate(time.Minute).Add(time.Minute)
	b.clock.Advance(edge.Add(-5 * time.Second).Sub(b.clock.Now())) // 5 s before the minute turns
	at := func(i int) string {
		return "11/24/2026 " + []string{"8:00 AM", "8:45 AM", "9:30 AM", "10:15 AM", "11:00 AM", "11:45 AM", "12:30 PM", "1:15 PM", "2:00 PM", "2:45 PM", "3:30 PM", "4:15 PM"}[i]
	}
	for i := range 5 {
		b.bookOK(t, p, at(i), cloud9sim.Chair8GUID)
	}
	b.book(t, p, at(5), cloud9sim.Chair8GUID).requireError(t, cloud9sim.CodeTooManyRequests, tooMany)
	b.clock.Advance(5 * time.Second) // the next window: 5 more at once
	for i := 5; i < 10; i++ {
		b.bookOK(t, p, at(i), cloud9sim.Chair8GUID)
	}
	b.book(t, p, at(10), cloud9sim.Chair8GUID).requireError(t, cloud9sim.CodeTooManyRequests, tooMany)
	require.Len(t, b.sim.Appointments(), 10, "10 calls within 5 s across the window's edge")

	_, err := cloud9sim.ParseWindow("hourly")
	require.Error(t, err)
	w, err := cloud9sim.ParseWindow("fixed")
	require.NoError(t, err)
	require.Equal(t, cloud9sim.WindowFixed, w)
}
