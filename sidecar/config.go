package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/scheduler"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// Config is every setting of flowgate, read from the environment by
// LoadConfig. Defaults are the seeds' values.
type Config struct {
	Addr string

	RedisURL            string
	RedisClusterAddrs   []string
	RedisSentinelAddrs  []string
	RedisSentinelMaster string
	RedisPassword       string
	RedisPoolSize       int
	// RedisMinReplicasAck and RedisReplicaAckTimeout: the failover
	// durability barrier (orchestrator/durable); 0 = off.
	RedisMinReplicasAck    int
	RedisReplicaAckTimeout time.Duration
	RedisShards            int
	RedisClientMode        string

	NodeRedBasePath string

	Cloud9Endpoint       string
	Cloud9ClientID       string
	Cloud9Username       string
	Cloud9Password       string
	Cloud9VendorUsername string
	Cloud9WriteLimit     Rate
	// Cloud9Simulator is CLOUD9_SIMULATOR: the sandbox simulator chosen on
	// purpose; cloud9SimulatorSet tells false from unset.
	Cloud9Simulator    bool
	cloud9SimulatorSet bool

	BookingAuthSecret string
	HMACSecret        string
	OutboundSecret    string // OUTBOUND_HMAC_SECRET: signs what flowgate sends (outbound.go)
	MaxRetryAttempts  int
	MaxRecoveries     int
	TaskMaxProcessing time.Duration

	LogFormat string
	LogLevel  string

	BodyLimit       int
	ReadinessDelay  time.Duration
	HTTPDrain       time.Duration
	AsynqServers    int
	AsynqConcurr    int
	AsynqShutdown   time.Duration
	DLQReconcile    string
	MonitoringAuth  string
	MonitoringUser  string
	MonitoringPass  string
	MonitoringRO    bool
	PprofAddr       string
	EphemeralSecret bool // set when secrets were generated (embedded mode)

	Buffer BufferConfig // the work buffer (docs/buffer.md): settings_buffer.go

	Availability AvailabilityConfig // the /v1 catalogue: settings_availability.go

	// VM task orchestration (docs/tasks.md).
	WebhookAuth         string
	WebhookToken        string
	WebhookTolerance    time.Duration
	SignatureMinVersion int
	QueueRequestTimeout time.Duration
	AckPath             string
	FailPath            string
	HeartbeatSpec       string
	HeartbeatStale      time.Duration
	VTSpec              string
	VTTimeout           time.Duration
	SLASpec             string
	SLAThreshold        time.Duration
	RetryOverdueSpec    string
	RetryOverdueAfter   time.Duration
	RequeueBase         time.Duration
	RequeueMax          time.Duration
	PurgeSpec           string
	PurgeAfter          time.Duration

	Booking    BookingConfig    // the booking path (settings_booking.go)
	Family     FamilyConfig     // the rest of the Node-RED family (settings_family.go)
	SlotCache  SlotCacheConfig  // the tiered slot cache and operation endpoints (settings_slotcache.go)
	Holds      HoldsConfig      // the hold engine (settings_holds.go)
	HoldStream HoldStreamConfig // the live holds stream (settings_holdstream.go)
	Shadow     ShadowConfig     // the shadow mode (settings_shadow.go)
}

// retryOverdueMargin is how much later than the longest backoff the repair
// sweep may take over a requeue: Asynq moves due tasks every second, and a
// busy high queue may hold one a few seconds more.
const retryOverdueMargin = 5 * time.Second

// ConfigError names the variable that is wrong.
type ConfigError struct {
	Var string
	Err error
}

func (e *ConfigError) Error() string { return e.Var + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ConfigErrors is every problem LoadConfig found, one per variable, in
// the table's order: a start reports them all at once (one line each).
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *ConfigError.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// problems collects ConfigErrors, the first per variable.
type problems struct{ errs ConfigErrors }

func (p *problems) add(name string, err error) {
	for _, e := range p.errs {
		if e.Var == name {
			return
		}
	}
	p.errs = append(p.errs, &ConfigError{Var: name, Err: err})
}

func (p *problems) addf(name, format string, args ...any) { p.add(name, fmt.Errorf(format, args...)) }

// positive adds "must be positive" for each non-positive duration.
func (p *problems) positive(ds ...namedDuration) {
	for _, d := range ds {
		if d.v <= 0 {
			p.addf(d.name, "must be positive")
		}
	}
}

type namedDuration struct {
	name string
	v    time.Duration
}

func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs
}

// LoadConfig reads every setting through getenv (os.Getenv in main; a map
// in tests), applies defaults and validates the whole. It reports every
// invalid or missing variable at once (ConfigErrors): a value that does not
// parse is reported and its default used, so the checks across variables
// still run on sane values.
func LoadConfig(getenv func(string) string) (Config, error) {
	var c Config
	var p problems
	for _, s := range settings {
		v := getenv(s.name)
		if v == "" {
			v = s.def
		}
		if v == "" {
			continue
		}
		if err := s.apply(&c, v); err != nil {
			p.add(s.name, err)
			if s.def != "" {
				_ = s.apply(&c, s.def)
			}
		}
	}
	c.validate(&p)
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) validate(p *problems) {
	c.validateRedis(p)
	c.validateOrchestration(p)
	c.validateSecrets(p)
	c.validateBooking(p)
	c.validateSlotCache(p)
	c.validateBuffer(p)
	c.validateOutbound(p)
	c.validateHolds(p)
	c.validateRoutes(p)
	c.validateRest(p)
}

// validateRest refuses a zero or negative value of the durations whose
// zero the packages would silently replace with their default (a 0 that
// meant "off" or "at once" would not do what it says).
func (c *Config) validateRest(p *problems) {
	p.positive(namedDuration{"ASYNQ_SHUTDOWN_TIMEOUT", c.AsynqShutdown}, namedDuration{"BUFFER_SHUTDOWN_TIMEOUT", c.Buffer.ShutdownTimeout},
		namedDuration{"BOOKING_SYNC_RETRY_DELAY", c.Booking.SyncRetryDelay}, namedDuration{"BOOKING_COMPLETED_RETENTION", c.Booking.Retention},
		namedDuration{"PHONE_SEARCH_RECORD_MAX_AGE", c.Family.PhoneRecordMaxAge}, namedDuration{"SHADOW_RETENTION", c.Shadow.Retention})
}

// validateRedis checks the Redis mode and the monitoring credentials.
func (c *Config) validateRedis(p *problems) {
	modes := 0
	for _, set := range []bool{c.RedisURL != "", len(c.RedisClusterAddrs) > 0, len(c.RedisSentinelAddrs) > 0} {
		if set {
			modes++
		}
	}
	if modes > 1 {
		p.addf("REDIS_URL", "set only one of REDIS_URL, REDIS_CLUSTER_ADDRS, REDIS_SENTINEL_ADDRS")
	}
	if len(c.RedisSentinelAddrs) > 0 && c.RedisSentinelMaster == "" {
		p.addf("REDIS_SENTINEL_MASTER", "required with REDIS_SENTINEL_ADDRS")
	}
	if c.RedisSentinelMaster != "" && len(c.RedisSentinelAddrs) == 0 {
		p.addf("REDIS_SENTINEL_ADDRS", "required with REDIS_SENTINEL_MASTER")
	}
	if c.RedisMinReplicasAck > 0 && c.Embedded() {
		p.addf("REDIS_MIN_REPLICAS_ACK", "needs a Redis with replicas (REDIS_URL, REDIS_SENTINEL_ADDRS or REDIS_CLUSTER_ADDRS); the embedded one has none")
	}
	// WAIT is answered within its timeout; the Redis client gives up
	// reading after 3 s, so a longer wait would end as a read error.
	if c.RedisMinReplicasAck > 0 && (c.RedisReplicaAckTimeout < 10*time.Millisecond || c.RedisReplicaAckTimeout > 2*time.Second) {
		p.addf("REDIS_REPLICA_ACK_TIMEOUT", "must be between 10ms and 2s (the Redis client's read timeout is 3s), got %s", c.RedisReplicaAckTimeout)
	}
	if (c.MonitoringUser == "") != (c.MonitoringPass == "") {
		p.addf("MONITORING_PASSWORD", "set both MONITORING_USER and MONITORING_PASSWORD, or neither")
	}
}

// validateOrchestration checks the VM task queue's schedules and timings.
func (c *Config) validateOrchestration(p *problems) {
	for _, spec := range []struct{ name, v string }{
		{"DLQ_RECONCILE_SCHEDULE", c.DLQReconcile}, {"HEARTBEAT_MONITOR_SCHEDULE", c.HeartbeatSpec},
		{"VT_SWEEP_SCHEDULE", c.VTSpec}, {"SLA_PROMOTION_SCHEDULE", c.SLASpec}, {"RETRY_OVERDUE_SCHEDULE", c.RetryOverdueSpec},
		{"TASKS_PURGE_SCHEDULE", c.PurgeSpec},
	} {
		if err := scheduler.ValidateSpec(spec.v); err != nil {
			p.add(spec.name, err)
		}
	}
	p.positive(namedDuration{"HEARTBEAT_STALE_AFTER", c.HeartbeatStale}, namedDuration{"VT_TIMEOUT", c.VTTimeout},
		namedDuration{"SLA_THRESHOLD", c.SLAThreshold}, namedDuration{"WEBHOOK_TOLERANCE", c.WebhookTolerance},
		namedDuration{"QUEUE_REQUEST_TIMEOUT", c.QueueRequestTimeout}, namedDuration{"REQUEUE_BACKOFF_BASE", c.RequeueBase},
		namedDuration{"REQUEUE_BACKOFF_MAX", c.RequeueMax})
	if c.WebhookTolerance > 0 && c.WebhookTolerance < signature.MinTolerance {
		p.addf("WEBHOOK_TOLERANCE", "must be at least %s, got %s", signature.MinTolerance, c.WebhookTolerance)
	}
	if c.TaskMaxProcessing < time.Minute || c.TaskMaxProcessing > tasks.MaxMaxProcessing {
		p.addf("TASK_MAX_PROCESSING", "must be 1m..%s (SQS's cap on a message's visibility), got %s", tasks.MaxMaxProcessing, c.TaskMaxProcessing)
	} else if c.TaskMaxProcessing <= c.HeartbeatStale {
		p.addf("TASK_MAX_PROCESSING", "must be longer than HEARTBEAT_STALE_AFTER (%s)", c.HeartbeatStale)
	}
	if c.RequeueMax < c.RequeueBase {
		p.addf("REQUEUE_BACKOFF_MAX", "must not be below REQUEUE_BACKOFF_BASE")
	}
	if c.RetryOverdueAfter <= c.RequeueMax+retryOverdueMargin {
		p.addf("RETRY_OVERDUE_AFTER", "must exceed REQUEUE_BACKOFF_MAX by more than %s (Asynq's 1 s check for due tasks plus slack), or the repair sweep races healthy requeues", retryOverdueMargin)
	}
	if c.WebhookAuth == "token" && c.WebhookToken == "" {
		p.addf("WEBHOOK_TOKEN", "required with WEBHOOK_AUTH=token")
	}
	if c.PurgeAfter < time.Hour {
		p.addf("TASKS_DONE_RETENTION", "must be at least 1h (a purged queue_id can be created anew)")
	}
	if c.AckPath == c.FailPath {
		p.addf("WEBHOOK_FAIL_PATH", "must differ from WEBHOOK_ACK_PATH")
	}
}

// validateSecrets checks what a real Redis requires, the Cloud9 credentials
// among it.
func (c *Config) validateSecrets(p *problems) {
	if !c.Embedded() {
		if c.BookingAuthSecret == "" {
			p.addf("BOOKING_AUTH_SECRET", "required with a real Redis (flowgate env prints a fresh one)")
		}
		if c.HMACSecret == "" && c.WebhookAuth == "hmac" {
			p.addf("HMAC_SECRET", "required with a real Redis and WEBHOOK_AUTH=hmac (flowgate env prints a fresh one)")
		}
		if c.MonitoringAuth != "none" && c.MonitoringUser == "" {
			p.addf("MONITORING_USER", "MONITORING_USER and MONITORING_PASSWORD are required with a real Redis: /monitoring (Asynqmon) can pause, delete and replay queues; set MONITORING_AUTH=none only to leave it open on purpose")
		}
	}
	c.validateCloud9(p)
}

// cloud9Credentials are the variables of a real Cloud9, set all or none.
const cloud9Credentials = "CLOUD9_ENDPOINT, CLOUD9_CLIENT_ID, CLOUD9_USERNAME and CLOUD9_PASSWORD"

// cloud9Practice names what a real Cloud9 needs besides its credentials
// (validateBooking refuses a real Cloud9 without them).
const cloud9Practice = " (with CLOUD9_PROVIDER_GUID and CLOUD9_VENDOR_USERNAME)"

// validateCloud9 checks that the Cloud9 credentials come together and that
// the sandbox simulator is used only where it is meant: with the embedded
// Redis by default, with a real one only when CLOUD9_SIMULATOR=true says so
// (a production start never books into made-up appointments silently).
func (c *Config) validateCloud9(p *problems) {
	set := 0
	for _, v := range []string{c.Cloud9Endpoint, c.Cloud9ClientID, c.Cloud9Username, c.Cloud9Password} {
		if v != "" {
			set++
		}
	}
	switch {
	case set != 0 && c.Cloud9Simulator:
		p.addf("CLOUD9_SIMULATOR", "true contradicts the CLOUD9_* credentials that are set: unset CLOUD9_SIMULATOR to book on Cloud9, or unset %s to book on the simulator", cloud9Credentials)
	case set != 0 && set != 4:
		p.addf("CLOUD9_ENDPOINT", "set %s together (the real Cloud9), or none (the sandbox simulator)", cloud9Credentials)
	case set == 0 && c.cloud9SimulatorSet && !c.Cloud9Simulator:
		p.addf("CLOUD9_ENDPOINT", "required with CLOUD9_SIMULATOR=false: set %s%s", cloud9Credentials, cloud9Practice)
	case set == 0 && !c.Embedded() && !c.Cloud9Simulator:
		p.addf("CLOUD9_ENDPOINT", "a real Redis needs a real Cloud9: set %s%s, or CLOUD9_SIMULATOR=true to book into the built-in sandbox simulator on purpose (its appointments are not real)", cloud9Credentials, cloud9Practice)
	}
}

// redisWhere names the Redis flowgate uses, for the ready line, without
// credentials: host:port/db of REDIS_URL, the cluster's or the sentinels'
// addresses, or "embedded".
func (c *Config) redisWhere() string {
	switch {
	case c.RedisURL != "":
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			return "(unparsable REDIS_URL)"
		}
		return u.Scheme + "://" + u.Host + u.Path // no user, password or query
	case len(c.RedisClusterAddrs) > 0:
		return "cluster " + strings.Join(c.RedisClusterAddrs, ",")
	case len(c.RedisSentinelAddrs) > 0:
		return "sentinel " + c.RedisSentinelMaster + "@" + strings.Join(c.RedisSentinelAddrs, ",")
	}
	return "embedded"
}

// cloud9Where names the Cloud9 flowgate books into, for the ready line:
// the endpoint's host, or the sandbox simulator.
func (c *Config) cloud9Where() string {
	if c.Cloud9Endpoint == "" {
		return "sandbox simulator (appointments are not real)"
	}
	if u, err := url.Parse(c.Cloud9Endpoint); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host + u.Path
	}
	return "(CLOUD9_ENDPOINT set)"
}

// Embedded reports whether flowgate runs on its in-process Redis.
func (c *Config) Embedded() bool {
	return c.RedisURL == "" && len(c.RedisClusterAddrs) == 0 && len(c.RedisSentinelAddrs) == 0
}

// Usage writes every variable with its default.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "flowgate — durable sidecar for Node-RED booking flows and n8n orchestration.")
	fmt.Fprintln(w, "\nUsage: flowgate   (starts the server; all configuration is read from the environment)")
	fmt.Fprintln(w, "       flowgate COMMAND [flags]   (one of the commands below; flowgate -help is help)")
	fmt.Fprintln(w, "\nCommands:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.usage, c.help)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nEnvironment:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.name, def, s.help)
	}
	_ = tw.Flush()
}

// Redis scale-out settings: the binary owns these defaults.
const (
	// DefaultRedisShards keeps each subsystem under its one hash tag.
	DefaultRedisShards = 1
	// RedisClientAutoPipeline and RedisClientPlain are REDIS_CLIENT_MODE's
	// values. AutoPipeline is the default: measured on 2 shared cores it
	// serves more hold and buffer requests per second (docs/performance.md).
	RedisClientAutoPipeline = "autopipeline"
	RedisClientPlain        = "plain"
	DefaultRedisClientMode  = RedisClientAutoPipeline
)
