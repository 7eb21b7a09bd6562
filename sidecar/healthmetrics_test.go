package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

func TestRedisUpCollector(t *testing.T) {
	var down error
	reg := prometheus.NewRegistry()
	reg.MustRegister(newRedisUpCollector(func(context.Context) error { return down }))
	want := func(v string) string {
		return "# HELP flowgate_redis_up 1 when Redis answered PING within 1s at this scrape, else 0 (/readyz answers 503 then).\n" +
			"# TYPE flowgate_redis_up gauge\nflowgate_redis_up " + v + "\n"
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want("1"))))
	down = errors.New("dial tcp: connection refused")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want("0"))))
}

// Every status of a tier is exported, 1 for the current one; an empty tier
// has no age; a Redis error leaves the series out.
func TestSlotCacheCollector(t *testing.T) {
	age := int64(1200)
	health := contracts.CacheHealth{Tiers: []contracts.CacheTierHealth{
		{Tier: 1, Status: "critical_stale", AgeSeconds: &age, ConsecutiveFailures: 2},
		{Tier: 2, Status: "empty"},
	}}
	var err error
	reg := prometheus.NewRegistry()
	reg.MustRegister(newSlotCacheCollector(func(context.Context) (contracts.CacheHealth, error) { return health, err }, slog.New(slog.DiscardHandler)))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP flowgate_slot_cache_tier_age_seconds Age of the slot cache tier's list (absent while the tier is empty).
# TYPE flowgate_slot_cache_tier_age_seconds gauge
flowgate_slot_cache_tier_age_seconds{tier="1"} 1200
# HELP flowgate_slot_cache_tier_consecutive_failures Refreshes of the slot cache tier that failed in a row.
# TYPE flowgate_slot_cache_tier_consecutive_failures gauge
flowgate_slot_cache_tier_consecutive_failures{tier="1"} 2
flowgate_slot_cache_tier_consecutive_failures{tier="2"} 0
# HELP flowgate_slot_cache_tier_status 1 for the slot cache tier's status (fresh, stale, critical_stale, expired, empty, error), 0 for the others.
# TYPE flowgate_slot_cache_tier_status gauge
flowgate_slot_cache_tier_status{status="critical_stale",tier="1"} 1
flowgate_slot_cache_tier_status{status="empty",tier="1"} 0
flowgate_slot_cache_tier_status{status="error",tier="1"} 0
flowgate_slot_cache_tier_status{status="expired",tier="1"} 0
flowgate_slot_cache_tier_status{status="fresh",tier="1"} 0
flowgate_slot_cache_tier_status{status="stale",tier="1"} 0
flowgate_slot_cache_tier_status{status="critical_stale",tier="2"} 0
flowgate_slot_cache_tier_status{status="empty",tier="2"} 1
flowgate_slot_cache_tier_status{status="error",tier="2"} 0
flowgate_slot_cache_tier_status{status="expired",tier="2"} 0
flowgate_slot_cache_tier_status{status="fresh",tier="2"} 0
flowgate_slot_cache_tier_status{status="stale",tier="2"} 0
`)))
	err = errors.New("slot cache unavailable")
	n, gerr := testutil.GatherAndCount(reg)
	require.NoError(t, gerr)
	require.Zero(t, n)
}
