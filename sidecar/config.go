package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/flowgate/flowgate/scheduler"
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

	NodeRedBasePath string

	Cloud9Endpoint       string
	Cloud9ClientID       string
	Cloud9Username       string
	Cloud9Password       string
	Cloud9VendorUsername string
	Cloud9WriteLimit     Rate

	BookingAuthSecret string
	HMACSecret        string
	MaxRetryAttempts  int
	MaxRecoveries     int

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

	Buffer BufferConfig // the work buffer (seed 001): settings_buffer.go

	Availability AvailabilityConfig // the /v1 catalogue (issue 11): settings_availability.go

	// VM task orchestration (seed 004).
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

// LoadConfig reads every setting through getenv (os.Getenv in main; a map
// in tests), applies defaults and validates the whole.
func LoadConfig(getenv func(string) string) (Config, error) {
	var c Config
	for _, s := range settings {
		v := getenv(s.name)
		if v == "" {
			v = s.def
		}
		if v == "" {
			continue
		}
		if err := s.apply(&c, v); err != nil {
			return Config{}, &ConfigError{Var: s.name, Err: err}
		}
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	modes := 0
	for _, set := range []bool{c.RedisURL != "", len(c.RedisClusterAddrs) > 0, len(c.RedisSentinelAddrs) > 0} {
		if set {
			modes++
		}
	}
	switch {
	case modes > 1:
		return &ConfigError{Var: "REDIS_URL", Err: errors.New("set only one of REDIS_URL, REDIS_CLUSTER_ADDRS, REDIS_SENTINEL_ADDRS")}
	case len(c.RedisSentinelAddrs) > 0 && c.RedisSentinelMaster == "":
		return &ConfigError{Var: "REDIS_SENTINEL_MASTER", Err: errors.New("required with REDIS_SENTINEL_ADDRS")}
	case c.RedisSentinelMaster != "" && len(c.RedisSentinelAddrs) == 0:
		return &ConfigError{Var: "REDIS_SENTINEL_ADDRS", Err: errors.New("required with REDIS_SENTINEL_MASTER")}
	case (c.MonitoringUser == "") != (c.MonitoringPass == ""):
		return &ConfigError{Var: "MONITORING_PASSWORD", Err: errors.New("set both MONITORING_USER and MONITORING_PASSWORD, or neither")}
	}
	for _, spec := range []struct{ name, v string }{
		{"DLQ_RECONCILE_SCHEDULE", c.DLQReconcile}, {"HEARTBEAT_MONITOR_SCHEDULE", c.HeartbeatSpec},
		{"VT_SWEEP_SCHEDULE", c.VTSpec}, {"SLA_PROMOTION_SCHEDULE", c.SLASpec}, {"RETRY_OVERDUE_SCHEDULE", c.RetryOverdueSpec},
		{"TASKS_PURGE_SCHEDULE", c.PurgeSpec},
	} {
		if err := scheduler.ValidateSpec(spec.v); err != nil {
			return &ConfigError{Var: spec.name, Err: err}
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HEARTBEAT_STALE_AFTER", c.HeartbeatStale}, {"VT_TIMEOUT", c.VTTimeout}, {"SLA_THRESHOLD", c.SLAThreshold},
		{"WEBHOOK_TOLERANCE", c.WebhookTolerance}, {"QUEUE_REQUEST_TIMEOUT", c.QueueRequestTimeout}, {"REQUEUE_BACKOFF_BASE", c.RequeueBase}, {"REQUEUE_BACKOFF_MAX", c.RequeueMax}} {
		if d.v <= 0 {
			return &ConfigError{Var: d.name, Err: errors.New("must be positive")}
		}
	}
	switch {
	case c.RequeueMax < c.RequeueBase:
		return &ConfigError{Var: "REQUEUE_BACKOFF_MAX", Err: errors.New("must not be below REQUEUE_BACKOFF_BASE")}
	case c.RetryOverdueAfter <= c.RequeueMax+retryOverdueMargin:
		return &ConfigError{Var: "RETRY_OVERDUE_AFTER", Err: fmt.Errorf("must exceed REQUEUE_BACKOFF_MAX by more than %s (Asynq's 1 s check for due tasks plus slack), or the repair sweep races healthy requeues", retryOverdueMargin)}
	case c.WebhookAuth == "token" && c.WebhookToken == "":
		return &ConfigError{Var: "WEBHOOK_TOKEN", Err: errors.New("required with WEBHOOK_AUTH=token")}
	case c.PurgeAfter < time.Hour:
		return &ConfigError{Var: "TASKS_DONE_RETENTION", Err: errors.New("must be at least 1h (a purged queue_id can be created anew)")}
	case c.AckPath == c.FailPath:
		return &ConfigError{Var: "WEBHOOK_FAIL_PATH", Err: errors.New("must differ from WEBHOOK_ACK_PATH")}
	}
	if !c.Embedded() {
		if c.BookingAuthSecret == "" {
			return &ConfigError{Var: "BOOKING_AUTH_SECRET", Err: errors.New("required with a real Redis (generate one: openssl rand -hex 32)")}
		}
		if c.HMACSecret == "" && c.WebhookAuth == "hmac" {
			return &ConfigError{Var: "HMAC_SECRET", Err: errors.New("required with a real Redis and WEBHOOK_AUTH=hmac (generate one: openssl rand -hex 32)")}
		}
		if c.MonitoringAuth != "none" && c.MonitoringUser == "" {
			return &ConfigError{Var: "MONITORING_USER", Err: errors.New("MONITORING_USER and MONITORING_PASSWORD are required with a real Redis: /monitoring (Asynqmon) can pause, delete and replay queues; set MONITORING_AUTH=none only to leave it open on purpose")}
		}
	}
	cloud9 := []string{c.Cloud9Endpoint, c.Cloud9ClientID, c.Cloud9Username, c.Cloud9Password}
	set := 0
	for _, v := range cloud9 {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != len(cloud9) {
		return &ConfigError{Var: "CLOUD9_ENDPOINT", Err: errors.New("set CLOUD9_ENDPOINT, CLOUD9_CLIENT_ID, CLOUD9_USERNAME and CLOUD9_PASSWORD together, or none for the sandbox simulator")}
	}
	if err := c.validateBooking(); err != nil {
		return err
	}
	if err := c.validateSlotCache(); err != nil {
		return err
	}
	return c.validateBuffer()
}

// Embedded reports whether flowgate runs on its in-process Redis.
func (c *Config) Embedded() bool {
	return c.RedisURL == "" && len(c.RedisClusterAddrs) == 0 && len(c.RedisSentinelAddrs) == 0
}

// Usage writes every variable with its default.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "flowgate — durable sidecar for Node-RED booking flows and n8n orchestration.")
	fmt.Fprintln(w, "\nUsage: flowgate [-help]   (all configuration is read from the environment)")
	fmt.Fprintln(w, "       flowgate cloud9-sim -help   (the Cloud9 sandbox simulator on its own)")
	fmt.Fprintln(w, "       flowgate import-queue -help   (the old queue API's tasks into the ledger)")
	fmt.Fprintln(w, "\nEnvironment:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.name, def, s.help)
	}
	_ = tw.Flush()
}
