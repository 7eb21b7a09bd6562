package main

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/orchestrator/durable"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// durability returns the middleware that holds every successful write's
// answer until REDIS_MIN_REPLICAS_ACK replicas have it (orchestrator/durable),
// or nil when the setting is 0. Its waits are measured in
// flowgate_durable_wait_seconds{result="ok|not_replicated|error"}.
func (m *Main) durability() (fiber.Handler, error) {
	if m.Config.RedisMinReplicasAck == 0 {
		return nil, nil
	}
	b, err := durable.New(m.redis.Client, durable.Config{
		Replicas: m.Config.RedisMinReplicasAck,
		Timeout:  m.Config.RedisReplicaAckTimeout,
	})
	if err != nil {
		return nil, &ConfigError{Var: "REDIS_MIN_REPLICAS_ACK", Err: err}
	}
	waits := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flowgate_durable_wait_seconds",
		Help:    "Time a successful write's answer waited for REDIS_MIN_REPLICAS_ACK replicas, by result.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"result"})
	if err := m.registry.Register(waits); err != nil {
		return nil, err
	}
	m.Logger.Info("durability barrier on: successful writes wait for replicas",
		"replicas", m.Config.RedisMinReplicasAck, "timeout", m.Config.RedisReplicaAckTimeout)
	return web.Replicated(b, func(took time.Duration, err error) {
		result := "ok"
		switch {
		case errors.Is(err, durable.ErrNotReplicated):
			result = "not_replicated"
			m.Logger.Warn("write answered 503: not on enough replicas in time", "err", err)
		case err != nil:
			result = "error"
			m.Logger.Warn("write answered 503: the replica check failed", "err", err)
		}
		waits.WithLabelValues(result).Observe(took.Seconds())
	}), nil
}
