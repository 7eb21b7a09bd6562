package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// result is the runs_total label of one tick's outcome on one instance.
// Every firing is counted once, except one whose lock request was cut short
// because the scheduler stopped or RunNow's context ended.
type result string

const (
	resultSucceeded result = "succeeded" // ran here and returned nil
	resultFailed    result = "failed"    // ran here and returned an error or panicked
	// The tick was already claimed by this or another instance: with N
	// instances, N-1 of these per tick is the normal case.
	resultSkippedClaimed result = "skipped_claimed"
	// A run of an earlier tick still holds the lock, here or elsewhere.
	resultSkippedOverrun result = "skipped_overrun"
	// Redis could not be asked; the job was not run without the lock.
	resultSkippedUnavailable result = "skipped_unavailable"
)

var allResults = []result{
	resultSucceeded, resultFailed, resultSkippedClaimed, resultSkippedOverrun, resultSkippedUnavailable,
}

// metrics are the flowgate_cron_* collectors, labelled by job.
type metrics struct {
	lastRun      *prometheus.GaugeVec
	lastDuration *prometheus.GaugeVec
	lastError    *prometheus.GaugeVec
	nextRun      *prometheus.GaugeVec
	runs         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_cron_last_run_timestamp_seconds",
			Help: "Unix time the job's last run on this instance started.",
		}, []string{"job"}),
		lastDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_cron_last_duration_seconds",
			Help: "How long the job's last run on this instance took.",
		}, []string{"job"}),
		lastError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_cron_last_error",
			Help: "1 if the job's last run on this instance failed, else 0.",
		}, []string{"job"}),
		nextRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_cron_next_run_timestamp_seconds",
			Help: "Unix time of the job's next tick by its schedule, as of its registration or last tick on this instance.",
		}, []string{"job"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_cron_runs_total",
			Help: "Ticks of the job seen by this instance, by result: succeeded, failed, " +
				"skipped_claimed (another instance ran it), skipped_overrun (an earlier run holds the lock), " +
				"skipped_unavailable (Redis error, not run).",
		}, []string{"job", "result"}),
	}
	var err error
	m.lastRun, err = register(reg, m.lastRun)
	if err != nil {
		return nil, err
	}
	m.lastDuration, err = register(reg, m.lastDuration)
	if err != nil {
		return nil, err
	}
	m.lastError, err = register(reg, m.lastError)
	if err != nil {
		return nil, err
	}
	m.nextRun, err = register(reg, m.nextRun)
	if err != nil {
		return nil, err
	}
	m.runs, err = register(reg, m.runs)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the identical collector already
// registered, so that several schedulers can share one Registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("scheduler: register metrics: %w", err)
}

// addJob creates the job's counters at zero, so rates and alerts see them
// before the first tick.
func (m *metrics) addJob(job string) {
	for _, r := range allResults {
		m.runs.WithLabelValues(job, string(r))
	}
}

// scheduled records the job's next tick.
func (m *metrics) scheduled(job string, next time.Time) {
	if next.IsZero() { // a schedule that never fires again
		return
	}
	m.nextRun.WithLabelValues(job).Set(float64(next.UnixNano()) / 1e9)
}

func (m *metrics) count(job string, r result) {
	m.runs.WithLabelValues(job, string(r)).Inc()
}

func (m *metrics) started(job string, at time.Time) {
	m.lastRun.WithLabelValues(job).Set(float64(at.UnixNano()) / 1e9)
}

func (m *metrics) finished(job string, took time.Duration, failed bool) {
	m.lastDuration.WithLabelValues(job).Set(took.Seconds())
	v := 0.0
	if failed {
		v = 1
	}
	m.lastError.WithLabelValues(job).Set(v)
}
