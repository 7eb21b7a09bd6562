package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// withRegistry gives a second buffer on the same config its own metrics.
func withRegistry(c buffer.Config) buffer.Config {
	c.Registerer = prometheus.NewRegistry()
	return c
}

// another starts a second buffer on x's config (another flowgate
// instance on the same Redis) with handlers hs.
func (x *bundle) another(t *testing.T, hs ...buffer.Handler) *buffer.Buffer {
	t.Helper()
	y, err := buffer.New(withRegistry(x.cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(y.Stop)
	for _, h := range hs {
		if err := y.Register(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := y.Start(); err != nil {
		t.Fatal(err)
	}
	return y
}

// eventLog collects the events published on the Redis channel.
type eventLog struct {
	mu  sync.Mutex
	evs []contracts.BufferEvent
}

func (l *eventLog) states() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.evs {
		if e.Event == buffer.EventCircuit {
			out = append(out, e.State)
		}
	}
	return out
}

func subscribe(t *testing.T, x *bundle) *eventLog {
	t.Helper()
	ps := x.db.Client.Subscribe(context.Background(), x.buf.Events())
	_, err := ps.Receive(context.Background())
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	l := &eventLog{}
	go func() {
		for m := range ps.Channel() {
			var e contracts.BufferEvent
			if json.Unmarshal([]byte(m.Payload), &e) == nil {
				l.mu.Lock()
				l.evs = append(l.evs, e)
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = ps.Close() })
	return l
}
