package taskjobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// Label values (see the package comment for the series).
const (
	sweepHeartbeat = "heartbeat"
	sweepVT        = "vt"

	viaAsynq        = "asynq"         // a follow-up task's handler
	viaAPI          = "api"           // Dispatcher.Replay
	viaRetryOverdue = "retry_overdue" // the retry-overdue job
	viaFail         = "fail"          // AfterFail
	viaRepair       = "repair"        // the DLQ-repair job
)

// statsTimeout bounds the Stats read of one scrape.
const statsTimeout = 2 * time.Second

type metrics struct {
	recovered    *prometheus.CounterVec
	promoted     prometheus.Counter
	requeued     *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	replayed     *prometheus.CounterVec
	purged       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, ledger *tasks.Ledger, log *slog.Logger, now func() time.Time) (*metrics, error) {
	m := &metrics{
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_tasks_recovered_total",
			Help: "PROCESSING tasks whose worker went silent that a sweep put back to PENDING, by sweep: heartbeat, vt (those at MAX_RECOVERIES count as dead_lettered).",
		}, []string{"sweep"}),
		promoted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flowgate_tasks_promoted_total",
			Help: "PENDING tasks the SLA sweep promoted to HIGH.",
		}),
		requeued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_tasks_requeued_total",
			Help: "ERROR tasks requeued for a retry, by path: asynq (after the backoff), retry_overdue (the requeue was lost).",
		}, []string{"via"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_tasks_dead_lettered_total",
			Help: "Dead letters given their archived Asynq replay task, by who saw them: fail, heartbeat, vt, repair.",
		}, []string{"via"}),
		replayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_tasks_replayed_total",
			Help: "Dead letters replayed to PENDING, by path: api, asynq (run from Asynqmon).",
		}, []string{"via"}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flowgate_tasks_purged_total",
			Help: "DONE tasks the retention job deleted (older than PurgeAfter).",
		}),
	}
	// Every series exists from the start, so rates and alerts see zeros.
	for _, s := range []string{sweepHeartbeat, sweepVT} {
		m.recovered.WithLabelValues(s)
	}
	for _, v := range []string{viaAsynq, viaRetryOverdue} {
		m.requeued.WithLabelValues(v)
	}
	for _, v := range []string{viaFail, sweepHeartbeat, sweepVT, viaRepair} {
		m.deadLettered.WithLabelValues(v)
	}
	for _, v := range []string{viaAPI, viaAsynq} {
		m.replayed.WithLabelValues(v)
	}
	for _, c := range []prometheus.Collector{m.recovered, m.promoted, m.requeued, m.deadLettered, m.replayed, m.purged,
		newLedgerCollector(ledger, log, now)} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("taskjobs: register metrics: %w", err)
		}
	}
	return m, nil
}

// ledgerCollector exports Ledger.Stats, read at scrape time so that every
// instance reports the shared ledger.
type ledgerCollector struct {
	ledger                          *tasks.Ledger
	log                             *slog.Logger
	now                             func() time.Time
	byStatus, pending, dlq, waiting *prometheus.Desc
	silent                          *prometheus.Desc
}

func newLedgerCollector(l *tasks.Ledger, log *slog.Logger, now func() time.Time) *ledgerCollector {
	return &ledgerCollector{
		ledger:   l,
		log:      log,
		now:      now,
		byStatus: prometheus.NewDesc("flowgate_tasks", "Tasks in the ledger by status (dead letters are ERROR).", []string{"status"}, nil),
		pending:  prometheus.NewDesc("flowgate_tasks_pending", "PENDING tasks by priority.", []string{"priority"}, nil),
		dlq:      prometheus.NewDesc("flowgate_tasks_dlq_size", "Dead letters: ERROR tasks with parsed_payload.dlq, awaiting manual review.", nil, nil),
		waiting:  prometheus.NewDesc("flowgate_tasks_retry_waiting", "ERROR tasks awaiting their requeue.", nil, nil),
		silent: prometheus.NewDesc("flowgate_tasks_processing_silent_seconds",
			"Seconds since the PROCESSING task silent longest showed activity (claim, heartbeat, update); 0 when none is PROCESSING.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byStatus
	ch <- c.pending
	ch <- c.dlq
	ch <- c.waiting
	ch <- c.silent
}

// Collect implements prometheus.Collector. When the ledger cannot be read
// the series are left out of this scrape (absent, not zero).
func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := c.ledger.Stats(ctx)
	if err != nil {
		c.log.Warn("taskjobs: ledger stats for metrics", "err", err)
		return
	}
	for _, s := range contracts.AllStatuses() {
		ch <- prometheus.MustNewConstMetric(c.byStatus, prometheus.GaugeValue, float64(st.ByStatus[s]), string(s))
	}
	for _, p := range contracts.AllPriorities() {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.PendingByPriority[p]), string(p))
	}
	ch <- prometheus.MustNewConstMetric(c.dlq, prometheus.GaugeValue, float64(st.DLQ))
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.RetryWaiting))
	at, ok, err := c.ledger.OldestActivity(ctx)
	if err != nil {
		c.log.Warn("taskjobs: oldest activity for metrics", "err", err)
		return
	}
	silent := 0.0
	if ok {
		silent = max(0, c.now().Sub(at).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.silent, prometheus.GaugeValue, silent)
}
