package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// warmTiers waits until every tier of p's slot cache is fresh: the
// background refresh the first slot request fired, or one asked for here.
func warmTiers(t *testing.T, p *parityEnv) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, body := p.call(t, http.MethodGet, "/cache-health", nil)
		if st == http.StatusOK && obj(t, body)["status"] == "healthy" {
			return true
		}
		p.post(t, "/cache/refresh", nil) // 409 while the background one runs
		return false
	}, 20*time.Second, 100*time.Millisecond, "the tiers are refreshed")
}
