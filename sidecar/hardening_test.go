package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// TestMetricsAfterOddMethods is issue 8's reproduction: OPTIONS, PATCH and
// TRACE requests, then /metrics must answer 200 with a body that parses.
func TestMetricsAfterOddMethods(t *testing.T) {
	_, base := startMain(t, map[string]string{})
	for i := 0; i < 3; i++ {
		for _, m := range []string{"OPTIONS", "PATCH", "TRACE"} {
			req, err := http.NewRequest(m, base+"/queue", nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
	}
	status, body := get(t, base+"/metrics")
	require.Equal(t, 200, status, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	methods := map[string]bool{}
	for _, m := range families["http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" {
				methods[l.GetValue()] = true
			}
		}
	}
	for _, m := range []string{"OPTIONS", "PATCH", "TRACE"} {
		require.True(t, methods[m], "a series for %s", m)
	}
}

// requireNoInternals fails when an answer body shows an address, a port or
// Go's error text (issue 8, defect 4: /readyz answered
// "read tcp 127.0.0.1:38046->127.0.0.1:26391: i/o timeout").
func requireNoInternals(t *testing.T, body string, addrs ...string) {
	t.Helper()
	for _, s := range append(addrs, "127.0.0.1", "tcp", "dial", "i/o", "timeout", "refused", "EOF", "->") {
		require.NotContains(t, body, s, "the body must not show internals")
	}
}
