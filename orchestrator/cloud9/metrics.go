package cloud9

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The outcome label of flowgate_cloud9_requests_total.
const (
	outcomeOK        = "ok"
	outcomeLimited   = "limited" // held back by the limiter; not sent
	outcomeTimeout   = "timeout"
	outcomeTransport = "transport"
	outcomeStatus    = "status_error"
	outcomeResult    = "result_error"
	outcomeInvalid   = "invalid" // not sent: the request could not be built
)

// metrics are the client's series:
//
//	flowgate_cloud9_requests_total{procedure,outcome}     calls by outcome (limited = not sent)
//	flowgate_cloud9_request_duration_seconds{procedure}   time of the calls sent
//	flowgate_cloud9_rate_limited_total{procedure}         code-8 answers: flowgate spaced too tightly; should stay 0
//
// The rate-limit series of the writes and of the slot read exist from the
// start at zero, so a first code 8 shows in increase() and in alerts.
type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_cloud9_requests_total",
			Help: "Cloud9 calls by procedure and outcome (limited: held back by the shared limiter, not sent).",
		}, []string{"procedure", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flowgate_cloud9_request_duration_seconds",
			Help:    "Duration of the Cloud9 calls sent, by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 11), // 50 ms … 51 s
		}, []string{"procedure"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_cloud9_rate_limited_total",
			Help: "Cloud9 answers saying too many requests (code 8). The shared limiter should keep this at 0.",
		}, []string{"procedure"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.requests, err = register(reg, m.requests)
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	m.rateLimited, err = register(reg, m.rateLimited)
	if err != nil {
		return nil, err
	}
	for _, p := range append([]string{ProcGetOnlineReservations}, WriteProcedures...) {
		m.rateLimited.WithLabelValues(p)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name (several clients may share one registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) observe(procedure, outcome string, d time.Duration, sent bool) {
	m.requests.WithLabelValues(procedure, outcome).Inc()
	if sent {
		m.duration.WithLabelValues(procedure).Observe(d.Seconds())
	}
}
