package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/autopipe"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Defaults of Config (the settings table reads these).
const (
	// DefaultServers × DefaultConcurrency is the setting measured best on
	// the 2-core box, add + process over HTTP and pure processing alike
	// (docs/performance.md, "Against the peers"): 30 workers, where the
	// seed's pool of 5 per dequeuer read 25–35 % under it and 2 × 10
	// 10–15 %.
	DefaultServers     = 2
	DefaultConcurrency = 15
	// DefaultTypeConcurrency is Config.TypeConcurrency's "auto": half
	// the workers, at least 1.
	DefaultTypeConcurrency    = 0
	DefaultMaxQueueSize       = 1000
	DefaultWarnDepth          = 500
	DefaultAlertDepth         = 900
	DefaultNormalDepth        = 100
	DefaultDepthRefresh       = 100 * time.Millisecond
	DefaultDepthReconcile     = 10 * time.Second
	DefaultCompletedRetention = 24 * time.Hour
	DefaultFailedRetention    = 7 * 24 * time.Hour
	DefaultMaxPayload         = 256 << 10
	DefaultDLQAlertThreshold  = 100
	DefaultShutdownTimeout    = 8 * time.Second
	DefaultPollInterval       = 100 * time.Millisecond
	MaxBatch                  = 1000
)

// Config configures a Buffer. Zero values take the defaults.
type Config struct {
	ConnOpt asynq.RedisConnOpt    // required: how the buffer's asynq servers reach Redis
	Redis   redis.UniversalClient // required: the shared client

	Servers         int
	Concurrency     int
	ShutdownTimeout time.Duration
	DelayedCheck    time.Duration // how often due retries are moved to pending; default 1s
	PollInterval    time.Duration // an idle dequeuer's sleep (seed: 100ms); default DefaultPollInterval

	Backoff            Backoff // default the seed's 1 s · 2^n, cap 60 s
	DefaultMaxRetries  int     // for handlers answering Unset and requests naming none; 0 → DefaultMaxRetries, NoRetries → none
	MaxQueueSize       int64
	WarnDepth          int64
	AlertDepth         int64
	DepthRefresh       time.Duration // how often finished messages are subtracted from the depth counter
	DepthReconcile     time.Duration // how often the depth counter is re-set from Asynq's queues
	CompletedRetention time.Duration
	FailedRetention    time.Duration
	MaxPayload         int // bytes of a message payload
	DLQAlertThreshold  int64
	Alerter            Alerter // receives DLQ threshold crossings; default: log only
	Circuit            CircuitConfig
	// TypeConcurrency caps the messages of one type in flight on this
	// instance (BUFFER_TYPE_CONCURRENCY), a bulkhead: a message over its
	// type's cap is deferred without an attempt (as CIRCUIT_OPEN is), so
	// one slow or hanging target cannot take every worker. 0 → half the
	// workers (Servers × Concurrency / 2, at least 1). A handler that
	// implements ConcurrencyCapper sets its own.
	TypeConcurrency int

	// PlainEnqueue turns off the auto-pipelined enqueue client (see
	// enqueueClient): enqueues go through the runtime's client and results
	// through Asynq's ResultWriter.
	PlainEnqueue bool

	// Shards is the number of hash tags the buffer's admission state
	// (depth counter, place credit, idempotency and messageId claims) is
	// spread over (REDIS_SHARDS, 1..shard.MaxShards; default 1: the keys
	// "{buffer}" of before). On Redis Cluster each shard's scripts run on
	// the master owning its tag's slot (docs/scale-out.md).
	Shards int

	KeyPrefix  string // default "flowgate"
	WorkerID   string // default hostname:pid
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

func (c *Config) withDefaults() {
	c.Servers = valutil.ValOrDefault(c.Servers, DefaultServers)
	c.Concurrency = valutil.ValOrDefault(c.Concurrency, DefaultConcurrency)
	c.Backoff = valutil.ValOrDefault(c.Backoff, Backoff{Base: DefaultBackoffBase, Multiplier: DefaultBackoffMultiplier, Max: DefaultBackoffMax})
	c.DefaultMaxRetries = valutil.ValOrDefault(c.DefaultMaxRetries, DefaultMaxRetries)
	c.MaxQueueSize = valutil.ValOrDefault(c.MaxQueueSize, DefaultMaxQueueSize)
	c.WarnDepth = valutil.ValOrDefault(c.WarnDepth, DefaultWarnDepth)
	c.AlertDepth = valutil.ValOrDefault(c.AlertDepth, DefaultAlertDepth)
	c.DLQAlertThreshold = valutil.ValOrDefault(c.DLQAlertThreshold, DefaultDLQAlertThreshold)
	c.ShutdownTimeout = valutil.ValOrDefault(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.DelayedCheck = valutil.ValOrDefault(c.DelayedCheck, time.Second)
	c.PollInterval = valutil.ValOrDefault(c.PollInterval, DefaultPollInterval)
	c.DepthRefresh = valutil.ValOrDefault(c.DepthRefresh, DefaultDepthRefresh)
	c.DepthReconcile = valutil.ValOrDefault(c.DepthReconcile, DefaultDepthReconcile)
	c.CompletedRetention = valutil.ValOrDefault(c.CompletedRetention, DefaultCompletedRetention)
	c.FailedRetention = valutil.ValOrDefault(c.FailedRetention, DefaultFailedRetention)
	c.MaxPayload = valutil.ValOrDefault(c.MaxPayload, DefaultMaxPayload)
	c.Shards = valutil.ValOrDefault(c.Shards, 1)
	c.TypeConcurrency = valutil.ValOrDefault(c.TypeConcurrency, max(1, c.Servers*c.Concurrency/2))
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.WorkerID = valutil.ValOrDefaultFunc(c.WorkerID, defaultWorkerID)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Registerer = valutil.ValOrDefault[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
}

// defaultWorkerID is host:pid.
func defaultWorkerID() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

func (c *Config) validate() error {
	switch {
	case c.ConnOpt == nil || c.Redis == nil:
		return errors.New("buffer: ConnOpt and Redis are required")
	case c.Backoff.Base <= 0 || c.Backoff.Max < c.Backoff.Base || c.Backoff.Multiplier < 1:
		return fmt.Errorf("buffer: backoff needs base > 0, max ≥ base, multiplier ≥ 1, got %+v", c.Backoff)
	case c.TypeConcurrency < 1:
		return fmt.Errorf("buffer: TypeConcurrency must be ≥ 1, got %d", c.TypeConcurrency)
	case c.MaxQueueSize < 1:
		return fmt.Errorf("buffer: MaxQueueSize must be ≥ 1, got %d", c.MaxQueueSize)
	case c.Shards < 1 || c.Shards > shard.MaxShards:
		return fmt.Errorf("buffer: Shards must be 1..%d, got %d", shard.MaxShards, c.Shards)
	case c.MaxQueueSize < int64(c.Shards):
		// Each shard admits its share of the maximum: a share of 0 would
		// refuse every message whose key falls in that shard.
		return fmt.Errorf("buffer: MaxQueueSize (%d) must be at least Shards (%d)", c.MaxQueueSize, c.Shards)
	case c.MaxPayload < 1:
		return fmt.Errorf("buffer: MaxPayload must be ≥ 1, got %d", c.MaxPayload)
	case c.CompletedRetention < 0 || c.FailedRetention < 0:
		return errors.New("buffer: retentions must not be negative")
	}
	return nil
}

// Lifecycle states (seed: STOPPED → RUNNING → SHUTTING_DOWN → STOPPED).
const (
	StateStopped      = "STOPPED"
	StateRunning      = "RUNNING"
	StateShuttingDown = "SHUTTING_DOWN"
)

// Buffer is the work buffer.
type Buffer struct {
	cfg       Config
	rt        *asynqrt.Runtime
	handlers  *registry
	circuits  *circuits
	shards    shard.Set
	depth     *depthSet
	admitters []*admitter   // one per shard
	enq       *asynq.Client // Asynq enqueues (enqueueClient)
	ap        redis.Cmdable // the auto-pipelined client of enq; nil: none
	stopOnce  sync.Once
	released  atomic.Bool
	metrics   *metrics
	workerID  []byte // cfg.WorkerID as a JSON string, for every completion record
	pub       *publisher
	log       *slog.Logger

	mu    sync.Mutex   // lifecycle: Start and Stop
	gate  sync.RWMutex // state changes (write) vs. admitting enqueues (read; never held long)
	state atomic.Value // string
	// inflight counts enqueues in progress, so Stop waits for them.
	inflight sync.WaitGroup
}

// New builds a stopped Buffer; register handlers, then Start.
func New(cfg Config) (*Buffer, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("buffer: metrics: %w", err)
	}
	rt, err := asynqrt.New(asynqrt.Config{
		ConnOpt: cfg.ConnOpt, Redis: cfg.Redis, Queues: queueWeights(), StrictPriority: true,
		Servers: cfg.Servers, Concurrency: cfg.Concurrency, ShutdownTimeout: cfg.ShutdownTimeout,
		DelayedCheck: cfg.DelayedCheck, TaskCheckInterval: cfg.PollInterval, DefaultRetry: cfg.Backoff, KeyPrefix: cfg.KeyPrefix,
		Logger: cfg.Logger.With("component", "buffer"), Now: cfg.Now,
		// The runtime's dead-letter series, renamed so they sit beside the
		// main runtime's on one registry.
		Registerer: prometheus.WrapRegistererWithPrefix("buffer_", cfg.Registerer),
	})
	if err != nil {
		return nil, fmt.Errorf("buffer: runtime: %w", err)
	}
	b := &Buffer{cfg: cfg, rt: rt, handlers: newRegistry(), metrics: m, log: cfg.Logger}
	b.workerID, _ = json.Marshal(cfg.WorkerID) // a string always marshals
	if b.shards, err = shard.New("buffer", cfg.Shards); err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	b.state.Store(StateStopped)
	b.pub = newPublisher(cfg.Redis, eventsChannel(cfg.KeyPrefix), cfg.Logger, m.dropped)
	b.circuits = newCircuits(cfg.Circuit, b.circuitChanged)
	b.enq, b.ap = enqueueClient(cfg, rt)
	b.depth = newDepthSet(b, func(d int64) { m.depth.Set(float64(d)) })
	for i, g := range b.depth.gauges {
		a := newAdmitter(b, i)
		g.credit.low = a.low
		b.admitters = append(b.admitters, a)
	}
	for lvl, v := range map[string]int64{"normal": DefaultNormalDepth, "warning": cfg.WarnDepth, "alert": cfg.AlertDepth, "max": cfg.MaxQueueSize} {
		m.level.WithLabelValues(lvl).Set(float64(v))
	}
	return b, nil
}

// enqueueClient is the Asynq client of Enqueue: over go-redis's
// AutoPipeliner when the client has one (package autopipe: each call still
// bounded by its context), so concurrent enqueues (one EVALSHA each, Asynq
// has no batch enqueue) share one write and one read on a connection
// instead of a round trip each; else the runtime's. The pipelined client
// (nil without one) also carries the result writes.
func enqueueClient(cfg Config, rt *asynqrt.Runtime) (*asynq.Client, redis.Cmdable) {
	if cfg.PlainEnqueue {
		return rt.Client, nil
	}
	p := autopipe.Prefer(cfg.Redis, cfg.Logger, "buffer", "enqueueing one round trip per message")
	if p == nil {
		return rt.Client, nil
	}
	return asynq.NewClientFromRedisClient(p), p
}

// Register adds a handler. A duplicate type, an empty type, or a
// registration after Start is an error.
func (b *Buffer) Register(h Handler) error {
	if err := b.handlers.add(h); err != nil {
		return err
	}
	b.wire(h)
	return nil
}

// Start starts the dequeuers. Starting twice is an error.
func (b *Buffer) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.State() != StateStopped || b.released.Load() {
		return fmt.Errorf("buffer: cannot start: state is %s (a stopped buffer does not start again)", b.State())
	}
	b.handlers.seal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.depth.resync(ctx); err != nil {
		return fmt.Errorf("buffer: start: %w", err)
	}
	if err := b.resyncDLQ(ctx); err != nil {
		return fmt.Errorf("buffer: start: %w", err)
	}
	if err := b.rt.Start(); err != nil {
		return fmt.Errorf("buffer: start: %w", err)
	}
	b.depth.start()
	b.setState(StateRunning)
	return nil
}

func (b *Buffer) setState(s string) {
	b.gate.Lock()
	b.state.Store(s)
	b.gate.Unlock()
}

// State is STOPPED, RUNNING or SHUTTING_DOWN.
func (b *Buffer) State() string { return b.state.Load().(string) }

// Stop refuses new enqueues (SHUTDOWN_IN_PROGRESS), waits for enqueues in
// progress, lets in-flight messages finish within ShutdownTimeout (Asynq
// re-queues the rest) and flushes the event publisher.
func (b *Buffer) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.State() != StateRunning {
		b.release() // never started
		return
	}
	b.setState(StateShuttingDown) // from here admit refuses at once
	b.inflight.Wait()
	b.closeAdmitters() // no admission, no credit refill after this
	b.rt.Shutdown()
	b.depth.stopAndFlush() // gives back the place credit left
	b.release()
	b.setState(StateStopped)
}

// release stops the admission loop and the event publisher, once; a
// released buffer cannot start again.
func (b *Buffer) release() {
	b.stopOnce.Do(func() {
		b.released.Store(true)
		b.closeAdmitters()
		b.pub.close()
	})
}

// newDepthSet builds one depth gauge per shard. WorkerID names the
// process (two Buffers of one process share it); the random part makes the
// credit field this Buffer's own (the same field name in every shard's
// hash).
func newDepthSet(b *Buffer, onDepth func(int64)) *depthSet {
	cfg := b.cfg
	n := b.shards.N()
	s := &depthSet{instance: cfg.WorkerID + "/" + ids.next(), flush: cfg.DepthRefresh, reconcile: cfg.DepthReconcile, log: cfg.Logger,
		th:      Thresholds{Normal: DefaultNormalDepth, Warning: cfg.WarnDepth, Alert: cfg.AlertDepth, Max: cfg.MaxQueueSize},
		onDepth: onDepth, values: make([]int64, n)}
	for i := range n {
		k := b.keys(i)
		s.gauges = append(s.gauges, &depthGauge{rdb: cfg.Redis, max: shareOf(cfg.MaxQueueSize, i, n), key: k.depth(), creditKey: k.credit(),
			instance: s.instance, flush: cfg.DepthRefresh, reconcile: cfg.DepthReconcile, stale: creditStale(cfg.DepthRefresh),
			log: cfg.Logger, onDepth: func(d int64) { s.setShard(i, d) }})
	}
	return s
}

// keys are shard i's state keys.
func (b *Buffer) keys(i int) stateKeys {
	return stateKeys{prefix: b.cfg.KeyPrefix, tag: b.shards.Tag(i)}
}

// closeAdmitters stops every shard's admission loop (idempotent).
func (b *Buffer) closeAdmitters() {
	for _, a := range b.admitters {
		a.close()
	}
}

// Runtime exposes the buffer's Asynq runtime (its DLQ store and reconciler).
func (b *Buffer) Runtime() *asynqrt.Runtime { return b.rt }

// Handlers lists the registered types.
func (b *Buffer) Handlers() []string { return b.handlers.types() }

// Circuits lists the breakers.
func (b *Buffer) Circuits() []contracts.BufferCircuit { return b.circuits.snapshot() }

// ResetCircuit closes a type's breaker.
func (b *Buffer) ResetCircuit(typ string) error {
	if !b.circuits.reset(typ) {
		return &contracts.Error{Code: contracts.CodeHandlerNotFound, Op: "buffer.ResetCircuit",
			Message: fmt.Sprintf("no handler registered for type %q", typ), Details: map[string]any{"type": typ}}
	}
	return nil
}

// Events is the Redis channel events are published on.
func (b *Buffer) Events() string { return eventsChannel(b.cfg.KeyPrefix) }

// emit counts an event and publishes it (stamped with the time then:
// only when someone listens).
func (b *Buffer) emit(e contracts.BufferEvent) {
	b.metrics.event(e.Event, e.Type).Inc()
	if !b.pub.listened() {
		return
	}
	if e.At.IsZero() {
		e.At = b.cfg.Now().UTC()
	}
	b.pub.send(e)
}

func (b *Buffer) circuitChanged(typ string, from, to gobreaker.State) {
	b.metrics.circuit.WithLabelValues(typ).Set(float64(map[gobreaker.State]int{gobreaker.StateClosed: 0, gobreaker.StateHalfOpen: 1, gobreaker.StateOpen: 2}[to]))
	lvl := slog.LevelInfo
	if to == gobreaker.StateOpen {
		lvl = slog.LevelWarn
	}
	b.log.Log(context.Background(), lvl, "buffer: circuit breaker changed", "type", typ, "from", stateName(from), "to", stateName(to))
	b.emit(contracts.BufferEvent{Event: EventCircuit, Type: typ, State: stateName(to)})
}
