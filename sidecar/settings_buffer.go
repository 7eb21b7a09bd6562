package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/declared"
)

// BufferConfig holds the work buffer's settings (docs/buffer.md); defaults are
// the package buffer constants.
type BufferConfig struct {
	APIToken           string
	Servers            int
	Concurrency        int
	TypeConcurrency    int
	PollInterval       time.Duration
	MaxQueueSize       int
	WarnDepth          int
	AlertDepth         int
	MaxRetries         int
	BackoffBase        time.Duration
	BackoffMultiplier  float64
	BackoffMax         time.Duration
	CompletedRetention time.Duration
	FailedRetention    time.Duration
	MaxPayload         int
	DLQAlertThreshold  int
	DLQAlertWebhook    string
	CircuitThreshold   int
	CircuitTimeout     time.Duration
	ShutdownTimeout    time.Duration
	WebhookURL         string
	WebhookTimeout     time.Duration
	BenchHandlers      bool
	HandlersFile       string
	RemovedTypeGrace   time.Duration
}

func bufferInt(dst func(*BufferConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.Buffer) }, min, max)
}

func bufferDuration(dst func(*BufferConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.Buffer) })
}

func httpURL(dst func(*BufferConfig) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http(s) URL, got %q", v)
		}
		*dst(&c.Buffer) = v
		return nil
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// bufferSettings are the work buffer's variables.
var bufferSettings = []setting{
	{name: "BUFFER_API_TOKEN", help: "bearer token of /api/buffer (≥ 16 characters); required with a real Redis, generated and printed once in embedded mode", secret: true, apply: func(c *Config, v string) error {
		if len(v) < 16 {
			return errors.New("must be at least 16 characters")
		}
		c.Buffer.APIToken = v
		return nil
	}},
	{name: "BUFFER_SERVERS", def: itoa(buffer.DefaultServers), help: "asynq dequeuers of the work buffer's own queues (strict priority)", apply: bufferInt(func(b *BufferConfig) *int { return &b.Servers }, 1, 64)},
	{name: "BUFFER_CONCURRENCY", def: itoa(buffer.DefaultConcurrency), help: "workers per buffer dequeuer (2 × 15 measured best on 2 cores; the original buffer's pool was 5)", apply: bufferInt(func(b *BufferConfig) *int { return &b.Concurrency }, 1, 1000)},
	{name: "BUFFER_TYPE_CONCURRENCY", def: itoa(buffer.DefaultTypeConcurrency), help: "a type's messages in flight at once on this instance, a bulkhead: one over it is deferred without an attempt (0 = half of BUFFER_SERVERS × BUFFER_CONCURRENCY; a declared type's concurrency: wins)", apply: bufferInt(func(b *BufferConfig) *int { return &b.TypeConcurrency }, 0, 64_000)},
	{name: "BUFFER_POLL_INTERVAL", def: durStr(buffer.DefaultPollInterval), help: "an idle buffer dequeuer's wait before asking again (the original buffer's poll interval)", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.PollInterval })},
	{name: "BUFFER_MAX_QUEUE_SIZE", def: itoa(buffer.DefaultMaxQueueSize), help: "messages pending, retrying or in flight at which enqueue answers QUEUE_FULL (429)", apply: bufferInt(func(b *BufferConfig) *int { return &b.MaxQueueSize }, 1, 100_000_000)},
	{name: "BUFFER_WARN_DEPTH", def: itoa(buffer.DefaultWarnDepth), help: "queue depth above which a warning is logged (once per crossing)", apply: bufferInt(func(b *BufferConfig) *int { return &b.WarnDepth }, 1, 100_000_000)},
	{name: "BUFFER_ALERT_DEPTH", def: itoa(buffer.DefaultAlertDepth), help: "queue depth above which an error is logged (once per crossing)", apply: bufferInt(func(b *BufferConfig) *int { return &b.AlertDepth }, 1, 100_000_000)},
	{name: "BUFFER_MAX_RETRIES", def: itoa(buffer.DefaultMaxRetries), help: "retries of a message whose handler and request name none (0: none, straight to the dead-letter queue)", apply: bufferInt(func(b *BufferConfig) *int { return &b.MaxRetries }, 0, 100)},
	{name: "BUFFER_BACKOFF_BASE", def: durStr(buffer.DefaultBackoffBase), help: "retry delay min(base·multiplier^n, max): base", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.BackoffBase })},
	{name: "BUFFER_BACKOFF_MULTIPLIER", def: strconv.FormatFloat(buffer.DefaultBackoffMultiplier, 'g', -1, 64), help: "retry delay multiplier", apply: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 || f > 100 {
			return fmt.Errorf("want a number 1..100, got %q", v)
		}
		c.Buffer.BackoffMultiplier = f
		return nil
	}},
	{name: "BUFFER_BACKOFF_MAX", def: durStr(buffer.DefaultBackoffMax), help: "retry delay cap", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.BackoffMax })},
	{name: "BUFFER_COMPLETED_RETENTION", def: durStr(buffer.DefaultCompletedRetention), help: "how long a completed message (and its idempotency key) is kept", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.CompletedRetention })},
	{name: "BUFFER_FAILED_RETENTION", def: durStr(buffer.DefaultFailedRetention), help: "how long a dead letter's idempotency key and error history are kept", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.FailedRetention })},
	{name: "BUFFER_MAX_PAYLOAD_BYTES", def: itoa(buffer.DefaultMaxPayload), help: "largest message payload (INVALID_MESSAGE above)", apply: bufferInt(func(b *BufferConfig) *int { return &b.MaxPayload }, 1, 16<<20)},
	{name: "BUFFER_DLQ_ALERT_THRESHOLD", def: itoa(buffer.DefaultDLQAlertThreshold), help: "dead letters at which an error is logged and DLQ_ALERT_WEBHOOK is called, once per crossing", apply: bufferInt(func(b *BufferConfig) *int { return &b.DLQAlertThreshold }, 1, 100_000_000)},
	{name: "DLQ_ALERT_WEBHOOK", help: "URL that receives a POST signed with OUTBOUND_HMAC_SECRET when the buffer's DLQ crosses its threshold (redirects are not followed)", apply: httpURL(func(b *BufferConfig) *string { return &b.DLQAlertWebhook })},
	{name: "BUFFER_CIRCUIT_THRESHOLD", def: itoa(buffer.DefaultCircuitThreshold), help: "consecutive failures of a type that open its breaker", apply: bufferInt(func(b *BufferConfig) *int { return &b.CircuitThreshold }, 1, 1000)},
	{name: "BUFFER_CIRCUIT_TIMEOUT", def: durStr(buffer.DefaultCircuitTimeout), help: "how long an open breaker waits before letting a trial call through (half-open)", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.CircuitTimeout })},
	{name: "BUFFER_SHUTDOWN_TIMEOUT", def: durStr(buffer.DefaultShutdownTimeout), help: "how long in-flight buffer messages may finish on stop (the rest are re-queued)", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.ShutdownTimeout })},
	{name: "BUFFER_WEBHOOK_URL", help: "target of the webhook.forward handler (registered only when set); POSTs are signed with OUTBOUND_HMAC_SECRET; a 3xx is not followed: the message is dead-lettered", apply: httpURL(func(b *BufferConfig) *string { return &b.WebhookURL })},
	{name: "BUFFER_WEBHOOK_TIMEOUT", def: "10s", help: "timeout of one webhook.forward POST", apply: bufferDuration(func(b *BufferConfig) *time.Duration { return &b.WebhookTimeout })},
	{name: "BUFFER_HANDLERS_FILE", help: "YAML file declaring an HTTP handler per message type (url, method, headers with ${ENV}, timeout, maxRetries, backoff, circuitBreaker, signing: a secret of the handler's own or OUTBOUND_HMAC_SECRET); a 3xx is not followed: the message is dead-lettered; SIGHUP reloads it, an invalid file is refused and the current one kept", apply: func(c *Config, v string) error {
		c.Buffer.HandlersFile = v
		return nil
	}},
	{name: "BUFFER_REMOVED_TYPE_GRACE", def: durStr(declared.DefaultRemovedGrace), help: "how long the messages of a type dropped from BUFFER_HANDLERS_FILE (on reload) are deferred, without an attempt, waiting for it to be declared again; past it they are dead-lettered with HANDLER_NOT_FOUND (0: at once)", apply: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration ≥ 0 like 10m, got %q", v)
		}
		c.Buffer.RemovedTypeGrace = d
		return nil
	}},
	{name: "BUFFER_BENCH_HANDLERS", def: "false", help: "register the noop handler (benchmarks only)", apply: boolean(func(c *Config) *bool { return &c.Buffer.BenchHandlers })},
}

// validateBuffer checks what one variable cannot tell alone.
func (c *Config) validateBuffer(p *problems) {
	b := c.Buffer
	p.positive(namedDuration{"BUFFER_POLL_INTERVAL", b.PollInterval}, namedDuration{"BUFFER_BACKOFF_BASE", b.BackoffBase},
		namedDuration{"BUFFER_COMPLETED_RETENTION", b.CompletedRetention}, namedDuration{"BUFFER_FAILED_RETENTION", b.FailedRetention},
		namedDuration{"BUFFER_CIRCUIT_TIMEOUT", b.CircuitTimeout}, namedDuration{"BUFFER_WEBHOOK_TIMEOUT", b.WebhookTimeout})
	if b.BackoffMax < b.BackoffBase {
		p.addf("BUFFER_BACKOFF_MAX", "must not be below BUFFER_BACKOFF_BASE")
	}
	if b.AlertDepth < b.WarnDepth {
		p.addf("BUFFER_ALERT_DEPTH", "must not be below BUFFER_WARN_DEPTH")
	}
	if !c.Embedded() && b.APIToken == "" {
		p.addf("BUFFER_API_TOKEN", "required with a real Redis (flowgate env prints a fresh one)")
	}
	c.validateHandlersFile(p)
}
