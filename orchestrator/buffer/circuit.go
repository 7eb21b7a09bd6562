package buffer

import (
	"errors"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// CircuitConfig sets every type's breaker.
type CircuitConfig struct {
	Threshold uint32        // consecutive failures that open it; default 5
	Timeout   time.Duration // open → half-open after; default 30s
	// HalfOpenRequests are the trial calls let through half-open; default 1.
	HalfOpenRequests uint32
}

func (c *CircuitConfig) withDefaults() {
	c.Threshold = valutil.ValOrDefault(c.Threshold, DefaultCircuitThreshold)
	c.Timeout = valutil.PositiveOrDefault(c.Timeout, DefaultCircuitTimeout)
	c.HalfOpenRequests = valutil.ValOrDefault(c.HalfOpenRequests, 1)
}

// circuits holds one breaker per handler type (per instance; see the
// package comment).
type circuits struct {
	cfg      CircuitConfig
	onChange func(typ string, from, to gobreaker.State)

	mu   sync.RWMutex
	m    map[string]*atomic.Pointer[gobreaker.CircuitBreaker[any]]
	over map[string]CircuitConfig // a type's own settings (CircuitSettings)
}

func newCircuits(cfg CircuitConfig, onChange func(typ string, from, to gobreaker.State)) *circuits {
	cfg.withDefaults()
	return &circuits{cfg: cfg, onChange: onChange, m: map[string]*atomic.Pointer[gobreaker.CircuitBreaker[any]]{}}
}

func (c *circuits) build(typ string) *gobreaker.CircuitBreaker[any] {
	cfg := c.settings(typ)
	th := cfg.Threshold
	return gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        typ,
		MaxRequests: cfg.HalfOpenRequests,
		Timeout:     cfg.Timeout,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= th },
		// A message that can never succeed (bad payload, 4xx) is not the
		// downstream failing.
		IsSuccessful: func(err error) bool { return err == nil || !Retryable(err) },
		// Neither a failure nor a success: a 429 is the downstream
		// pacing us (it is alive; the message is still retried, after
		// its Retry-After), a deferral never reached it.
		IsExcluded: excludedFromBreaker,
		OnStateChange: func(name string, from, to gobreaker.State) {
			if c.onChange != nil {
				c.onChange(name, from, to)
			}
		},
	})
}

// add creates the breaker of a type.
func (c *circuits) add(typ string) {
	p := &atomic.Pointer[gobreaker.CircuitBreaker[any]]{}
	p.Store(c.build(typ))
	c.mu.Lock()
	c.m[typ] = p
	c.mu.Unlock()
}

func (c *circuits) get(typ string) *gobreaker.CircuitBreaker[any] {
	c.mu.RLock()
	p := c.m[typ]
	c.mu.RUnlock()
	if p == nil {
		return nil
	}
	return p.Load()
}

// Reset closes a type's breaker; false when the type is unknown.
func (c *circuits) reset(typ string) bool {
	c.mu.RLock()
	p := c.m[typ]
	c.mu.RUnlock()
	if p == nil {
		return false
	}
	old := p.Swap(c.build(typ))
	if st := old.State(); st != gobreaker.StateClosed && c.onChange != nil {
		c.onChange(typ, st, gobreaker.StateClosed)
	}
	return true
}

// snapshot lists the breakers by type.
func (c *circuits) snapshot() []contracts.BufferCircuit {
	c.mu.RLock()
	out := make([]contracts.BufferCircuit, 0, len(c.m))
	for typ, p := range c.m {
		cb := p.Load()
		n := cb.Counts()
		out = append(out, contracts.BufferCircuit{
			Type: typ, State: stateName(cb.State()), Requests: n.Requests, TotalFailures: n.TotalFailures,
			ConsecutiveFailures: n.ConsecutiveFailures, ConsecutiveSuccesses: n.ConsecutiveSuccesses,
		})
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// stateName spells a breaker state as the seed does.
func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return "OPEN"
	case gobreaker.StateHalfOpen:
		return "HALF_OPEN"
	}
	return "CLOSED"
}

// excludedFromBreaker reports an outcome the breaker neither counts as a
// failure nor as a success: a 429 (Too Many Requests), a deferral and a
// request that could not be built (it never reached the downstream).
func excludedFromBreaker(err error) bool {
	var se *StatusError
	var de *asynqrt.DeferError
	return (errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests) || errors.As(err, &de) ||
		errors.Is(err, ErrRequestInvalid)
}

// isBreakerRefusal reports an open (or saturated half-open) breaker.
func isBreakerRefusal(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}
