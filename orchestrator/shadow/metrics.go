package shadow

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
)

// Metrics are the shadow mode's Prometheus metrics. The endpoint label
// takes only the names of Endpoints.
type Metrics struct {
	compared *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
}

// verdicts are the values of flowgate_shadow_verdict's verdict label.
var verdicts = []string{contracts.ShadowNoTraffic, contracts.ShadowCollecting, contracts.ShadowNotReady, contracts.ShadowReady}

// NewMetrics registers the metrics with reg (nil: not registered), the
// verdicts read from rec at each scrape (so every instance reports the
// one report all of them write).
func NewMetrics(reg prometheus.Registerer, rec *Recorder) *Metrics {
	m := &Metrics{
		compared: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowgate_shadow_compared_total",
			Help: "Mirrored calls compared with the original's answer, by endpoint and outcome (identical, superset, missing_path, type_mismatch; value_diff counted beside them)."},
			[]string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowgate_shadow_latency_seconds",
			Help:    "Answer time of the original (measured in Node-RED) and of flowgate's dry run, by endpoint and side.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"endpoint", "side"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowgate_shadow_dropped_total",
			Help: "Mirrors the Node-RED kit dropped at its in-flight bound, as it reports them."}, []string{"endpoint"}),
	}
	if reg != nil {
		reg.MustRegister(m.compared, m.latency, m.dropped, verdictCollector{rec})
	}
	return m
}

// verdictDesc is flowgate_shadow_verdict.
var verdictDesc = prometheus.NewDesc("flowgate_shadow_verdict",
	"1 for a shadowed endpoint's current verdict (no_traffic, collecting, not_ready, ready), 0 for the others; read from the shared records at each scrape.",
	[]string{"endpoint", "group", "verdict"}, nil)

// verdictScrapeTimeout bounds the report a scrape reads.
const verdictScrapeTimeout = 2 * time.Second

// verdictCollector reads the report at each scrape; a scrape that cannot
// read it reports no verdict (the series go stale rather than lie).
type verdictCollector struct{ rec *Recorder }

func (c verdictCollector) Describe(ch chan<- *prometheus.Desc) { ch <- verdictDesc }

func (c verdictCollector) Collect(ch chan<- prometheus.Metric) {
	if c.rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), verdictScrapeTimeout)
	defer cancel()
	rep, err := c.rec.Report(ctx)
	if err != nil {
		return
	}
	for _, e := range rep.Endpoints {
		if e.Verdict == contracts.ShadowNever {
			continue
		}
		for _, v := range verdicts {
			val := 0.0
			if v == e.Verdict {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(verdictDesc, prometheus.GaugeValue, val, e.Endpoint, e.Group, v)
		}
	}
}

// Observe counts one comparison.
func (m *Metrics) Observe(r Result, dropped int) {
	outcome := "superset"
	switch {
	case r.Identical:
		outcome = "identical"
	case r.MissingCount > 0:
		outcome = "missing_path"
	case r.TypeCount > 0:
		outcome = "type_mismatch"
	}
	m.compared.WithLabelValues(r.Endpoint, outcome).Inc()
	if len(r.Fields) > 0 {
		m.compared.WithLabelValues(r.Endpoint, "value_diff").Inc()
	}
	m.latency.WithLabelValues(r.Endpoint, "original").Observe(r.OriginalMS / 1000)
	m.latency.WithLabelValues(r.Endpoint, "flowgate").Observe(r.FlowgateMS / 1000)
	if dropped > 0 {
		m.dropped.WithLabelValues(r.Endpoint).Add(float64(dropped))
	}
}
