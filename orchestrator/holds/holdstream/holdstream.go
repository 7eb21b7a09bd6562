// Package holdstream serves the live holds stream of
// docs/holds.md#the-live-stream-sse: GET /v1/holds/stream?appointmentTypeId=&clientId=&leaseMs=.
//
// A Hub keeps ONE Redis subscription per appointment type per instance
// (holds:events:{appointmentTypeId}, published by the holds engine) and fans
// each event out in process to that type's streams, adding isOwnHold per
// client and forwarding heartbeats to the hold's owner only. No event
// carries a credential: the hold id (its hold's bearer secret) is replaced
// by holds.Ref, the clientId is left out, and only the hold's public fields
// are sent. DELETE /v1/holds/stream ends a stream only with the secret
// streamToken its init event gave it. One stream per
// clientId across every instance: opening a stream runs one script that
// numbers it (a per-client counter) and publishes the number on the hubs'
// control channel; any instance holding an older stream of that client ends
// it with "replaced". Streams end with the seed's reasons (see the Reason
// constants): lease, failed writes (a vanished client is noticed on the ping
// write), replacement, cancellation, shutdown.
package holdstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Hold is the engine's hold (orchestrator/holds): what the snapshot and
// every event carry.
type Hold = holds.Hold

// Event is what the engine publishes: {"type":"hold"|"release"|"confirm"|"heartbeat", ...Hold}.
type Event struct {
	Type string `json:"type"`
	Hold
}

// The event types of the engine.
const (
	TypeHold      = "hold"
	TypeRelease   = "release"
	TypeConfirm   = "confirm"
	TypeHeartbeat = "heartbeat"
)

// Source is the consumer-side view of the holds engine: the active holds
// of an appointment type, the stream's snapshot.
type Source interface {
	Active(ctx context.Context, appointmentTypeID string) ([]Hold, error)
}

// The reasons a stream ends with (the "end" event's reason; metric label).
const (
	ReasonLeaseExpired   = "lease-expired"   // the lease ran out
	ReasonSendFailed     = "send-failed"     // a write stalled, or the client fell behind the events
	ReasonInitFailed     = "init-failed"     // subscription or snapshot failed
	ReasonClientAbort    = "client-abort"    // the client closed the connection (noticed on a write)
	ReasonClientCancel   = "client-cancel"   // cancelled through Hub.Cancel (DELETE /v1/holds/stream with its streamToken)
	ReasonServerShutdown = "server-shutdown" // the process is stopping
	ReasonReplaced       = "replaced"        // the same client opened a newer stream
	ReasonUnknown        = "unknown"         // an unexpected error (a recovered panic)
)

// Defaults (docs/holds.md#the-live-stream-sse).
const (
	DefaultPing         = 15 * time.Second
	DefaultRetry        = 5 * time.Second
	DefaultLease        = 15 * time.Minute
	DefaultMaxLease     = time.Hour
	DefaultMinLease     = time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultBuffer       = 16
	DefaultHeapWarn     = 500 << 20
	DefaultRSSWarn      = 1 << 30
	DefaultMemoryCheck  = 30 * time.Second
	DefaultReleaseQuiet = 5 * time.Second
	DefaultReleaseBurst = 1000
)

// Config configures a Hub. Zero values take the defaults.
type Config struct {
	Redis  redis.UniversalClient // required
	Source Source                // required: the snapshot
	// Channel names an appointment type's event channel; default
	// KeyPrefix + "holds:events:" + id (the engine's EventChannel).
	Channel   func(appointmentTypeID string) string
	KeyPrefix string // in front of the hub's own keys and channels (tests)

	Ping         time.Duration // ping event interval
	Retry        time.Duration // "retry:" hint
	DefaultLease time.Duration // lease without leaseMs
	MaxLease     time.Duration // longest lease; a larger leaseMs is clamped to it (docs/holds.md#the-live-stream-sse)
	MinLease     time.Duration // smallest leaseMs (below: 400)
	WriteTimeout time.Duration // a write stalled this long ends the stream (send-failed)
	Buffer       int           // events queued per stream before it counts as fallen behind
	// Shards splits each appointment type's streams into parts written in
	// parallel by as many goroutines; default GOMAXPROCS.
	Shards int

	HeapWarn    uint64        // bytes of live heap above which a warning is logged
	RSSWarn     uint64        // bytes of resident memory above which a warning is logged
	MemoryCheck time.Duration // how often memory is checked
	// After ReleaseBurst stream opens or more, once ReleaseQuiet passed
	// without another, the memory the burst used (the in-flight requests'
	// stacks and buffers) is returned to the OS; ReleaseBurst < 0: never.
	ReleaseQuiet time.Duration
	ReleaseBurst int

	// Validate, when set, checks an appointment type before a stream opens
	// (the catalogue: an unknown one answers 404).
	Validate func(ctx context.Context, appointmentTypeID string) error

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

func (c *Config) defaults() error {
	if c.Redis == nil || c.Source == nil {
		return errors.New("holdstream: Redis and Source are required")
	}
	return c.fill()
}

// Check reports whether New would accept c's settings (Redis and Source
// aside): the configuration checked before anything starts.
func (c Config) Check() error { return c.fill() }

// fill applies the defaults to c and checks the result.
func (c *Config) fill() error {
	prefix := c.KeyPrefix
	c.Channel = valutil.FuncOrDefault(c.Channel, func(id string) string { return eventChannel(prefix, id) })
	c.Ping = valutil.ValOrDefault(c.Ping, DefaultPing)
	c.Retry = valutil.ValOrDefault(c.Retry, DefaultRetry)
	c.DefaultLease = valutil.ValOrDefault(c.DefaultLease, DefaultLease)
	c.MaxLease = valutil.ValOrDefault(c.MaxLease, DefaultMaxLease)
	c.MinLease = valutil.ValOrDefault(c.MinLease, DefaultMinLease)
	c.WriteTimeout = valutil.ValOrDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.Buffer = valutil.ValOrDefault(c.Buffer, DefaultBuffer)
	c.Shards = valutil.ValOrDefault(c.Shards, runtime.GOMAXPROCS(0))
	c.HeapWarn = valutil.ValOrDefault(c.HeapWarn, DefaultHeapWarn)
	c.RSSWarn = valutil.ValOrDefault(c.RSSWarn, DefaultRSSWarn)
	c.MemoryCheck = valutil.ValOrDefault(c.MemoryCheck, DefaultMemoryCheck)
	c.ReleaseQuiet = valutil.ValOrDefault(c.ReleaseQuiet, DefaultReleaseQuiet)
	c.ReleaseBurst = valutil.ValOrDefault(c.ReleaseBurst, DefaultReleaseBurst)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	if c.Ping < 0 || c.Retry < 0 || c.MinLease < 0 || c.WriteTimeout < 0 || c.Buffer < 0 || c.Shards < 0 {
		return errors.New("holdstream: durations, Buffer and Shards must not be negative")
	}
	if c.MinLease > c.DefaultLease || c.DefaultLease > c.MaxLease {
		return fmt.Errorf("holdstream: want MinLease (%s) ≤ DefaultLease (%s) ≤ MaxLease (%s)", c.MinLease, c.DefaultLease, c.MaxLease)
	}
	return nil
}

// metrics are the hub's Prometheus series.
type hubMetrics struct {
	streams *prometheus.GaugeVec
	ended   *prometheus.CounterVec
	dropped prometheus.Counter
	fanout  prometheus.Histogram
	release prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*hubMetrics, error) {
	m := &hubMetrics{
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "holdstream_streams", Help: "Open holds streams (SSE) on this instance by appointment type.",
		}, []string{"appointment_type_id"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdstream_streams_ended_total", Help: "Holds streams ended on this instance by end reason.",
		}, []string{"reason"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "holdstream_events_undecodable_total", Help: "Messages on a holds event channel that were not a holds event.",
		}),
		fanout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "holdstream_fanout_seconds",
			Help:    "Time to write one event to every local stream of its appointment type.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5},
		}),
		release: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "holdstream_memory_releases_total", Help: "Times the memory of a burst of stream opens was returned to the OS.",
		}),
	}
	// Every end reason is counted from zero, so rates and alerts see the first.
	for _, r := range []string{ReasonLeaseExpired, ReasonSendFailed, ReasonInitFailed, ReasonClientAbort,
		ReasonClientCancel, ReasonServerShutdown, ReasonReplaced, ReasonUnknown} {
		m.ended.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.streams, m.ended, m.dropped, m.fanout, m.release} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("holdstream metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Hub is one instance's set of holds streams.
type Hub struct {
	cfg     Config
	m       *hubMetrics
	mu      sync.Mutex
	types   map[string]*typeSub
	clients map[string]*stream // the newest local stream per clientId
	closed  bool
	running sync.WaitGroup // streams being served
	control *redis.PubSub
	stop    chan struct{} // closes the control loop, the memory monitor, the pings and the workers
	loops   sync.WaitGroup
	work    chan func() // fan-out jobs for the workers (one shard each)
	burst   burst
}

// New returns a Hub; Start it before serving.
func New(cfg Config) (*Hub, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, m: m, types: map[string]*typeSub{}, clients: map[string]*stream{}, stop: make(chan struct{}),
		work: make(chan func())}, nil
}

// Start subscribes to the control channel (stream replacement and
// cancellation across instances) and starts the memory monitor.
func (h *Hub) Start(ctx context.Context) error {
	ps := h.cfg.Redis.Subscribe(ctx, controlChannel(h.cfg.KeyPrefix))
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return fmt.Errorf("holdstream: subscribe control channel: %w", err)
	}
	h.control = ps
	h.loops.Add(4 + h.cfg.Shards - 1)
	go func() { defer h.loops.Done(); h.controlLoop(ps.Channel()) }()
	go func() { defer h.loops.Done(); h.monitorMemory() }()
	go func() { defer h.loops.Done(); h.releaseAfterBursts() }()
	go func() { defer h.loops.Done(); h.pingLoop() }()
	for range h.cfg.Shards - 1 {
		go func() { defer h.loops.Done(); h.worker() }()
	}
	return nil
}

// Streams is the number of streams open on this instance.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ts := range h.types {
		n += ts.n
	}
	return n
}

// Shutdown ends every stream with "server-shutdown", waits (within ctx)
// until each has written its end event, and closes the hub's
// subscriptions. New streams are refused from the first moment.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for _, ts := range h.types {
		for _, sh := range ts.shards {
			sh.each(func(s *stream) { h.end(s, ReasonServerShutdown) })
		}
	}
	for _, s := range h.clients {
		h.end(s, ReasonServerShutdown)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.running.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("holdstream shutdown: streams still open: %w", ctx.Err())
		h.abortAll() // a slow client's drain would otherwise hold its write for WriteTimeout
	}
	close(h.stop)
	if h.control != nil {
		_ = h.control.Close()
	}
	h.loops.Wait()
	return err
}

// abortAll fails the pending write of every stream still attached, so the
// goroutines draining to slow clients end now (their reason is already
// server-shutdown).
func (h *Hub) abortAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	abort := func(s *stream) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.conn != nil {
			s.conn.Abort()
		}
	}
	for _, ts := range h.types {
		for _, sh := range ts.shards {
			sh.each(abort)
		}
	}
	for _, s := range h.clients {
		abort(s)
	}
}
