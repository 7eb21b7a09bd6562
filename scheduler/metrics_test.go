package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

const runsHelp = `# HELP flowgate_cron_runs_total Ticks of the job seen by this instance, by result: succeeded, failed, skipped_claimed (another instance ran it), skipped_overrun (an earlier run holds the lock), skipped_unavailable (Redis error, not run).
# TYPE flowgate_cron_runs_total counter
`

// nextRuns: both jobs of TestMetrics tick every second from t0.
const nextRuns = `# HELP flowgate_cron_next_run_timestamp_seconds Unix time of the job's next tick by its schedule, as of its registration or last tick on this instance.
# TYPE flowgate_cron_next_run_timestamp_seconds gauge
flowgate_cron_next_run_timestamp_seconds{job="broken"} 1893499201
flowgate_cron_next_run_timestamp_seconds{job="sweep"} 1893499201
`

func TestMetrics(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC) // 1893499200
	clock := clocktest.New(t0)
	in := newInstance(t, db, func(cfg *Config) { cfg.Now = clock.Now })
	require.NoError(t, in.s.Register("sweep", "* * * * * *", JobFunc(func(context.Context) error {
		clock.Advance(1500 * time.Millisecond)
		return nil
	})))
	require.NoError(t, in.s.Register("broken", "* * * * * *", JobFunc(func(context.Context) error {
		clock.Advance(250 * time.Millisecond)
		return errors.New("disk full")
	})))

	// Counters exist at zero from Register, and the next tick; the other
	// gauges appear with a run.
	require.NoError(t, testutil.GatherAndCompare(in.reg, strings.NewReader(nextRuns+runsHelp+`
flowgate_cron_runs_total{job="broken",result="failed"} 0
flowgate_cron_runs_total{job="broken",result="skipped_claimed"} 0
flowgate_cron_runs_total{job="broken",result="skipped_overrun"} 0
flowgate_cron_runs_total{job="broken",result="skipped_unavailable"} 0
flowgate_cron_runs_total{job="broken",result="succeeded"} 0
flowgate_cron_runs_total{job="sweep",result="failed"} 0
flowgate_cron_runs_total{job="sweep",result="skipped_claimed"} 0
flowgate_cron_runs_total{job="sweep",result="skipped_overrun"} 0
flowgate_cron_runs_total{job="sweep",result="skipped_unavailable"} 0
flowgate_cron_runs_total{job="sweep",result="succeeded"} 0
`)))
	n, err := testutil.GatherAndCount(in.reg, "flowgate_cron_last_run_timestamp_seconds")
	require.NoError(t, err)
	require.Zero(t, n)

	ctx := context.Background()
	_, err = in.s.RunNow(ctx, "sweep", t0)
	require.NoError(t, err)
	_, err = in.s.RunNow(ctx, "sweep", t0) // claimed
	require.NoError(t, err)
	_, err = in.s.RunNow(ctx, "broken", time.Time{}) // at t0+1.5s: tick t0+1s
	require.Error(t, err)

	require.NoError(t, testutil.GatherAndCompare(in.reg, strings.NewReader(`
# HELP flowgate_cron_last_run_timestamp_seconds Unix time the job's last run on this instance started.
# TYPE flowgate_cron_last_run_timestamp_seconds gauge
flowgate_cron_last_run_timestamp_seconds{job="broken"} 1893499201.5
flowgate_cron_last_run_timestamp_seconds{job="sweep"} 1893499200
# HELP flowgate_cron_last_duration_seconds How long the job's last run on this instance took.
# TYPE flowgate_cron_last_duration_seconds gauge
flowgate_cron_last_duration_seconds{job="broken"} 0.25
flowgate_cron_last_duration_seconds{job="sweep"} 1.5
# HELP flowgate_cron_last_error 1 if the job's last run on this instance failed, else 0.
# TYPE flowgate_cron_last_error gauge
flowgate_cron_last_error{job="broken"} 1
flowgate_cron_last_error{job="sweep"} 0
`+nextRuns+runsHelp+`
flowgate_cron_runs_total{job="broken",result="failed"} 1
flowgate_cron_runs_total{job="broken",result="skipped_claimed"} 0
flowgate_cron_runs_total{job="broken",result="skipped_overrun"} 0
flowgate_cron_runs_total{job="broken",result="skipped_unavailable"} 0
flowgate_cron_runs_total{job="broken",result="succeeded"} 0
flowgate_cron_runs_total{job="sweep",result="failed"} 0
flowgate_cron_runs_total{job="sweep",result="skipped_claimed"} 1
flowgate_cron_runs_total{job="sweep",result="skipped_overrun"} 0
flowgate_cron_runs_total{job="sweep",result="skipped_unavailable"} 0
flowgate_cron_runs_total{job="sweep",result="succeeded"} 1
`)))

	st := in.s.Status()
	require.Equal(t, []JobStatus{{
		Name: "broken", Spec: "* * * * * *", MaxRunTime: 5 * time.Second,
		Next:     t0.Add(2 * time.Second),
		LastTick: t0.Add(time.Second), LastRun: t0.Add(1500 * time.Millisecond),
		LastDuration: 250 * time.Millisecond, LastError: "disk full",
	}, {
		Name: "sweep", Spec: "* * * * * *", MaxRunTime: 5 * time.Second,
		Next:     t0.Add(2 * time.Second),
		LastTick: t0, LastRun: t0, LastDuration: 1500 * time.Millisecond,
	}}, st)

	// A job that succeeds after failing resets last_error.
	require.NoError(t, in.s.Register("flaky", "* * * * * *", JobFunc(func(ctx context.Context) error {
		if tick, _ := TickFromContext(ctx); tick.Equal(t0) {
			return errors.New("once")
		}
		return nil
	})))
	_, err = in.s.RunNow(ctx, "flaky", t0)
	require.Error(t, err)
	require.Equal(t, 1.0, testutil.ToFloat64(in.s.metrics.lastError.WithLabelValues("flaky")))
	_, err = in.s.RunNow(ctx, "flaky", t0.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, 0.0, testutil.ToFloat64(in.s.metrics.lastError.WithLabelValues("flaky")))
}

// Schedulers sharing a Registerer share the collectors instead of failing.
func TestSharedRegisterer(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	reg := prometheus.NewRegistry()
	share := func(cfg *Config) { cfg.Registerer = reg }
	a, b := newInstance(t, db, share), newInstance(t, db, share)
	noop := JobFunc(func(context.Context) error { return nil })
	require.NoError(t, a.s.Register("sweep", "* * * * * *", noop))
	require.NoError(t, b.s.Register("sweep", "* * * * * *", noop))
	tick := time.Now()
	_, err := a.s.RunNow(context.Background(), "sweep", tick)
	require.NoError(t, err)
	_, err = b.s.RunNow(context.Background(), "sweep", tick)
	require.NoError(t, err)
	require.Equal(t, 1, a.runs("sweep", resultSucceeded))
	require.Equal(t, 1, b.runs("sweep", resultSkippedClaimed), "one series, both instances")
	require.Equal(t, 5, testutil.CollectAndCount(a.s.metrics.runs), "one series per result")

	c, err := New(Config{Redis: db.Client, Registerer: reg, KeyPrefix: "other:"})
	require.NoError(t, err)
	require.NoError(t, c.Stop(context.Background()))
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "flowgate_cron_last_error", Help: "x"}))
	_, err = New(Config{Redis: db.Client, Registerer: clash})
	require.ErrorIs(t, err, ErrInvalid, "a different collector under our name")
}
