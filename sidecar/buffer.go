package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/bufferhttp"
	"github.com/flowgate/flowgate/orchestrator/buffer/builtin"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
	"github.com/flowgate/flowgate/scheduler"
)

// workBuffer is the work buffer (docs/buffer.md): its own Asynq runtime on the
// buffer.* queues, the built-in handlers, and /api/buffer.
type workBuffer struct {
	buf      *buffer.Buffer
	api      *bufferhttp.Handlers
	declared *declaredHandlers // BUFFER_HANDLERS_FILE; nil without
}

// newBuffer builds the buffer and registers its handlers; start runs it
// after the main runtime.
func (m *Main) newBuffer(b *backend, shutdown context.Context) (*workBuffer, error) {
	c := m.Config.Buffer
	cfg := buffer.Config{
		ConnOpt: b.ConnOpt, Redis: b.Client, Servers: c.Servers, Concurrency: c.Concurrency, TypeConcurrency: c.TypeConcurrency,
		ShutdownTimeout: c.ShutdownTimeout, PollInterval: c.PollInterval,
		Backoff:           buffer.Backoff{Base: c.BackoffBase, Multiplier: c.BackoffMultiplier, Max: c.BackoffMax},
		DefaultMaxRetries: defaultMaxRetries(c.MaxRetries), MaxQueueSize: int64(c.MaxQueueSize), WarnDepth: int64(c.WarnDepth),
		AlertDepth: int64(c.AlertDepth), CompletedRetention: c.CompletedRetention, FailedRetention: c.FailedRetention,
		MaxPayload: c.MaxPayload, DLQAlertThreshold: int64(c.DLQAlertThreshold),
		Circuit: buffer.CircuitConfig{Threshold: uint32(c.CircuitThreshold), Timeout: c.CircuitTimeout},
		Logger:  m.Logger, Registerer: m.registry, Now: m.Now,
		PlainEnqueue: m.Config.RedisClientMode == RedisClientPlain, Shards: m.Config.RedisShards,
	}
	if c.DLQAlertWebhook != "" {
		cfg.Alerter = &dlqAlerter{url: c.DLQAlertWebhook, send: m.outboundSender(nil), now: m.Now}
	}
	buf, err := buffer.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("work buffer: %w", err)
	}
	hs := []buffer.Handler{builtin.NewEmit(b.Client, buf.Events(), m.Now)}
	if c.WebhookURL != "" {
		wh, err := builtin.NewWebhook(c.WebhookURL, c.WebhookTimeout, m.outboundSender(nil))
		if err != nil {
			return nil, &ConfigError{Var: "BUFFER_WEBHOOK_URL", Err: err}
		}
		hs = append(hs, wh)
	}
	if c.BenchHandlers {
		hs = append(hs, builtin.NewNoop())
	}
	for _, h := range hs {
		if err := buf.Register(h); err != nil {
			return nil, fmt.Errorf("work buffer: %w", err)
		}
	}
	decl, err := m.loadDeclared(buf, cfg.Backoff)
	if err != nil {
		return nil, err
	}
	api, err := bufferhttp.New(buf, bufferhttp.Config{Token: c.APIToken, RequestTimeout: m.Config.QueueRequestTimeout,
		Events: bufferhttp.Events(b.Client, buf.Events(), sse.Options{Shutdown: shutdown})})
	if err != nil {
		return nil, fmt.Errorf("work buffer api: %w", err)
	}
	return &workBuffer{buf: buf, api: api, declared: decl}, nil
}

// defaultMaxRetries is BUFFER_MAX_RETRIES as buffer.Config takes it: 0
// there means the package default, so "no retries" is buffer.NoRetries.
func defaultMaxRetries(n int) int {
	if n == 0 {
		return buffer.NoRetries
	}
	return n
}

// start runs the buffer's dequeuers; Close stops them (after HTTP drained).
func (w *workBuffer) start(m *Main) error {
	if err := w.buf.Start(); err != nil {
		return err
	}
	m.onClose(func(context.Context) error { w.buf.Stop(); return nil })
	if w.declared != nil {
		w.declared.watch()
	}
	return nil
}

// registerJobs adds the reconciler of the buffer's dead letters and the
// hourly purge of those past BUFFER_FAILED_RETENTION.
func (w *workBuffer) registerJobs(s *scheduler.Scheduler, spec string) error {
	if err := s.Register("buffer_dlq_reconcile", spec, w.buf.Runtime().Reconciler()); err != nil {
		return fmt.Errorf("cron job buffer_dlq_reconcile: %w", err)
	}
	if err := s.Register("buffer_dlq_purge", "@every 1h", w.buf.Purger()); err != nil {
		return fmt.Errorf("cron job buffer_dlq_purge: %w", err)
	}
	return nil
}

// routes mounts /api/buffer.
func (w *workBuffer) routes(app *fiber.App) { bufferhttp.Register(app, w.api) }

// dlqAlerter POSTs {"event":"buffer.dlq_threshold",...} signed like
// flowgate's other outgoing POSTs (OUTBOUND_HMAC_SECRET).
type dlqAlerter struct {
	url  string
	send hmacsig.Sender
	now  func() time.Time
}

// DLQAlert implements buffer.Alerter.
func (a *dlqAlerter) DLQAlert(ctx context.Context, count, threshold int64) error {
	body, _ := json.Marshal(map[string]any{"event": "buffer.dlq_threshold", "count": count, "threshold": threshold, "at": a.now().UTC()})
	ans, err := a.send.Post(ctx, a.url, body, nil)
	if err != nil {
		return fmt.Errorf("dlq alert: %w", err)
	}
	if !ans.OK() {
		return fmt.Errorf("dlq alert: %s answered %s", a.url, ans)
	}
	return nil
}
