package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/scheduler"
)

// Main is the composition root: it owns every long-running part, starts
// them in dependency order (Redis → Asynq → cron → HTTP) and stops them in
// reverse, so nothing runs against a closed dependency. The end-to-end
// tests drive the same type on a random port.
type Main struct {
	Config Config
	Logger *slog.Logger
	Now    func() time.Time

	redis    *backend
	rt       *asynqrt.Runtime
	orch     *orchestration
	booking  *bookingPart
	tiers    *slotCacheParts // slotcache.go
	shadow   *shadowPart     // shadow.go
	buffer   *workBuffer
	avail    *availabilityPart  // the /v1 catalogue (availability.go)
	holds    *holdsPart         // the hold engine and its faces (holds.go)
	stopping context.CancelFunc // ends long polls and detached follow-ups at shutdown
	sched    *scheduler.Scheduler
	monitor  *asynqmon.HTTPHandler
	app      *fiber.App
	ln       net.Listener
	registry *prometheus.Registry

	ready   atomic.Bool
	closing atomic.Bool
	// records are the IVA bookings being recorded for the board
	// (board_booked.go); Close waits for them.
	records  sync.WaitGroup
	httpErr  chan error
	started  time.Time
	closeFns []func(context.Context) error

	holdStream *holdstream.Hub // live holds streams (holdstream.go); ended before HTTP closes
}

// NewMain returns a Main for cfg.
func NewMain(cfg Config, log *slog.Logger) *Main {
	return &Main{Config: cfg, Logger: log, Now: time.Now, httpErr: make(chan error, 1)}
}

// Run starts flowgate and returns once it serves HTTP. On error, whatever
// was started is left for Close to stop.
func (m *Main) Run(ctx context.Context) error {
	m.started = time.Now()
	if err := m.secrets(); err != nil {
		return err
	}
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// 1. Redis.
	b, err := openRedis(ctx, m.Config, m.Logger)
	if err != nil {
		return err
	}
	m.redis = b
	m.onClose(func(context.Context) error { return b.close() })
	m.registry.MustRegister(newRedisUpCollector(b.ping)) // healthmetrics.go
	// The data must be the one REDIS_SHARDS reads (shardlayout.go).
	if err := checkShardLayout(ctx, b.Client, m.Config.RedisShards); err != nil {
		return err
	}
	if !m.Config.Embedded() {
		m.warnDurability(ctx)
	}

	// 2. Asynq.
	pr, err := m.startAsynq(ctx)
	if err != nil {
		return err
	}

	// 3. Cron.
	if err := m.startCron(pr); err != nil {
		return err
	}
	// First probe now, so queue metrics and readiness of every queue show at once.
	if err := pr.Run(ctx); err != nil {
		m.Logger.Warn("first asynq probe failed", "err", err)
	}

	// 4. HTTP.
	if err := m.startHTTP(); err != nil {
		return err
	}
	m.ready.Store(true)
	m.Logger.Info("flowgate ready", "addr", m.Addr(), "redis", b.Mode, "redis_at", m.Config.redisWhere(),
		"cloud9", m.Config.cloud9Where(), "startup_ms", time.Since(m.started).Milliseconds(), "asynq_servers", m.Config.AsynqServers)
	return nil
}

// startAsynq creates the Asynq runtime on m.redis with the probe and every
// part's task handlers, and starts its servers and the work buffer. It
// returns the probe, which cron runs.
func (m *Main) startAsynq(ctx context.Context) (*probe, error) {
	b := m.redis
	rt, err := asynqrt.New(asynqrt.Config{
		ConnOpt: b.ConnOpt, Redis: b.Client, Servers: m.Config.AsynqServers,
		Concurrency: m.Config.AsynqConcurr, ShutdownTimeout: m.Config.AsynqShutdown,
		Logger: m.Logger, Registerer: m.registry, Now: m.Now,
	})
	if err != nil {
		return nil, err
	}
	m.rt = rt
	m.onClose(func(context.Context) error { rt.Shutdown(); return rt.Close() })
	pr, err := m.newAsynqProbe(rt)
	if err != nil {
		return nil, err
	}
	rt.Handle(TaskProbe, pr, nil)
	shutdown, stopping := context.WithCancel(context.WithoutCancel(ctx))
	m.stopping = stopping
	if m.orch, err = m.newOrchestration(rt, b, shutdown); err != nil {
		return nil, err
	}
	if m.booking, err = m.newBooking(rt, b, shutdown); err != nil {
		return nil, err
	}
	if m.shadow, err = m.newShadow(b, m.booking); err != nil { // shadow.go
		return nil, err
	}
	if m.buffer, err = m.newBuffer(b, shutdown); err != nil {
		return nil, err
	}
	m.registry.MustRegister(asynqmetrics.NewQueueMetricsCollector(rt.Inspector))
	if err := rt.Start(); err != nil {
		return nil, err
	}
	if err := m.buffer.start(m); err != nil {
		return nil, err
	}
	return pr, nil
}

// newAsynqProbe is the probe of every default queue, in name order.
func (m *Main) newAsynqProbe(rt *asynqrt.Runtime) (*probe, error) {
	queues := make([]string, 0, 4)
	for q := range asynqrt.DefaultQueues() {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	return newProbe(rt.Client, queues, m.Now, m.registry)
}

// startCron creates the scheduler, registers the DLQ reconciliation, the
// Asynq probe and every part's jobs, and starts it.
func (m *Main) startCron(pr *probe) error {
	sched, err := scheduler.New(scheduler.Config{Redis: m.redis.Client, Logger: m.Logger, Registerer: m.registry, Now: m.Now})
	if err != nil {
		return err
	}
	m.sched = sched
	m.onClose(sched.Stop)
	watch, err := newDataWatch(m.redis.Client, m.Config.RedisShards, m.Logger, m.registry) // shardlayout.go
	if err != nil {
		return err
	}
	jobs := []struct {
		name, spec string
		job        scheduler.Job
	}{
		{"dlq_reconcile", m.Config.DLQReconcile, m.rt.Reconciler()},
		{"asynq_probe", "@every 30s", pr},
		{"redis_data_check", "@every 30s", watch},
	}
	for _, j := range jobs {
		if err := sched.Register(j.name, j.spec, j.job); err != nil {
			return fmt.Errorf("cron job %s: %w", j.name, err)
		}
	}
	if err := m.orch.registerJobs(sched, m.Config); err != nil {
		return err
	}
	if err := m.buffer.registerJobs(sched, m.Config.DLQReconcile); err != nil {
		return err
	}
	if err := m.tiers.registerJobs(sched); err != nil {
		return err
	}
	if err := m.registerHoldsJobs(sched); err != nil {
		return err
	}
	return sched.Start()
}

// secrets fills missing secrets with random per-process ones in embedded
// mode (LoadConfig already refused a real Redis without the ones it uses;
// one its mode does not use is filled and never printed) and prints
// them once, in one log line, so every API can be called (signed VM task
// calls, booking tokens, the buffer's bearer token) without a restart.
func (m *Main) secrets() error {
	var generated []any
	for _, s := range []struct {
		name string
		dst  *string
	}{{"BOOKING_AUTH_SECRET", &m.Config.BookingAuthSecret}, {"HMAC_SECRET", &m.Config.HMACSecret},
		{"BUFFER_API_TOKEN", &m.Config.Buffer.APIToken}} {
		if *s.dst != "" {
			continue
		}
		v, err := randomHex(32)
		if err != nil {
			return fmt.Errorf("generate %s: %w", s.name, err)
		}
		*s.dst = v
		if !m.Config.Embedded() {
			// A real Redis reaches here only with a secret its mode does not
			// use (HMAC_SECRET with WEBHOOK_AUTH none or token): filled, never printed.
			m.Logger.Info("secret unset and unused in this mode; a random one fills it (not logged)", "name", s.name)
			continue
		}
		m.Config.EphemeralSecret = true
		generated = append(generated, s.name, v)
	}
	if len(generated) > 0 {
		m.Logger.Warn("embedded mode: generated secrets for this process (printed once; tokens and signatures stop verifying when it exits; set them, e.g. from `flowgate env`, to keep them)",
			generated...)
	}
	return nil
}

// randomHex is n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf), nil
}

func (m *Main) onClose(f func(context.Context) error) { m.closeFns = append(m.closeFns, f) }

// Addr is the bound HTTP address (useful with FLOWGATE_ADDR=127.0.0.1:0).
func (m *Main) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// Err delivers an error if the HTTP server stops on its own.
func (m *Main) Err() <-chan error { return m.httpErr }

// Close stops everything in reverse start order: readiness goes false
// first, HTTP drains, cron stops, Asynq finishes in-flight tasks within its
// timeout, Redis closes. It is safe to call after a failed Run and twice.
func (m *Main) Close() error {
	if !m.closing.CompareAndSwap(false, true) {
		return nil
	}
	m.ready.Store(false)
	if m.app != nil && m.Config.ReadinessDelay > 0 {
		m.Logger.Info("shutdown: readiness is false; waiting before closing HTTP", "delay", m.Config.ReadinessDelay)
		time.Sleep(m.Config.ReadinessDelay)
	}
	if m.stopping != nil {
		m.stopping() // long polls answer 204 now instead of holding the drain
	}
	m.stopHoldStreams() // every holds stream ends with server-shutdown before HTTP closes
	var errs []error
	if m.app != nil {
		if err := m.app.ShutdownWithTimeout(m.Config.HTTPDrain); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	if m.ln != nil {
		// fasthttp's Shutdown closes the listeners its Serve registered: a
		// Close right after Run, before the serving goroutine got there,
		// left this one accepting for good. Closing it ends that Serve.
		_ = m.ln.Close()
	}
	if m.monitor != nil {
		errs = append(errs, m.monitor.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.AsynqShutdown+5*time.Second)
	defer cancel()
	for i := len(m.closeFns) - 1; i >= 0; i-- {
		if err := m.closeFns[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	m.records.Wait() // each bounded by recordTimeout
	m.Logger.Info("flowgate stopped")
	return errors.Join(errs...)
}
