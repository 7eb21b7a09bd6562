package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	"github.com/flowgate/flowgate/orchestrator/durable"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/webhooks"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
)

// Rate is "N/duration", e.g. 5/min, 5/6s, 10/1m.
type Rate struct {
	N   int
	Per time.Duration
}

func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.N, r.Per) }

var guidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

var rateRe = regexp.MustCompile(`^(\d+)\s*/\s*(\S+)$`)

// ParseRate parses N/unit where unit is s, sec, m, min, h, hour or a Go
// duration such as 6s.
func ParseRate(s string) (Rate, error) {
	m := rateRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Rate{}, fmt.Errorf("want N/period such as 5/min or 5/6s, got %q", s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return Rate{}, fmt.Errorf("count must be a positive integer, got %q", m[1])
	}
	var per time.Duration
	switch m[2] {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		if per, err = time.ParseDuration(m[2]); err != nil || per < time.Second {
			return Rate{}, fmt.Errorf("period must be s, min, h or a duration of at least 1s, got %q", m[2])
		}
	}
	return Rate{N: n, Per: per}, nil
}

// setting is one environment variable: its default, help, and how it is
// applied to the Config.
type setting struct {
	name, def, help string
	secret          bool
	apply           func(c *Config, v string) error
}

func str(dst func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *dst(c) = v; return nil }
}

func list(dst func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		var out []string
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(a); err != nil {
				return fmt.Errorf("%q is not host:port", a)
			}
			out = append(out, a)
		}
		*dst(c) = out
		return nil
	}
}

func integer(dst func(*Config) *int, min, max int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
		if n < min || n > max {
			return fmt.Errorf("must be between %d and %d, got %d", min, max, n)
		}
		*dst(c) = n
		return nil
	}
}

func duration(dst func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want a duration such as 10s or 2m, got %q", v)
		}
		if d < 0 {
			return fmt.Errorf("must not be negative, got %s", d)
		}
		*dst(c) = d
		return nil
	}
}

func boolean(dst func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		*dst(c) = b
		return nil
	}
}

func oneOf(dst func(*Config) *string, allowed ...string) func(*Config, string) error {
	return func(c *Config, v string) error {
		for _, a := range allowed {
			if v == a {
				*dst(c) = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

// settingGroups are the families' tables, in the order -help and
// docs/configuration.md list them (a new family appends a group).
var settingGroups = []struct {
	title string
	list  []setting
}{
	{"Core: HTTP, Redis, Cloud9, VM tasks, monitoring", coreSettings},
	{"Booking (the Node-RED endpoints)", bookingSettings},
	{"Tiered slot cache and operations", slotCacheSettings},
	{"Work buffer", bufferSettings},
	{"Availability (/v1)", availabilitySettings},
	{"Patient family and phone search", familySettings},
	{"Live holds stream (SSE)", holdStreamSettings},
	{"Holds", holdsSettings},
	{"Shadow mode (/switch-over)", shadowSettings},
}

// settings is every variable, in the groups' order.
var settings = func() []setting {
	var all []setting
	for _, g := range settingGroups {
		all = append(all, g.list...)
	}
	return all
}()

// coreSettings are the variables of the foundation and the orchestration.
var coreSettings = []setting{
	{name: "FLOWGATE_ADDR", def: ":8080", help: "HTTP listen address", apply: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port such as :8080, got %q", v)
		}
		c.Addr = v
		return nil
	}},
	{name: "REDIS_URL", help: "redis://[:password@]host:port/db (rediss:// for TLS); unset = embedded, non-durable Redis", secret: true, apply: func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "redis-socket") || (u.Host == "" && u.Scheme != "redis-socket") {
			return errors.New("want redis://host:port/db or rediss://host:port/db")
		}
		c.RedisURL = v
		return nil
	}},
	{name: "REDIS_CLUSTER_ADDRS", help: "comma-separated host:port seeds of a Redis Cluster", apply: list(func(c *Config) *[]string { return &c.RedisClusterAddrs })},
	{name: "REDIS_SENTINEL_ADDRS", help: "comma-separated host:port of Redis Sentinels (with REDIS_SENTINEL_MASTER)", apply: list(func(c *Config) *[]string { return &c.RedisSentinelAddrs })},
	{name: "REDIS_SENTINEL_MASTER", help: "the Sentinel master name", apply: str(func(c *Config) *string { return &c.RedisSentinelMaster })},
	{name: "REDIS_PASSWORD", help: "password for cluster or sentinel mode", secret: true, apply: str(func(c *Config) *string { return &c.RedisPassword })},
	{name: "REDIS_POOL_SIZE", def: "64", help: "connections per Redis pool (the HTTP handlers' shared client and each asynq dequeuer); cluster mode keeps go-redis' default per node", apply: integer(func(c *Config) *int { return &c.RedisPoolSize }, 1, 10000)},
	{name: "REDIS_SHARDS", def: strconv.Itoa(DefaultRedisShards), help: "hash tags that tasks, holds and the buffer each spread their keys over, so that on Redis Cluster their scripts run on several masters (docs/scale-out.md); 1 = one tag each, the keys as before", apply: integer(func(c *Config) *int { return &c.RedisShards }, 1, shard.MaxShards)},
	{name: "REDIS_CLIENT_MODE", def: DefaultRedisClientMode, help: "autopipeline: concurrent scripts of holds and the task ledger (ACK, claim, create) and buffer enqueues share round trips (best when Redis shares flowgate's cores); plain: one round trip each (best when Redis has cores of its own)", apply: oneOf(func(c *Config) *string { return &c.RedisClientMode }, RedisClientAutoPipeline, RedisClientPlain)},
	{name: "REDIS_MIN_REPLICAS_ACK", def: "0", help: "replicas (of every master) that must hold a write before flowgate answers it with success (WAIT; docs/reliability.md, \"Failover\"); past REDIS_REPLICA_ACK_TIMEOUT the answer is 503 and the caller retries; 0 = answer as soon as the master has it (a failover can lose the last writes)", apply: integer(func(c *Config) *int { return &c.RedisMinReplicasAck }, 0, 16)},
	{name: "REDIS_REPLICA_ACK_TIMEOUT", def: durable.DefaultTimeout.String(), help: "how long a successful write waits for REDIS_MIN_REPLICAS_ACK replicas before it is answered 503", apply: duration(func(c *Config) *time.Duration { return &c.RedisReplicaAckTimeout })},
	{name: "NODERED_BASE_PATH", def: bookinghttp.DefaultBasePath, help: "path prefix of the Node-RED-compatible booking endpoints", apply: func(c *Config, v string) error {
		if !strings.HasPrefix(v, "/") || strings.HasSuffix(v, "/") {
			return fmt.Errorf("must start with / and not end with /, got %q", v)
		}
		c.NodeRedBasePath = v
		return nil
	}},
	{name: "CLOUD9_ENDPOINT", help: "Cloud9 XML API URL; unset = the built-in sandbox simulator, by default only with the embedded Redis (see CLOUD9_SIMULATOR)", apply: func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http(s) URL, got %q", v)
		}
		c.Cloud9Endpoint = v
		return nil
	}},
	{name: "CLOUD9_CLIENT_ID", help: "Cloud9 client id", apply: str(func(c *Config) *string { return &c.Cloud9ClientID })},
	{name: "CLOUD9_USERNAME", help: "Cloud9 user name", apply: str(func(c *Config) *string { return &c.Cloud9Username })},
	{name: "CLOUD9_PASSWORD", help: "Cloud9 password", secret: true, apply: str(func(c *Config) *string { return &c.Cloud9Password })},
	{name: "CLOUD9_VENDOR_USERNAME", help: "Cloud9 vendor user name (SetAppointment and SetPatient send it); required with a real Cloud9", apply: str(func(c *Config) *string { return &c.Cloud9VendorUsername })},
	{name: "CLOUD9_SIMULATOR", help: "true: book into the built-in Cloud9 sandbox simulator (made-up patients and slots, lost at exit; nothing reaches Cloud9) although Redis is real; a real Redis without CLOUD9_* credentials refuses to start unless it is true; false: never the simulator (the embedded Redis then needs the credentials too); contradicts CLOUD9_ENDPOINT and the credentials", apply: func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		c.Cloud9Simulator, c.cloud9SimulatorSet = b, true
		return nil
	}},
	{name: "CLOUD9_WRITE_LIMIT", def: "5/min", help: "Cloud9 write rate shared by every instance (N/period)", apply: func(c *Config, v string) error {
		r, err := ParseRate(v)
		c.Cloud9WriteLimit = r
		return err
	}},
	{name: "BOOKING_AUTH_SECRET", help: "HMAC secret of booking auth tokens (≥ 16 bytes); required with a real Redis", secret: true, apply: secretValue(func(c *Config) *string { return &c.BookingAuthSecret })},
	{name: "HMAC_SECRET", help: "HMAC secret flowgate verifies the queue API's and ACK/FAIL webhooks' signatures with (≥ 16 bytes); required with a real Redis; never signs anything flowgate sends", secret: true, apply: secretValue(func(c *Config) *string { return &c.HMACSecret })},
	{name: "OUTBOUND_HMAC_SECRET", help: "HMAC secret flowgate signs what it sends with (≥ 16 bytes): webhook.forward (BUFFER_WEBHOOK_URL), DLQ_ALERT_WEBHOOK, BOOKING_EVENTS_WEBHOOK, and declared handlers with sign: true and no secret of their own; required when one of them is set; must differ from HMAC_SECRET and BOOKING_AUTH_SECRET (a receiver could replay a POST at flowgate)", secret: true, apply: secretValue(func(c *Config) *string { return &c.OutboundSecret })},
	{name: "MAX_RETRY_ATTEMPTS", def: itoa(contracts.DefaultMaxAttempts), help: "worker FAILs before a task goes to the dead-letter queue", apply: integer(func(c *Config) *int { return &c.MaxRetryAttempts }, 1, 100)},
	{name: "TASK_MAX_PROCESSING", def: durStr(tasks.DefaultMaxProcessing), help: "longest a claimed VM task may stay PROCESSING: past it heartbeats are refused (409 max_processing) and the heartbeat monitor recovers the task, counted in recoveries (1m..12h, SQS's cap on a message's visibility)", apply: duration(func(c *Config) *time.Duration { return &c.TaskMaxProcessing })},
	{name: "MAX_RECOVERIES", def: strconv.Itoa(tasks.DefaultMaxRecoveries), help: "sweep recoveries of a task (its worker went silent: no heartbeat) before it goes to the dead-letter queue; counted apart from FAILs", apply: integer(func(c *Config) *int { return &c.MaxRecoveries }, 1, tasks.MaxMaxRecoveries)},
	{name: "LOG_FORMAT", def: "text", help: "text or json", apply: oneOf(func(c *Config) *string { return &c.LogFormat }, "text", "json")},
	{name: "LOG_LEVEL", def: "info", help: "debug, info, warn or error", apply: oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{name: "HTTP_BODY_LIMIT", def: itoa(web.DefaultBodyLimit), help: "largest request body in bytes (413 above)", apply: integer(func(c *Config) *int { return &c.BodyLimit }, 1024, 64<<20)},
	{name: "READINESS_DRAIN_DELAY", def: "0s", help: "on shutdown, how long /readyz says 503 before HTTP stops accepting", apply: duration(func(c *Config) *time.Duration { return &c.ReadinessDelay })},
	{name: "HTTP_SHUTDOWN_TIMEOUT", def: "60s", help: "how long in-flight HTTP requests may finish on shutdown; at least the longest booking call, max(BOOKING_SYNC_BUDGET, BOOKING_INCALL_WAIT) + CLOUD9_WRITE_TIMEOUT, so a booking under way completes (an idle shutdown takes about a second)", apply: duration(func(c *Config) *time.Duration { return &c.HTTPDrain })},
	{name: "ASYNQ_SERVERS", def: itoa(asynqrt.DefaultServers), help: "asynq dequeuers in this process (throughput scales with it; see docs/performance.md)", apply: integer(func(c *Config) *int { return &c.AsynqServers }, 1, 64)},
	{name: "ASYNQ_CONCURRENCY", def: itoa(asynqrt.DefaultConcurrency), help: "workers per asynq dequeuer", apply: integer(func(c *Config) *int { return &c.AsynqConcurr }, 1, 10000)},
	{name: "ASYNQ_SHUTDOWN_TIMEOUT", def: durStr(asynqrt.DefaultShutdownTimeout), help: "how long in-flight tasks may finish on shutdown before asynq re-queues them", apply: duration(func(c *Config) *time.Duration { return &c.AsynqShutdown })},
	{name: "DLQ_RECONCILE_SCHEDULE", def: "@every 1m", help: "cron spec (with seconds) of the archive → dead-letter record reconciler", apply: str(func(c *Config) *string { return &c.DLQReconcile })},
	{name: "MONITORING_AUTH", def: "basic", help: "basic (MONITORING_USER/MONITORING_PASSWORD required with a real Redis) or none (Asynqmon open to anyone who reaches it; warned at start)", apply: oneOf(func(c *Config) *string { return &c.MonitoringAuth }, "basic", "none")},
	{name: "MONITORING_USER", help: "basic-auth user of /monitoring (Asynqmon)", apply: str(func(c *Config) *string { return &c.MonitoringUser })},
	{name: "MONITORING_PASSWORD", help: "basic-auth password of /monitoring", secret: true, apply: str(func(c *Config) *string { return &c.MonitoringPass })},
	{name: "MONITORING_READONLY", def: "false", help: "true makes Asynqmon view-only", apply: boolean(func(c *Config) *bool { return &c.MonitoringRO })},
	{name: "PPROF_ADDR", help: "when set (e.g. 127.0.0.1:6060), serve net/http/pprof there for profiling; keep it off public interfaces", apply: func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("want host:port such as 127.0.0.1:6060, got %q", v)
		}
		c.PprofAddr = v
		return nil
	}},
	{name: "WEBHOOK_AUTH", def: "hmac", help: "queue API and ACK/FAIL authentication: hmac, token (static bearer WEBHOOK_TOKEN) or none", apply: oneOf(func(c *Config) *string { return &c.WebhookAuth }, "hmac", "token", "none")},
	{name: "WEBHOOK_TOKEN", help: "bearer token for WEBHOOK_AUTH=token (≥ 16 bytes)", secret: true, apply: secretValue(func(c *Config) *string { return &c.WebhookToken })},
	{name: "WEBHOOK_TOLERANCE", def: durStr(signature.DefaultTolerance), help: "accepted clock skew of X-Timestamp (±)", apply: duration(func(c *Config) *time.Duration { return &c.WebhookTolerance })},
	{name: "WEBHOOK_SIGNATURE_MIN_VERSION", def: itoa(signature.DefaultMinVersion), help: "oldest accepted signature version: 1 = the original n8n workflow's timestamp.body, 2 = method and path signed too", apply: integer(func(c *Config) *int { return &c.SignatureMinVersion }, 1, 2)},
	{name: "QUEUE_REQUEST_TIMEOUT", def: durStr(taskhttp.DefaultRequestTimeout), help: "how long a queue API or ACK/FAIL request may wait on Redis before answering 503 (a claim adds its wait_ms; a FAIL's retry scheduling adds up to 5s)", apply: duration(func(c *Config) *time.Duration { return &c.QueueRequestTimeout })},
	{name: "WEBHOOK_ACK_PATH", def: webhooks.DefaultAckPath, help: "path of the ACK webhook (also served under /webhook + the path)", apply: path(func(c *Config) *string { return &c.AckPath })},
	{name: "WEBHOOK_FAIL_PATH", def: webhooks.DefaultFailPath, help: "path of the FAIL webhook (also served under /webhook + the path)", apply: path(func(c *Config) *string { return &c.FailPath })},
	{name: "HEARTBEAT_MONITOR_SCHEDULE", def: taskjobs.DefaultSweepSettings().HeartbeatSpec, help: "cron spec of the heartbeat monitor", apply: str(func(c *Config) *string { return &c.HeartbeatSpec })},
	{name: "HEARTBEAT_STALE_AFTER", def: durStr(taskjobs.DefaultSweepSettings().HeartbeatStale), help: "PROCESSING without heartbeat or update for longer → PENDING", apply: duration(func(c *Config) *time.Duration { return &c.HeartbeatStale })},
	{name: "VT_SWEEP_SCHEDULE", def: taskjobs.DefaultSweepSettings().VTSpec, help: "cron spec of the visibility-timeout sweep", apply: str(func(c *Config) *string { return &c.VTSpec })},
	{name: "VT_TIMEOUT", def: durStr(taskjobs.DefaultSweepSettings().VTTimeout), help: "PROCESSING without heartbeat (or claim) for longer → PENDING; a heartbeat extends it, as in SQS", apply: duration(func(c *Config) *time.Duration { return &c.VTTimeout })},
	{name: "SLA_PROMOTION_SCHEDULE", def: taskjobs.DefaultSweepSettings().SLASpec, help: "cron spec of the SLA promotion", apply: str(func(c *Config) *string { return &c.SLASpec })},
	{name: "SLA_THRESHOLD", def: durStr(taskjobs.DefaultSweepSettings().SLAThreshold), help: "PENDING older than this → priority HIGH", apply: duration(func(c *Config) *time.Duration { return &c.SLAThreshold })},
	{name: "RETRY_OVERDUE_SCHEDULE", def: taskjobs.DefaultSweepSettings().RetryOverdueSpec, help: "cron spec of the repair sweep for retries whose Asynq requeue was lost", apply: str(func(c *Config) *string { return &c.RetryOverdueSpec })},
	{name: "RETRY_OVERDUE_AFTER", def: durStr(taskjobs.DefaultSweepSettings().RetryOverdueAfter), help: "ERROR awaiting a retry for longer than this is requeued by the repair sweep (must exceed REQUEUE_BACKOFF_MAX)", apply: duration(func(c *Config) *time.Duration { return &c.RetryOverdueAfter })},
	{name: "TASKS_PURGE_SCHEDULE", def: taskjobs.DefaultSweepSettings().PurgeSpec, help: "cron spec of the purge of old DONE tasks", apply: str(func(c *Config) *string { return &c.PurgeSpec })},
	{name: "TASKS_DONE_RETENTION", def: durStr(taskjobs.DefaultSweepSettings().PurgeAfter), help: "DONE tasks older than this are deleted from the ledger (dead letters never are)", apply: duration(func(c *Config) *time.Duration { return &c.PurgeAfter })},
	{name: "REQUEUE_BACKOFF_BASE", def: durStr(taskjobs.DefaultRequeueBackoffBase), help: "delay before the first requeue after a FAIL (doubles per attempt)", apply: duration(func(c *Config) *time.Duration { return &c.RequeueBase })},
	{name: "REQUEUE_BACKOFF_MAX", def: durStr(taskjobs.DefaultRequeueBackoffMax), help: "cap of the requeue delay", apply: duration(func(c *Config) *time.Duration { return &c.RequeueMax })},
}

func path(dst func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " ?#:*") || (len(v) > 1 && strings.HasSuffix(v, "/")) {
			return fmt.Errorf("want a path such as /ack, got %q", v)
		}
		*dst(c) = v
		return nil
	}
}

func secretValue(dst func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if len(v) < 16 {
			return fmt.Errorf("must be at least 16 bytes, got %d", len(v))
		}
		*dst(c) = v
		return nil
	}
}

// durStr is d as a setting's default text: whole hours, minutes or seconds
// in one unit ("2m", "168h", "90s"), otherwise Go's form ("250ms").
func durStr(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// ints is a comma-separated list of ns, a list setting's default text.
func ints(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
