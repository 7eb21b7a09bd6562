package shadow

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
)

// Metrics are the shadow mode's Prometheus metrics. The endpoint label
// takes only the names of Endpoints.
type Metrics struct {
	compared *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
	verdict  *prometheus.GaugeVec
}

// verdicts are the values of flowgate_shadow_verdict's verdict label.
var verdicts = []string{contracts.ShadowNoTraffic, contracts.ShadowCollecting, contracts.ShadowNotReady, contracts.ShadowReady}

// NewMetrics registers the metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
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
		verdict: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flowgate_shadow_verdict",
			Help: "1 for an endpoint's current shadow verdict (no_traffic, collecting, not_ready, ready), 0 for the others; set at each comparison and report."},
			[]string{"endpoint", "verdict"}),
	}
	if reg != nil {
		reg.MustRegister(m.compared, m.latency, m.dropped, m.verdict)
	}
	return m
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

// SetVerdict sets an endpoint's verdict gauge.
func (m *Metrics) SetVerdict(endpoint, verdict string) {
	for _, v := range verdicts {
		val := 0.0
		if v == verdict {
			val = 1
		}
		m.verdict.WithLabelValues(endpoint, v).Set(val)
	}
}
