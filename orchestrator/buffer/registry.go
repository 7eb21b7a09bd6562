package buffer

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ErrRegistryClosed is a registration after Start.
var ErrRegistryClosed = errors.New("buffer: handlers cannot be registered after start")

// registry maps types to handlers.
type registry struct {
	mu     sync.RWMutex
	m      map[string]Handler
	sealed bool
}

func newRegistry() *registry { return &registry{m: map[string]Handler{}} }

func (r *registry) add(h Handler) error {
	if h == nil || h.Type() == "" {
		return errors.New("buffer: a handler needs a type")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		return fmt.Errorf("%w (type %q)", ErrRegistryClosed, h.Type())
	}
	if _, dup := r.m[h.Type()]; dup {
		return fmt.Errorf("buffer: a handler for type %q is already registered", h.Type())
	}
	r.m[h.Type()] = h
	return nil
}

func (r *registry) get(typ string) (Handler, bool) {
	r.mu.RLock()
	h, ok := r.m[typ]
	r.mu.RUnlock()
	return h, ok
}

func (r *registry) seal() {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}

func (r *registry) types() []string {
	r.mu.RLock()
	out := make([]string, 0, len(r.m))
	for t := range r.m {
		out = append(out, t)
	}
	r.mu.RUnlock()
	sort.Strings(out)
	return out
}
