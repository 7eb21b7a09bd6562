package web

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are http_requests_total and http_request_duration_seconds by
// route (the registered pattern, not the raw path), method and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "HTTP request latency by route, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *httpMetrics) observe(route, method, status string, d time.Duration) {
	m.requests.WithLabelValues(route, method, status).Inc()
	m.latency.WithLabelValues(route, method, status).Observe(d.Seconds())
}

// methodLabel is the method as a metric label and log value. Fiber's
// c.Method() aliases a buffer fasthttp reuses for the next request on the
// connection, so a label stored from it later reads "POS" or "GETT" and the
// registry refuses to gather duplicate series. The known methods map to
// constants (no allocation, bounded cardinality); anything else is "OTHER".
func methodLabel(m string) string {
	for _, known := range knownMethods {
		if m == known {
			return known
		}
	}
	return "OTHER"
}

var knownMethods = [...]string{
	fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch,
	fiber.MethodDelete, fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace,
}
