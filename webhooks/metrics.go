package webhooks

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
)

// The hooks, as the hook label spells them.
const (
	hookAck  = "ack"
	hookFail = "fail"
)

// The outcomes of a webhook request (label outcome).
const (
	OutcomeDone         = "done"
	OutcomeDuplicate    = "duplicate"
	OutcomeRequeued     = "requeued"
	OutcomeDLQ          = "dlq"
	OutcomeConflict     = "conflict"
	OutcomeInvalid      = "invalid"
	OutcomeUnauthorized = "unauthorized"
	OutcomeNotFound     = "not_found"
	OutcomeError        = "error"
)

// hookOutcomes lists the outcomes each hook can have, to start every
// series at zero.
var hookOutcomes = map[string][]string{
	hookAck: {OutcomeDone, OutcomeDuplicate, OutcomeConflict, OutcomeInvalid, OutcomeUnauthorized,
		OutcomeNotFound, OutcomeError},
	hookFail: {OutcomeRequeued, OutcomeDLQ, OutcomeDuplicate, OutcomeConflict, OutcomeInvalid, OutcomeUnauthorized,
		OutcomeNotFound, OutcomeError},
}

// metrics are flowgate_webhook_requests_total{hook,outcome} and
// flowgate_webhook_duration_seconds{hook}. A nil *metrics records nothing.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_webhook_requests_total",
			Help: "ACK/FAIL webhook requests by hook and outcome (done, duplicate, requeued, dlq, conflict, invalid, unauthorized, not_found, error).",
		}, []string{"hook", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flowgate_webhook_duration_seconds",
			Help:    "ACK/FAIL webhook handling time by hook, authentication and follow-up included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"hook"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for hook, outcomes := range hookOutcomes {
		for _, o := range outcomes {
			m.requests.WithLabelValues(hook, o)
		}
		m.duration.WithLabelValues(hook)
	}
	return m, nil
}

func (m *metrics) observe(hook, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(hook, outcome).Inc()
	m.duration.WithLabelValues(hook).Observe(d.Seconds())
}

// errorOutcome classifies a refused or failed request by its error code.
func errorOutcome(err error) string {
	switch contracts.ErrorCode(err) {
	case contracts.CodeInvalid, contracts.CodeTooLarge:
		return OutcomeInvalid
	case contracts.CodeUnauthorized, contracts.CodeForbidden:
		return OutcomeUnauthorized
	case contracts.CodeNotFound:
		return OutcomeNotFound
	case contracts.CodeConflict:
		return OutcomeConflict
	}
	return OutcomeError
}
