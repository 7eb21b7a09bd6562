package slotcache_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// Every refreshHistory entry carries, besides tier / success / slotCount /
// error / timestamp, the original's dateRange, fetchDurationMs, retries,
// isRetry and redisWriteSuccess: retries are the tier's Cloud9 tries
// after the first, isRetry says its previous refresh had failed, and
// redisWriteSuccess that its list was stored.
func TestRefreshHistoryEntries(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil) // 2 attempts per tier
	ctx := context.Background()
	history := func() []map[string]any {
		h, err := a.r.Health(ctx)
		require.NoError(t, err)
		raw, err := json.Marshal(h.RefreshHistory)
		require.NoError(t, err)
		var out []map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	rep, err := a.r.Refresh(ctx, []int{2})
	require.NoError(t, err)
	ok := history()[0]
	tr := rep.Tiers[0]
	// A string as the original's ("11/28/2026 to 02/26/2027").
	require.Equal(t, tr.From.Format("01/02/2006")+" to "+tr.To.Format("01/02/2006"), ok["dateRange"])
	require.Equal(t, float64(2), ok["tier"])
	require.Equal(t, true, ok["success"])
	require.Equal(t, float64(tr.Duration.Milliseconds()), ok["fetchDurationMs"])
	require.Equal(t, float64(0), ok["retries"])
	require.Equal(t, false, ok["isRetry"])
	require.Equal(t, true, ok["redisWriteSuccess"])
	require.Nil(t, ok["error"])

	e.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1, Procedures: []string{cloud9.ProcGetOnlineReservations}})
	rep, err = a.r.Refresh(ctx, []int{2})
	require.NoError(t, err)
	first := history()[0]
	require.Equal(t, false, first["success"])
	require.Equal(t, float64(rep.Tiers[0].Attempts-1), first["retries"])
	require.Equal(t, false, first["isRetry"], "the tier's previous refresh succeeded")
	require.Equal(t, false, first["redisWriteSuccess"], "nothing fetched, nothing stored")
	require.NotEmpty(t, first["error"])
	require.NotNil(t, first["dateRange"])

	_, err = a.r.Refresh(ctx, []int{2})
	require.NoError(t, err)
	require.Equal(t, true, history()[0]["isRetry"], "the tier failed last time")

	e.sim.SetFaults(cloud9sim.Faults{})
	_, err = a.r.Refresh(ctx, []int{2})
	require.NoError(t, err)
	back := history()
	require.Len(t, back, 4)
	require.Equal(t, true, back[0]["success"])
	require.Equal(t, true, back[0]["isRetry"], "it retries the failing tier")
	require.Equal(t, true, back[0]["redisWriteSuccess"])
}

// businessHours is the refresh schedule as a sentence, as the original
// states its hours; a spec it cannot word is named.
func TestDescribeSchedule(t *testing.T) {
	for spec, want := range map[string]string{
		"CRON_TZ=America/New_York 0 */5 7-18 * * MON-SAT": "Every 5 minutes from 7:00 AM to 6:55 PM, Monday to Saturday (America/New_York)",
		"0 0 9-17 * * 1-5":           "Hourly at minute 0 from 9:00 AM to 5:00 PM, Monday to Friday",
		"*/10 * * * *":               "Every 10 minutes at all hours, every day",
		"@every 5m":                  "Every 5m, at all hours, every day",
		"0 */5 7-18 1 * *":           "On the cron schedule 0 */5 7-18 1 * *",
		"TZ=UTC 0 */15 0-23 * * SUN": "Every 15 minutes from 12:00 AM to 11:45 PM, on Sundays (UTC)",
	} {
		require.Equal(t, want, slotcache.DescribeSchedule(spec), spec)
	}
}
