// Package metrictest reads one Prometheus series out of a registry in tests.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Value returns the value of the series of name whose labels include
// labels: a counter's or gauge's value, a histogram's or summary's sample
// count. ok is false when no such series exists.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) (v float64, ok bool) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("metrictest: gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, want := range labels {
				if have[k] != want {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			case m.GetSummary() != nil:
				return float64(m.GetSummary().GetSampleCount()), true
			case m.GetUntyped() != nil:
				return m.GetUntyped().GetValue(), true
			}
		}
	}
	return 0, false
}

// Get is Value with 0 for an absent series.
func Get(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := Value(t, g, name, labels)
	return v
}

// Must is Value failing the test when the series is absent.
func Must(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := Value(t, g, name, labels)
	if !ok {
		t.Fatalf("metrictest: no series %s%v", name, labels)
	}
	return v
}
