package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/clocktest"
)

// eveningInNewYork is an instant at 01:00 UTC, today or later, that is a
// Monday–Thursday evening (20:00 EST / 21:00 EDT) in New York, so New
// York's tomorrow — the instant's UTC date — is a weekday with open slots
// in the simulator.
func eveningInNewYork(t *testing.T) time.Time {
	t.Helper()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	d := time.Now().UTC()
	at := time.Date(d.Year(), d.Month(), d.Day(), 1, 0, 0, 0, time.UTC)
	for {
		local := at.In(ny)
		if wd := local.Weekday(); wd >= time.Monday && wd <= time.Thursday {
			require.GreaterOrEqual(t, local.Hour(), 19, "an evening in New York")
			require.Equal(t, at.Day(), local.AddDate(0, 0, 1).Day(), "UTC is on New York's tomorrow")
			return at
		}
		at = at.AddDate(0, 0, 1)
	}
}

// TestApptSlotsDatesAsOriginal: getApptSlots' dates as the original's
// (docs/reference/nodered-endpoints.md §1.4), through the real wiring with
// PRACTICE_TIME_ZONE at its default (America/New_York):
//
//   - the search spans startDate and the 30 days after it whatever endDate
//     says (endDate never reached Cloud9 in the original);
//   - "tomorrow" — where a missing or past startDate and the slot cache's
//     tiers begin — is New York's: between 19:00 and midnight in New York
//     UTC is already on the next day, and computed in UTC the next day's
//     slots were skipped.
func TestApptSlotsDatesAsOriginal(t *testing.T) {
	at := eveningInNewYork(t)
	clk := clocktest.New(at)
	p := newParityEnvAt(t, cloud9sim.Config{Now: clk.Now}, nil, clk.Now)
	mdy := func(days int) string { return at.AddDate(0, 0, days).Format("01/02/2006") }
	slotDay := func(days int) string { return at.AddDate(0, 0, days).Format("1/2/2006") + " " } // Cloud9's startTime prefix
	type answer struct {
		count       int
		first, last string
		searchRange map[string]any
	}
	ask := func(req map[string]any) answer {
		st, body := p.post(t, "/getApptSlots", req)
		require.Equal(t, http.StatusOK, st, "%s", body)
		r := obj(t, body)
		list := r["slots"].([]any)
		require.NotEmpty(t, list, "%s", body)
		return answer{count: len(list), first: list[0].(map[string]any)["startTime"].(string),
			last: list[len(list)-1].(map[string]any)["startTime"].(string), searchRange: r["searchRange"].(map[string]any)}
	}

	// No startDate at 20:00 in New York: New York's tomorrow (the
	// instant's UTC date), and 30 days from it.
	all := ask(map[string]any{"sessionId": "s-tz"})
	require.Equal(t, map[string]any{"startDate": mdy(0), "endDate": mdy(30)}, all.searchRange)
	require.True(t, strings.HasPrefix(all.first, slotDay(0)), "New York's tomorrow is offered: %s", all.first)

	// An endDate two days out narrows nothing: the original's 30 days.
	narrow := ask(map[string]any{"startDate": mdy(0), "endDate": mdy(2), "sessionId": "s-tz"})
	require.Equal(t, all.searchRange, narrow.searchRange)
	require.Equal(t, all.count, narrow.count, "endDate is ignored, as the original")
	require.Equal(t, all.last, narrow.last)
	last, err := time.Parse("1/2/2006", strings.Fields(narrow.last)[0])
	require.NoError(t, err)
	require.True(t, last.After(at.AddDate(0, 0, 2)), "slots past endDate are offered: the last is %s", narrow.last)

	// The tiers begin on New York's today, as the original's, and end their
	// days after New York's tomorrow (so the month above is tier 1's);
	// dates MM/DD/YYYY as the original writes them.
	warmTiers(t, p)
	st, body := opsCall(t, p, http.MethodGet, parityBase+"/cache-health", "", "", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	tiers := obj(t, body)["tiers"].([]any)
	for i, days := range []int{30, 60, 90} {
		tier := tiers[i].(map[string]any)
		require.Equal(t, map[string]any{"start": mdy(-1), "end": mdy(days)}, tier["dateRange"], "tier %d", i+1)
	}
	tomorrowCount := 0.0
	for _, d := range tiers[0].(map[string]any)["slotsByDate"].([]any) {
		if e := d.(map[string]any); e["date"] == mdy(0) {
			tomorrowCount = e["count"].(float64)
		}
	}
	require.Positive(t, tomorrowCount, "New York's tomorrow is in tier 1")
	fromTier := ask(map[string]any{"sessionId": "s-tz"})
	require.Equal(t, all.count, fromTier.count, "tier 1 answers the same month")
}
