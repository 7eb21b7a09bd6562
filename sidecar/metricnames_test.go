package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Every series of flowgate's own sits under flowgate_ (the libraries' keep
// their prefixes); each renamed one is exposed under its old name too,
// with the same samples and a help that says it is a deprecated alias.
func TestMetricsSitUnderOnePrefix(t *testing.T) {
	_, base := startMain(t, map[string]string{})
	for i := 0; i < 3; i++ { // an HTTP request or two, so the HTTP series exist
		_, _ = get(t, base+"/healthz")
	}
	resp, err := http.Get(base + "/v1/holds/stream?appointmentTypeId=none&clientId=metrics-test&leaseMs=100")
	if err == nil {
		_ = resp.Body.Close()
	}
	status, body := get(t, base+"/metrics")
	require.Equal(t, 200, status, body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)

	library := regexp.MustCompile(`^(flowgate|go|process|promhttp|asynq)_`)
	aliases := map[string]bool{}
	for old, name := range metricRenames {
		aliases[old] = true
		require.Regexp(t, `^flowgate_`, name)
	}
	for name, mf := range families {
		if aliases[name] {
			require.Contains(t, mf.GetHelp(), "Deprecated alias of "+metricRenames[name], name)
			renamed, ok := families[metricRenames[name]]
			require.True(t, ok, "%s is exposed without its new name %s", name, metricRenames[name])
			require.Equal(t, len(renamed.GetMetric()), len(mf.GetMetric()), "%s and %s carry the same series", name, metricRenames[name])
			continue
		}
		require.Regexp(t, library, name, "a series outside flowgate_ (and not a library's): add it to metricRenames")
	}
	require.Contains(t, families, "flowgate_http_requests_total")
	require.Contains(t, families, "http_requests_total", "the old name stays for one release")
}
