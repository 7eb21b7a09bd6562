package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, ":8080", cfg.Addr)
	require.Equal(t, "/chord/ortho-prd", cfg.NodeRedBasePath)
	require.Equal(t, Rate{N: 5, Per: time.Minute}, cfg.Cloud9WriteLimit)
	require.Equal(t, 3, cfg.MaxRetryAttempts)
	require.Equal(t, 5, cfg.MaxRecoveries)
	require.Equal(t, 1<<20, cfg.BodyLimit)
	require.True(t, cfg.Embedded())
}

func TestConfigRejectsBadValues(t *testing.T) {
	secrets := map[string]string{"BOOKING_AUTH_SECRET": strings.Repeat("b", 32), "HMAC_SECRET": strings.Repeat("h", 32),
		"MONITORING_USER": "ops", "MONITORING_PASSWORD": "ops-password", "BUFFER_API_TOKEN": strings.Repeat("t", 32)}
	cases := []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"FLOWGATE_ADDR": "8080"}, "FLOWGATE_ADDR"},
		{map[string]string{"REDIS_URL": "http://x"}, "REDIS_URL"},
		{map[string]string{"REDIS_URL": "::not a url"}, "REDIS_URL"},
		{map[string]string{"REDIS_CLUSTER_ADDRS": "a,b"}, "REDIS_CLUSTER_ADDRS"},
		{map[string]string{"REDIS_SENTINEL_ADDRS": "127.0.0.1:26379"}, "REDIS_SENTINEL_MASTER"},
		{map[string]string{"REDIS_SENTINEL_MASTER": "mymaster"}, "REDIS_SENTINEL_ADDRS"},
		{map[string]string{"REDIS_URL": "redis://x:1/0", "REDIS_CLUSTER_ADDRS": "a:1"}, "REDIS_URL"},
		{map[string]string{"REDIS_MIN_REPLICAS_ACK": "1"}, "REDIS_MIN_REPLICAS_ACK"}, // the embedded Redis has no replica
		{map[string]string{"REDIS_MIN_REPLICAS_ACK": "17"}, "REDIS_MIN_REPLICAS_ACK"},
		{map[string]string{"REDIS_URL": "redis://x:1/0", "REDIS_MIN_REPLICAS_ACK": "1", "REDIS_REPLICA_ACK_TIMEOUT": "5s"}, "REDIS_REPLICA_ACK_TIMEOUT"},
		{map[string]string{"CLOUD9_WRITE_LIMIT": "fast"}, "CLOUD9_WRITE_LIMIT"},
		{map[string]string{"CLOUD9_WRITE_LIMIT": "0/min"}, "CLOUD9_WRITE_LIMIT"},
		{map[string]string{"CLOUD9_WRITE_LIMIT": "5/-1s"}, "CLOUD9_WRITE_LIMIT"},
		{map[string]string{"CLOUD9_ENDPOINT": "https://c9.example/api"}, "CLOUD9_ENDPOINT"},
		{map[string]string{"MAX_RETRY_ATTEMPTS": "-1"}, "MAX_RETRY_ATTEMPTS"},
		{map[string]string{"MAX_RETRY_ATTEMPTS": "three"}, "MAX_RETRY_ATTEMPTS"},
		{map[string]string{"MAX_RECOVERIES": "0"}, "MAX_RECOVERIES"},
		{map[string]string{"MAX_RECOVERIES": "101"}, "MAX_RECOVERIES"},
		{map[string]string{"LOG_FORMAT": "xml"}, "LOG_FORMAT"},
		{map[string]string{"HTTP_SHUTDOWN_TIMEOUT": "-5s"}, "HTTP_SHUTDOWN_TIMEOUT"},
		{map[string]string{"HTTP_SHUTDOWN_TIMEOUT": "soon"}, "HTTP_SHUTDOWN_TIMEOUT"},
		{map[string]string{"MONITORING_READONLY": "maybe"}, "MONITORING_READONLY"},
		{map[string]string{"MONITORING_USER": "ops"}, "MONITORING_PASSWORD"},
		{map[string]string{"HMAC_SECRET": "short"}, "HMAC_SECRET"},
		{map[string]string{"NODERED_BASE_PATH": "chord/"}, "NODERED_BASE_PATH"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "HMAC_SECRET": strings.Repeat("h", 16)}, "BOOKING_AUTH_SECRET"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "BOOKING_AUTH_SECRET": strings.Repeat("h", 16)}, "HMAC_SECRET"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0", "BOOKING_AUTH_SECRET": strings.Repeat("h", 16), "HMAC_SECRET": strings.Repeat("h", 16)}, "MONITORING_USER"},
		{map[string]string{"MONITORING_AUTH": "open"}, "MONITORING_AUTH"},
		// What the server would refuse at start, or silently replace with a
		// default, is refused by LoadConfig too (so `flowgate check` says so).
		{map[string]string{"CLOUD9_WRITE_LIMIT": "5/1ms"}, "CLOUD9_WRITE_LIMIT"}, // a typo of 5/1m
		{map[string]string{"WEBHOOK_TOLERANCE": "500ms"}, "WEBHOOK_TOLERANCE"},
		{map[string]string{"HOLD_TTL": "48h"}, "HOLD_TTL"},
		{map[string]string{"HOLD_TTL": "0s"}, "HOLD_TTL"},
		{map[string]string{"HOLDS_REQUEST_TIMEOUT": "0s"}, "HOLDS_REQUEST_TIMEOUT"},
		{map[string]string{"HOLDS_STREAM_LEASE_DEFAULT": "2h"}, "HOLDS_STREAM_LEASE_DEFAULT"},
		{map[string]string{"HOLDS_STREAM_LEASE_DEFAULT": "500ms"}, "HOLDS_STREAM_LEASE_DEFAULT"}, // under the stream's 1 s least lease
		{map[string]string{"HOLDS_STREAM_PING": "0s"}, "HOLDS_STREAM_PING"},
		{map[string]string{"HOLDS_STREAM_RELEASE_BURST": "0"}, "HOLDS_STREAM_RELEASE_BURST"},
		{map[string]string{"ASYNQ_SHUTDOWN_TIMEOUT": "0s"}, "ASYNQ_SHUTDOWN_TIMEOUT"},
		{map[string]string{"BUFFER_SHUTDOWN_TIMEOUT": "0s"}, "BUFFER_SHUTDOWN_TIMEOUT"},
		{map[string]string{"BOOKING_COMPLETED_RETENTION": "0s"}, "BOOKING_COMPLETED_RETENTION"},
		{map[string]string{"SHADOW_RETENTION": "0s"}, "SHADOW_RETENTION"},
		{map[string]string{"PHONE_SEARCH_RECORD_MAX_AGE": "0s"}, "PHONE_SEARCH_RECORD_MAX_AGE"},
		{map[string]string{"DLQ_RECONCILE_SCHEDULE": "0 0 0 30 2 *"}, "DLQ_RECONCILE_SCHEDULE"}, // 30 February
		// Settings that must outlast another's: a booking call (30 s for
		// its write turn + a 45 s write) outlasts the 60 s HTTP drain; a
		// 30 s SlotReservation lapses under a 45 s write; seven tiers at
		// one read a minute wait 6 min for turns, past the 4 min lease.
		{map[string]string{"BOOKING_INCALL_WAIT": "30s"}, "HTTP_SHUTDOWN_TIMEOUT"},
		{map[string]string{"SLOT_RESERVATION_TTL": "30s"}, "SLOT_RESERVATION_TTL"},
		{map[string]string{"SLOT_CACHE_TIERS": "14,30,60,90,120,150,196", "SLOT_CACHE_READ_LIMIT": "1/min"}, "SLOT_CACHE_READ_LIMIT"},
	}
	for _, tc := range cases {
		_, err := LoadConfig(envOf(tc.env))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%v: got %v", tc.env, err)
		require.Equal(t, tc.name, ce.Var, "%v: %v", tc.env, err)
	}
	env := map[string]string{"REDIS_CLUSTER_ADDRS": "127.0.0.1:7000, 127.0.0.1:7001", "CLOUD9_SIMULATOR": "true"}
	for k, v := range secrets {
		env[k] = v
	}
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:7000", "127.0.0.1:7001"}, cfg.RedisClusterAddrs)
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"5/min": {5, time.Minute}, "5/6s": {5, 6 * time.Second}, "10 / s": {10, time.Second}, "1/hour": {1, time.Hour},
	} {
		got, err := ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

func TestRunExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-help"}, envOf(nil), &out, &errOut)
	require.Equal(t, 0, code)
	for _, s := range settings {
		require.Contains(t, out.String(), s.name)
	}
	require.Contains(t, out.String(), "/chord/ortho-prd")

	out.Reset()
	errOut.Reset()
	code = run(nil, envOf(map[string]string{"ASYNQ_SERVERS": "0"}), &out, &errOut)
	require.Equal(t, 2, code)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut.String()), "\n")+1, "one line: %q", errOut.String())
	require.Contains(t, errOut.String(), "ASYNQ_SERVERS")

	errOut.Reset()
	require.Equal(t, 2, run([]string{"--bogus"}, envOf(nil), &out, &errOut))
}

// README points at the generated configuration page (every setting is
// there: TestConfigurationDocIsCurrent) and shows how to run flowgate.
func TestReadmeLinksTheConfigurationPage(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(raw), "docs/configuration.md")
	require.Contains(t, string(raw), "go build -o flowgate ./sidecar")
	require.Contains(t, string(raw), "./flowgate help")
}

func TestConfigRetryOverdueMargin(t *testing.T) {
	_, err := LoadConfig(envOf(map[string]string{"REQUEUE_BACKOFF_BASE": "300ms", "REQUEUE_BACKOFF_MAX": "1s", "RETRY_OVERDUE_AFTER": "2s"}))
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "RETRY_OVERDUE_AFTER", ce.Var)
	_, err = LoadConfig(envOf(map[string]string{"REQUEUE_BACKOFF_BASE": "300ms", "REQUEUE_BACKOFF_MAX": "1s", "RETRY_OVERDUE_AFTER": "6100ms"}))
	require.NoError(t, err)
}

func TestConfigOrchestrationSettings(t *testing.T) {
	cfg, err := LoadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, "hmac", cfg.WebhookAuth)
	require.Equal(t, 300*time.Second, cfg.WebhookTolerance)
	require.Equal(t, 2*time.Minute, cfg.HeartbeatStale)
	require.Equal(t, 10*time.Minute, cfg.VTTimeout)
	require.Equal(t, 30*time.Minute, cfg.SLAThreshold)
	require.Equal(t, "@every 30s", cfg.HeartbeatSpec)
	require.Equal(t, "@every 5m", cfg.VTSpec)
	require.Equal(t, "@every 15m", cfg.SLASpec)
	require.Equal(t, 10*time.Second, cfg.RequeueBase)
	require.Equal(t, 5*time.Minute, cfg.RequeueMax)
	for env, name := range map[string]string{
		"HEARTBEAT_MONITOR_SCHEDULE=every thirty": "HEARTBEAT_MONITOR_SCHEDULE",
		"VT_TIMEOUT=0s":                                   "VT_TIMEOUT",
		"WEBHOOK_AUTH=token":                              "WEBHOOK_TOKEN",
		"WEBHOOK_AUTH=basic":                              "WEBHOOK_AUTH",
		"WEBHOOK_ACK_PATH=ack":                            "WEBHOOK_ACK_PATH",
		"WEBHOOK_FAIL_PATH=/ack":                          "WEBHOOK_FAIL_PATH",
		"WEBHOOK_ACK_PATH=/queue":                         "WEBHOOK_ACK_PATH", // another route: the start failed on it
		"WEBHOOK_ACK_PATH=/chord/ortho-prd/createAppt":    "WEBHOOK_ACK_PATH",
		"WEBHOOK_FAIL_PATH=/chord/ortho-prd/getApptSlots": "WEBHOOK_FAIL_PATH",
		"WEBHOOK_FAIL_PATH=/webhook/ack":                  "WEBHOOK_FAIL_PATH", // the ACK's /webhook variant: the one that set it is named
		"WEBHOOK_ACK_PATH=/webhook/fail":                  "WEBHOOK_ACK_PATH",
		"WEBHOOK_ACK_PATH=/Queue":                         "WEBHOOK_ACK_PATH", // case-folded, as Fiber routes
		"REQUEUE_BACKOFF_MAX=1s":                          "REQUEUE_BACKOFF_MAX",
		"RETRY_OVERDUE_AFTER=5m":                          "RETRY_OVERDUE_AFTER",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := LoadConfig(envOf(map[string]string{k: v}))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), env)
		require.Equal(t, name, ce.Var, "%s: %v", env, err)
	}
}

func TestConfigBookingSettings(t *testing.T) {
	cfg, err := LoadConfig(envOf(nil))
	require.NoError(t, err)
	b := cfg.Booking
	require.Equal(t, 10*time.Second, b.SyncBudget)
	require.Equal(t, 5*time.Second, b.SyncRetryDelay)
	require.Equal(t, 2, b.SyncAttempts)
	require.Equal(t, 10, b.MaxAttempts)
	require.Equal(t, 10*time.Second, b.BackoffBase)
	require.Equal(t, 300*time.Second, b.BackoffMax)
	require.Equal(t, 15*time.Minute, b.SessionTTL)
	require.Equal(t, 90*time.Second, b.ReserveTTL)
	require.Equal(t, 300*time.Second, b.BookedTTL)
	// The booking endpoints' deadline outlasts the longest call: 15 s for
	// the write turn + the 45 s write + 5 s; longer with a longer wait.
	require.Equal(t, 65*time.Second, b.bookingRequestTimeout())
	longer, err := LoadConfig(envOf(map[string]string{"BOOKING_INCALL_WAIT": "30s", "HTTP_SHUTDOWN_TIMEOUT": "80s"}))
	require.NoError(t, err)
	require.Equal(t, 80*time.Second, longer.Booking.bookingRequestTimeout())
	require.Equal(t, 45*time.Second, b.WriteTimeout)
	require.Equal(t, 15*time.Second, b.NoteTimeout)
	require.Equal(t, "session", b.AuthMode)
	require.Equal(t, Rate{N: 5, Per: time.Minute}, cfg.Cloud9WriteLimit)
	require.Equal(t, "07687884-7e37-49aa-8028-d43b751c9034", b.ScheduleColumn)

	spaced, err := LoadConfig(envOf(map[string]string{"BOOKING_SPACING_MS": "10000"}))
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, spaced.writeRate().Interval())

	real := map[string]string{"CLOUD9_ENDPOINT": "https://c9.example/GetData.ashx", "CLOUD9_CLIENT_ID": "c",
		"CLOUD9_USERNAME": "u", "CLOUD9_PASSWORD": "p"}
	for env, name := range map[string]string{
		"": "CLOUD9_PROVIDER_GUID",
		"CLOUD9_PROVIDER_GUID=256a8738-e093-4e71-a263-7fa95f7fae4e": "CLOUD9_VENDOR_USERNAME",
	} {
		m := map[string]string{}
		for k, v := range real {
			m[k] = v
		}
		if k, v, ok := strings.Cut(env, "="); ok {
			m[k] = v
		}
		_, err := LoadConfig(envOf(m))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), env)
		require.Equal(t, name, ce.Var, "%s: %v", env, err)
	}
	for env, name := range map[string]string{
		"BOOKING_AUTH_MODE=open":              "BOOKING_AUTH_MODE",
		"CLOUD9_SCHEDULE_COLUMN_GUID=chair-8": "CLOUD9_SCHEDULE_COLUMN_GUID",
		"BOOKING_BACKOFF_MAX=1s":              "BOOKING_BACKOFF_MAX",
		"SLOT_RESERVATION_TTL=0s":             "SLOT_RESERVATION_TTL",
		"CLOUD9_SIM_SCALE=-1":                 "CLOUD9_SIM_SCALE",
		"BOOKING_EVENTS_WEBHOOK=ftp://x":      "BOOKING_EVENTS_WEBHOOK",
		"BOOKING_SPACING_MS=0":                "BOOKING_SPACING_MS",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := LoadConfig(envOf(map[string]string{k: v}))
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), env)
		require.Equal(t, name, ce.Var, "%s: %v", env, err)
	}
}

// A malformed REDIS_URL is refused without echoing its password.
func TestRedisURLPasswordNeverPrinted(t *testing.T) {
	for _, u := range []string{"redis://:s3cr3tpass@127.0.0.1:notaport/0", "redis://:s3cr3tpass@127.0.0.1:6379/notadb", "rediss://:s3cr3tpass@[::1/0"} {
		var out, errOut bytes.Buffer
		code := run(nil, envOf(map[string]string{"REDIS_URL": u, "BOOKING_AUTH_SECRET": strings.Repeat("b", 32),
			"HMAC_SECRET": strings.Repeat("h", 32), "FLOWGATE_ADDR": "127.0.0.1:0"}), &out, &errOut)
		require.NotEqual(t, 0, code, u)
		require.NotContains(t, errOut.String()+out.String(), "s3cr3tpass", u)
	}
}

// A start with several problems names every one of them, one line each,
// and exits 2: nobody fixes a deployment one failed start at a time.
func TestConfigReportsEveryProblemInOneStart(t *testing.T) {
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:1/0", "LOG_FORMAT": "xml", "VT_TIMEOUT": "soon",
		"MAX_RETRY_ATTEMPTS": "three", "REQUEUE_BACKOFF_BASE": "10m", "REQUEUE_BACKOFF_MAX": "1m"}
	_, err := LoadConfig(envOf(env))
	var es ConfigErrors
	require.ErrorAs(t, err, &es)
	var names []string
	for _, e := range es {
		names = append(names, e.Var)
	}
	require.ElementsMatch(t, []string{"LOG_FORMAT", "VT_TIMEOUT", "MAX_RETRY_ATTEMPTS", "REQUEUE_BACKOFF_MAX",
		"BOOKING_AUTH_SECRET", "HMAC_SECRET", "MONITORING_USER", "CLOUD9_ENDPOINT", "BUFFER_API_TOKEN"}, names)

	var stderr bytes.Buffer
	code := run(nil, envOf(env), io.Discard, &stderr)
	require.Equal(t, 2, code)
	out := stderr.String()
	for _, n := range names {
		require.Equal(t, 1, strings.Count(out, "\n  "+n+": "), "%s on a line of its own in:\n%s", n, out)
	}
}
