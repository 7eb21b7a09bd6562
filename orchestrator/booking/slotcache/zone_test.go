package slotcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/clocktest"
)

// The tiers start today in the practice's zone (PRACTICE_TIME_ZONE), as
// the original's, and end their days after tomorrow, on the injected
// clock. At 20:00 in New York — 01:00 UTC the next day — tier 1 starts on
// New York's today and holds tomorrow's slots; computed in UTC it would
// start a day later.
func TestTiersStartTomorrowInPracticeZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// Monday 12 Jan 2026, 20:00 New York = Tuesday 13 Jan, 01:00 UTC.
	clk := clocktest.New(time.Date(2026, 1, 13, 1, 0, 0, 0, time.UTC))
	e := newEnv(t, cloud9sim.Config{Now: clk.Now, TimeZone: ny})
	e.clock = clk
	ctx := context.Background()
	date := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }

	a := e.instance(t, func(c *slotcache.Config) { c.Zone = ny })
	rep, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	require.True(t, rep.OK())
	for i, days := range []int{30, 60, 90} {
		require.Equal(t, date(time.January, 12), rep.Tiers[i].From, "tier %d starts on New York's today", i+1)
		require.Equal(t, date(time.January, 13).AddDate(0, 0, days), rep.Tiers[i].To, "…and ends its days after tomorrow")
	}
	h, err := a.r.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, "01/12/2026", h.Tiers[0].DateRange.Start, "MM/DD/YYYY, as the original")
	require.Equal(t, "02/12/2026", h.Tiers[0].DateRange.End)
	require.Positive(t, countOn(h.Tiers[0].SlotsByDate, "01/13/2026"), "Tuesday's slots are in tier 1")

	// getApptSlots for New York's tomorrow (its 30 days) is tier 1's.
	reads := e.reads()
	got, err := a.src.Slots(ctx, booking.SlotQuery{StartDate: "01/13/2026", EndDate: "02/12/2026"})
	require.NoError(t, err)
	require.True(t, got.Cache.Used)
	require.Equal(t, reads, e.reads(), "answered from tier 1, not Cloud9")
	require.Equal(t, "1/13/2026", got.Slots[0].StartTime[:9])

	// The zone left at UTC (the old rule): the same instant is already
	// Tuesday, so tier 1 starts a day later and ends a day later.
	u := e.instance(t, nil)
	rep, err = u.r.Refresh(ctx, []int{1})
	require.NoError(t, err)
	require.Equal(t, date(time.January, 13), rep.Tiers[0].From)
	require.Equal(t, date(time.January, 14).AddDate(0, 0, 30), rep.Tiers[0].To)
}

// countOn is slotsByDate's count for date (0 when absent).
func countOn(list []contracts.DateCount, date string) int {
	for _, d := range list {
		if d.Date == date {
			return d.Count
		}
	}
	return 0
}
