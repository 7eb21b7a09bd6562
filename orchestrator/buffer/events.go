package buffer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Event names.
const (
	EventEnqueued  = "enqueued"
	EventCompleted = "completed"
	EventFailed    = "failed"
	EventDLQ       = "dlq"
	EventCircuit   = "circuit"
	EventEmit      = "emit" // sse.emit's payloads
)

// metrics are the buffer's series.
type metrics struct {
	events *prometheus.CounterVec
	// counters are events' children, each looked up once.
	countersMu sync.RWMutex
	counters   map[eventType]prometheus.Counter
	dropped    prometheus.Counter
	depth      prometheus.Gauge
	level      *prometheus.GaugeVec
	circuit    *prometheus.GaugeVec
	duration   *prometheus.HistogramVec
	bulkhead   *prometheus.CounterVec
}

// eventType is a key of metrics.counters.
type eventType struct{ event, typ string }

// event is the events counter of (event, type), without a label lookup
// per event.
func (m *metrics) event(event, typ string) prometheus.Counter {
	k := eventType{event, typ}
	m.countersMu.RLock()
	c, ok := m.counters[k]
	m.countersMu.RUnlock()
	if ok {
		return c
	}
	c = m.events.WithLabelValues(event, typ)
	m.countersMu.Lock()
	m.counters[k] = c
	m.countersMu.Unlock()
	return c
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		counters: map[eventType]prometheus.Counter{},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_buffer_events_total", Help: "Work buffer events by event and message type.",
		}, []string{"event", "type"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flowgate_buffer_events_dropped_total", Help: "Events not published to the Redis channel because the publisher was behind.",
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flowgate_buffer_queue_depth", Help: "Messages pending, scheduled, retrying or in flight (this instance's last reading).",
		}),
		level: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_buffer_backpressure_threshold", Help: "Backpressure thresholds (normal, warning, alert, max) in messages.",
		}, []string{"level"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_buffer_circuit_state", Help: "Breaker state per type: 0 closed, 1 half-open, 2 open.",
		}, []string{"type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flowgate_buffer_process_seconds", Help: "Handler run time by type and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"type", "outcome"}),
		bulkhead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgate_buffer_bulkhead_deferred_total", Help: "Messages deferred (no attempt counted) because their type had its concurrency cap in flight on this instance.",
		}, []string{"type"}),
	}
	for _, c := range []prometheus.Collector{m.events, m.dropped, m.depth, m.level, m.circuit, m.duration, m.bulkhead} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// publisher sends events to the Redis channel from one goroutine, a
// pipeline per burst, so processing never waits on PUBLISH. When it falls
// behind by more than its buffer, events are dropped and counted.
type publisher struct {
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
	dropped prometheus.Counter
	ch      chan contracts.BufferEvent
	done    chan struct{}
	mu      sync.RWMutex
	closed  bool
	// listeners is the channel's subscriber count, re-read every second:
	// with nobody subscribed, events are not published (metrics still count).
	listeners atomic.Int64
	checked   atomic.Int64 // unix nanos of the last count
}

func newPublisher(rdb redis.UniversalClient, channel string, log *slog.Logger, dropped prometheus.Counter) *publisher {
	p := &publisher{rdb: rdb, channel: channel, log: log, dropped: dropped,
		ch: make(chan contracts.BufferEvent, 8192), done: make(chan struct{})}
	go p.run()
	return p
}

// send queues e for publishing; callers check listened first.
func (p *publisher) send(e contracts.BufferEvent) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return
	}
	select {
	case p.ch <- e:
	default:
		p.dropped.Inc()
	}
}

// listened reports whether anyone subscribes to the channel, asking Redis
// at most once a second (numSub).
func (p *publisher) listened() bool {
	now := time.Now().UnixNano()
	last := p.checked.Load()
	if now-last > int64(time.Second) && p.checked.CompareAndSwap(last, now) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := numSub(ctx, p.rdb, p.channel)
		cancel()
		if err != nil {
			p.listeners.Store(1) // unknown: publish
		} else {
			p.listeners.Store(n)
		}
	}
	return p.listeners.Load() > 0
}

// numSub counts a channel's subscribers. PUBSUB NUMSUB answers for the
// node it is sent to; on Redis Cluster a PUBLISH reaches every node and a
// subscriber may be connected to any of them (masters and replicas), so
// every node is asked and the answers summed.
func numSub(ctx context.Context, rdb redis.UniversalClient, channel string) (int64, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		m, err := rdb.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			return 0, fmt.Errorf("buffer: PUBSUB NUMSUB: %w", err)
		}
		return m[channel], nil
	}
	var total atomic.Int64
	err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		m, err := c.PubSubNumSub(ctx, channel).Result()
		total.Add(m[channel])
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("buffer: PUBSUB NUMSUB on the cluster: %w", err)
	}
	return total.Load(), nil
}

func (p *publisher) run() {
	defer close(p.done)
	batch := make([]contracts.BufferEvent, 0, 256)
	for e := range p.ch {
		batch = append(batch[:0], e)
	fill:
		for len(batch) < cap(batch) {
			select {
			case e, ok := <-p.ch:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			default:
				break fill
			}
		}
		p.flush(batch)
	}
}

func (p *publisher) flush(batch []contracts.BufferEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := p.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, e := range batch {
			b, _ := json.Marshal(e) // BufferEvent always marshals
			pl.Publish(ctx, p.channel, b)
		}
		return nil
	})
	if err != nil {
		p.log.Warn("buffer: publish events", "n", len(batch), "err", err)
	}
}

// close flushes what is queued and stops.
func (p *publisher) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.ch)
	}
	p.mu.Unlock()
	<-p.done
}
