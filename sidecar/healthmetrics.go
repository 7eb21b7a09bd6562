package main

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
)

// healthScrapeTimeout bounds each collector's Redis reads in one scrape.
// The collectors of this file export the series read at scrape time, for
// the alerts of flows/monitoring:
//
//	flowgate_redis_up                                   1 when Redis answers PING within healthScrapeTimeout
//	flowgate_slot_cache_tier_status{tier,status}        1 for the tier's cache-health status, 0 for the others
//	flowgate_slot_cache_tier_age_seconds{tier}          age of the tier's list (absent while empty)
//	flowgate_slot_cache_tier_consecutive_failures{tier} refreshes failed in a row
const healthScrapeTimeout = time.Second

// tierStatuses are the values of the status label, every one exported per
// tier (a state set), so a change of status never leaves a stale 1 behind.
var tierStatuses = []string{slotcache.StatusFresh, slotcache.StatusStale, slotcache.StatusCriticalStale,
	slotcache.StatusExpired, slotcache.StatusEmpty, slotcache.StatusError}

// redisUpCollector pings Redis at each scrape.
type redisUpCollector struct {
	ping func(context.Context) error
	up   *prometheus.Desc
}

func newRedisUpCollector(ping func(context.Context) error) *redisUpCollector {
	return &redisUpCollector{ping: ping, up: prometheus.NewDesc("flowgate_redis_up",
		"1 when Redis answered PING within 1s at this scrape, else 0 (/readyz answers 503 then).", nil, nil)}
}

func (c *redisUpCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.up }

func (c *redisUpCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), healthScrapeTimeout)
	defer cancel()
	v := 1.0
	if c.ping(ctx) != nil {
		v = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, v)
}

// slotCacheCollector exports the tiered slot cache's health (the
// cache-health operation's tiers) at each scrape.
type slotCacheCollector struct {
	health                func(context.Context) (contracts.CacheHealth, error)
	log                   *slog.Logger
	status, age, failures *prometheus.Desc
}

func newSlotCacheCollector(health func(context.Context) (contracts.CacheHealth, error), log *slog.Logger) *slotCacheCollector {
	return &slotCacheCollector{health: health, log: log,
		status: prometheus.NewDesc("flowgate_slot_cache_tier_status",
			"1 for the slot cache tier's status (fresh, stale, critical_stale, expired, empty, error), 0 for the others.",
			[]string{"tier", "status"}, nil),
		age: prometheus.NewDesc("flowgate_slot_cache_tier_age_seconds",
			"Age of the slot cache tier's list (absent while the tier is empty).", []string{"tier"}, nil),
		failures: prometheus.NewDesc("flowgate_slot_cache_tier_consecutive_failures",
			"Refreshes of the slot cache tier that failed in a row.", []string{"tier"}, nil),
	}
}

func (c *slotCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.status
	ch <- c.age
	ch <- c.failures
}

// Collect leaves the series out of this scrape when Redis cannot be read
// (flowgate_redis_up says why).
func (c *slotCacheCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), healthScrapeTimeout)
	defer cancel()
	h, err := c.health(ctx)
	if err != nil {
		c.log.Warn("slot cache health for metrics", "err", err)
		return
	}
	for _, t := range h.Tiers {
		tier := strconv.Itoa(t.Tier)
		for _, s := range tierStatuses {
			v := 0.0
			if s == t.Status {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.status, prometheus.GaugeValue, v, tier, s)
		}
		if t.AgeSeconds != nil {
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, float64(*t.AgeSeconds), tier)
		}
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.GaugeValue, float64(t.ConsecutiveFailures), tier)
	}
}
