package buffer

import (
	"fmt"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// CircuitSettings is implemented by a handler that brings its own breaker
// settings; zero fields take the buffer's (Config.Circuit).
type CircuitSettings interface {
	Circuit() CircuitConfig
}

// A handler that also implements asynqrt.RetryPolicy computes its own
// retry delays (its backoff, a downstream's Retry-After); others use
// Config.Backoff.

// wire creates a registered handler's breaker, metric and Asynq route.
func (b *Buffer) wire(h Handler) {
	if cs, ok := h.(CircuitSettings); ok {
		b.circuits.setOverride(h.Type(), cs.Circuit())
	}
	b.circuits.add(h.Type())
	b.metrics.circuit.WithLabelValues(h.Type()).Set(0)
	// The type's event series exist at zero from the start, so rates and
	// alerts see its first failure.
	for _, e := range []string{EventEnqueued, EventCompleted, EventFailed, EventDLQ} {
		b.metrics.event(e, h.Type())
	}
	var policy asynqrt.RetryPolicy = b.cfg.Backoff
	if p, ok := h.(asynqrt.RetryPolicy); ok {
		policy = p
	}
	b.rt.Handle(h.Type(), newProcessor(b, h), policy)
}

// RegisterLive adds a handler to a buffer that may already run (a reloaded
// handlers file declaring a new type). Its route and breaker exist before
// enqueue sees the type. A duplicate or empty type is an error.
func (b *Buffer) RegisterLive(h Handler) error {
	if h == nil || h.Type() == "" {
		return fmt.Errorf("buffer: a handler needs a type")
	}
	if _, dup := b.handlers.get(h.Type()); dup {
		return fmt.Errorf("buffer: a handler for type %q is already registered", h.Type())
	}
	b.wire(h)
	r := b.handlers
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[h.Type()]; dup {
		return fmt.Errorf("buffer: a handler for type %q is already registered", h.Type())
	}
	r.m[h.Type()] = h
	return nil
}

// SetCircuit replaces a type's breaker settings (zero fields: the buffer's)
// and, when they changed, its breaker (closed, counts reset); false when
// the type is unknown.
func (b *Buffer) SetCircuit(typ string, cfg CircuitConfig) bool {
	if _, ok := b.handlers.get(typ); !ok {
		return false
	}
	if b.circuits.settings(typ) == b.circuits.merged(cfg) {
		return true
	}
	b.circuits.setOverride(typ, cfg)
	return b.circuits.reset(typ)
}

// merged is cfg with the buffer's settings in its zero fields.
func (c *circuits) merged(cfg CircuitConfig) CircuitConfig {
	if cfg.Threshold == 0 {
		cfg.Threshold = c.cfg.Threshold
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = c.cfg.Timeout
	}
	if cfg.HalfOpenRequests == 0 {
		cfg.HalfOpenRequests = c.cfg.HalfOpenRequests
	}
	return cfg
}

func (c *circuits) setOverride(typ string, cfg CircuitConfig) {
	c.mu.Lock()
	if c.over == nil {
		c.over = map[string]CircuitConfig{}
	}
	c.over[typ] = c.merged(cfg)
	c.mu.Unlock()
}

// settings are a type's breaker settings.
func (c *circuits) settings(typ string) CircuitConfig {
	c.mu.RLock()
	cfg, ok := c.over[typ]
	c.mu.RUnlock()
	if !ok {
		return c.cfg
	}
	return cfg
}
