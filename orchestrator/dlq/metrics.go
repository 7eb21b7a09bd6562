package dlq

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dead-letter series:
//
//	flowgate_dlq_size{queue}                 records in the durable record (read at scrape)
//	flowgate_dlq_recorded_total{queue,source} new records by writer
//	flowgate_dlq_archive_fill_ratio{queue}   asynq archive size / 10,000
type Metrics struct {
	recorded    *prometheus.CounterVec
	archiveFill *prometheus.GaugeVec
	size        *prometheus.Desc
	store       *Store
	log         *slog.Logger
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer, store *Store, log *slog.Logger) (*Metrics, error) {
	if log == nil {
		log = slog.Default()
	}
	m := &Metrics{
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_dlq_recorded_total", Help: "Dead letters newly written to the durable record, by writer.",
		}, []string{"queue", "source"}),
		archiveFill: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_dlq_archive_fill_ratio", Help: "Asynq archive size over its 10,000-task bound; asynq trims past 1.",
		}, []string{"queue"}),
		size:  prometheus.NewDesc("flowgate_dlq_size", "Dead letters in the durable record.", []string{"queue"}, nil),
		store: store,
		log:   log,
	}
	for _, c := range []prometheus.Collector{m.recorded, m.archiveFill, m} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Recorded counts a new record.
func (m *Metrics) Recorded(queue string, src Source) {
	m.recorded.WithLabelValues(queue, string(src)).Inc()
}

// Describe implements prometheus.Collector for flowgate_dlq_size.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.size }

// Collect implements prometheus.Collector: the size is read from Redis at
// scrape time so every instance reports the shared truth.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sizes, err := m.store.Size(ctx)
	if err != nil {
		m.log.Warn("dlq: size for metrics", "err", err)
		return
	}
	for q, n := range sizes {
		ch <- prometheus.MustNewConstMetric(m.size, prometheus.GaugeValue, float64(n), q)
	}
}
