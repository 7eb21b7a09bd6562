package asynqrt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/dlq"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Defaults of Config.Servers, Concurrency and ShutdownTimeout (ASYNQ_SERVERS, ASYNQ_CONCURRENCY, ASYNQ_SHUTDOWN_TIMEOUT).
const DefaultServers, DefaultConcurrency, DefaultShutdownTimeout = 2, 10, 8 * time.Second

// Config configures the Asynq runtime. Zero values take the defaults.
type Config struct {
	// ConnOpt is how asynq servers and Asynqmon reach Redis; Redis is the
	// shared client the Asynq client, inspector and DLQ store use. Both
	// point at the same Redis.
	ConnOpt asynq.RedisConnOpt
	Redis   redis.UniversalClient

	Queues          map[string]int // default DefaultQueues()
	StrictPriority  bool           // drain queues in weight order (asynq StrictPriority); default weighted
	Servers         int            // asynq.Server dequeuers in this process; default 2
	Concurrency     int            // workers per server; default 10
	ShutdownTimeout time.Duration  // how long in-flight tasks may finish on stop; default 8s
	// DelayedCheck is how often asynq moves due scheduled and retry tasks
	// to pending (asynq's default is 5 s, which makes a 10 s backoff 10–15 s).
	// Default 1s.
	DelayedCheck time.Duration
	// TaskCheckInterval is how long an idle dequeuer sleeps (±50 %) before
	// asking again; default asynq's 1s.
	TaskCheckInterval time.Duration
	DefaultRetry      RetryPolicy // for task types without a policy; default Exponential{10s, 5m}
	KeyPrefix         string      // for flowgate's own keys (DLQ); default "flowgate"

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

func (c *Config) withDefaults() {
	c.Queues = valutil.MapOrDefault(c.Queues, DefaultQueues())
	c.Servers = valutil.ValOrDefault(c.Servers, DefaultServers)
	c.Concurrency = valutil.ValOrDefault(c.Concurrency, DefaultConcurrency)
	c.ShutdownTimeout = valutil.ValOrDefault(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.DelayedCheck = valutil.ValOrDefault(c.DelayedCheck, time.Second)
	c.DefaultRetry = valutil.ValOrDefault[RetryPolicy](c.DefaultRetry, Exponential{Base: 10 * time.Second, Max: 5 * time.Minute})
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Registerer = valutil.ValOrDefault[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
}

func (c *Config) validate() error {
	switch {
	case c.ConnOpt == nil:
		return errors.New("asynqrt: ConnOpt is required")
	case c.Redis == nil:
		return errors.New("asynqrt: Redis is required")
	case c.Servers < 1 || c.Servers > 64:
		return fmt.Errorf("asynqrt: Servers must be 1..64, got %d", c.Servers)
	case c.Concurrency < 1:
		return fmt.Errorf("asynqrt: Concurrency must be ≥ 1, got %d", c.Concurrency)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("asynqrt: ShutdownTimeout must not be negative")
	case c.DelayedCheck < 0:
		return fmt.Errorf("asynqrt: DelayedCheck must not be negative")
	}
	for q, w := range c.Queues {
		if w < 1 {
			return fmt.Errorf("asynqrt: queue %q weight must be ≥ 1", q)
		}
	}
	return nil
}

// Runtime is the process's Asynq machinery.
type Runtime struct {
	cfg        Config
	Mux        *asynq.ServeMux
	Client     *asynq.Client
	Inspector  *asynq.Inspector
	DLQ        *dlq.Store
	DLQMetrics *dlq.Metrics

	mu       sync.RWMutex
	policies map[string]RetryPolicy
	servers  []*asynq.Server
	running  atomic.Bool
}

// New builds the runtime; Start begins processing.
func New(cfg Config) (*Runtime, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	queues := make([]string, 0, len(cfg.Queues))
	for q := range cfg.Queues {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	store := dlq.NewStore(cfg.Redis, cfg.KeyPrefix, queues, cfg.Now)
	m, err := dlq.NewMetrics(cfg.Registerer, store, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("asynqrt: metrics: %w", err)
	}
	return &Runtime{
		cfg:        cfg,
		Mux:        asynq.NewServeMux(),
		Client:     asynq.NewClientFromRedisClient(cfg.Redis),
		Inspector:  asynq.NewInspectorFromRedisClient(cfg.Redis),
		DLQ:        store,
		DLQMetrics: m,
		policies:   map[string]RetryPolicy{},
	}, nil
}

// Handle registers the handler of a task type and its retry policy (nil:
// the default policy).
func (r *Runtime) Handle(taskType string, h asynq.Handler, policy RetryPolicy) {
	r.Mux.Handle(taskType, h)
	if policy != nil {
		r.mu.Lock()
		r.policies[taskType] = policy
		r.mu.Unlock()
	}
}

// Reconciler returns the archive→record reconciler job body.
func (r *Runtime) Reconciler() *dlq.Reconciler {
	return &dlq.Reconciler{Store: r.DLQ, Archive: r.Inspector, Metrics: r.DLQMetrics, Logger: r.cfg.Logger}
}

// Start starts the dequeuers. It returns once all are running.
func (r *Runtime) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.servers) > 0 {
		return errors.New("asynqrt: already started")
	}
	for i := 0; i < r.cfg.Servers; i++ {
		srv := asynq.NewServer(r.cfg.ConnOpt, asynq.Config{
			Concurrency:              r.cfg.Concurrency,
			Queues:                   r.cfg.Queues,
			StrictPriority:           r.cfg.StrictPriority,
			RetryDelayFunc:           r.retryDelay,
			IsFailure:                isFailure,
			ErrorHandler:             asynq.ErrorHandlerFunc(r.handleError),
			ShutdownTimeout:          r.cfg.ShutdownTimeout,
			DelayedTaskCheckInterval: r.cfg.DelayedCheck,
			TaskCheckInterval:        r.cfg.TaskCheckInterval,
			Logger:                   slogAdapter{r.cfg.Logger.With("component", "asynq", "server", i)},
			LogLevel:                 asynq.WarnLevel,
		})
		if err := srv.Start(r.Mux); err != nil {
			for _, s := range r.servers {
				s.Shutdown()
			}
			r.servers = nil
			return fmt.Errorf("asynqrt: start asynq server %d: %w", i, err)
		}
		r.servers = append(r.servers, srv)
	}
	r.running.Store(true)
	return nil
}

// Running reports whether the dequeuers are up.
func (r *Runtime) Running() bool { return r.running.Load() }

// Shutdown stops the dequeuers, letting in-flight tasks finish within
// ShutdownTimeout (asynq re-queues the rest). Servers stop in parallel.
func (r *Runtime) Shutdown() {
	r.running.Store(false)
	r.mu.Lock()
	servers := r.servers
	r.servers = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func(s *asynq.Server) { defer wg.Done(); s.Shutdown() }(s)
	}
	wg.Wait()
}

// Close releases what the runtime owns. The asynq client and inspector run
// on the shared Redis client, which its owner closes, so there is nothing
// else to release; Close exists so callers need not know that.
func (r *Runtime) Close() error { return nil }

// handleError is asynq's ErrorHandler: on a task's final failure it writes
// the durable dead-letter record before asynq archives the task.
func (r *Runtime) handleError(ctx context.Context, t *asynq.Task, err error) {
	if !Final(ctx, err) {
		return // asynq will retry it (or run it again after a deferral)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	id, _ := asynq.GetTaskID(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	rec := dlq.Record{
		TaskID: id, Queue: queue, Type: t.Type(), Payload: t.Payload(),
		Error: err.Error(), Retried: retried, MaxRetry: maxRetry,
		FailedAt: r.cfg.Now().UTC(), Source: dlq.SourceErrorHandler,
	}
	// The task context may be near its deadline; the record must still land.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	added, werr := r.DLQ.Record(wctx, rec, true)
	if werr != nil {
		// The reconciler will copy it from asynq's archive on its next run.
		r.cfg.Logger.Error("dlq: could not record dead letter; the reconciler will retry from the archive",
			"task_id", id, "queue", queue, "type", t.Type(), "err", werr)
		return
	}
	if added {
		r.DLQMetrics.Recorded(queue, dlq.SourceErrorHandler)
	}
	r.cfg.Logger.Warn("task failed for good; moved to the dead-letter queue",
		"task_id", id, "queue", queue, "type", t.Type(), "retried", retried, "err", err.Error())
}
