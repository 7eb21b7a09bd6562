package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// help and -help print the same text, list every command, and start
// nothing: the address they would listen on stays free.
func TestHelpListsCommandsAndStartsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	env := envOf(map[string]string{"FLOWGATE_ADDR": addr})

	var texts []string
	for _, args := range [][]string{{"help"}, {"-help"}, {"--help"}, {"-h"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, env, &out, &errb), args)
		require.Empty(t, errb.String(), "%v logs nothing: it starts nothing", args)
		texts = append(texts, out.String())
	}
	for _, text := range texts[1:] {
		require.Equal(t, texts[0], text)
	}
	for _, c := range commands {
		require.Regexp(t, `(?m)^  `+strings.ReplaceAll(c.usage, "[", `\[`)+`\s+`, texts[0], "-help lists %s", c.name)
	}
	for _, name := range []string{"env", "check", "import-queue", "cloud9-sim", "version"} {
		require.Contains(t, texts[0], "  "+name, name)
	}
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "nothing listens on FLOWGATE_ADDR")
	require.NoError(t, ln.Close())
}

// A mistyped command ("chek") is refused (exit 2) and starts nothing:
// it used to start the server against the configured Redis.
func TestUnknownCommandStartsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, args := range [][]string{{"chek"}, {"bogus", "x"}, {"-addr-is-not-a-flag=1", "check"}} {
		var out, errb bytes.Buffer
		code := run(args, envOf(map[string]string{"FLOWGATE_ADDR": addr}), &out, &errb)
		require.Equal(t, 2, code, args)
		if args[0] != "-addr-is-not-a-flag=1" {
			require.Contains(t, errb.String(), `unknown command "`+args[0]+`"`)
			require.Contains(t, errb.String(), "nothing started")
		}
	}
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "nothing listens on FLOWGATE_ADDR")
	require.NoError(t, ln.Close())
}

// version prints what the Go toolchain recorded of the build.
func TestVersionPrintsBuildInfo(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"version"}, envOf(nil), &out, &errb))
	require.Regexp(t, `^flowgate \S+\n  go       go1\.\d+`, out.String())
	require.Contains(t, out.String(), "github.com/flowgate/flowgate")
	require.Contains(t, out.String(), "revision")
	require.Empty(t, errb.String())
}

// A secret generated on a real Redis (HMAC_SECRET with WEBHOOK_AUTH=none,
// which does not use it) is never printed: only embedded mode prints the
// secrets it generates, for an operator to call the APIs with.
func TestRealRedisPrintsNoGeneratedSecret(t *testing.T) {
	env := realRedisEnv(t)
	delete(env, "HMAC_SECRET")
	env["WEBHOOK_AUTH"], env["MONITORING_AUTH"] = "none", "none"
	cfg, err := LoadConfig(envOf(env))
	require.NoError(t, err)
	var logs bytes.Buffer
	m := NewMain(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, m.secrets())
	require.Len(t, m.Config.HMACSecret, 64, "filled")
	require.NotContains(t, logs.String(), m.Config.HMACSecret)
	require.NotContains(t, logs.String(), "embedded mode: generated secrets")
	require.Contains(t, logs.String(), "secret unset and unused in this mode")
	require.False(t, m.Config.EphemeralSecret)
}

// The ready line names the Redis (without its password) and the Cloud9
// (without credentials) flowgate runs against.
func TestReadyLineNamesRedisAndCloud9(t *testing.T) {
	c := Config{RedisURL: "redis://:s3cret@redis.internal:6380/4?dial_timeout=3s", Cloud9Endpoint: "https://user:pw@us-ea1-partner.cloud9ortho.com/GetData.ashx"}
	require.Equal(t, "redis://redis.internal:6380/4", c.redisWhere())
	require.Equal(t, "https://us-ea1-partner.cloud9ortho.com/GetData.ashx", c.cloud9Where())
	require.Equal(t, "embedded", (&Config{}).redisWhere())
	require.Contains(t, (&Config{}).cloud9Where(), "sandbox simulator")
	require.Equal(t, "sentinel mymaster@a:26379,b:26379", (&Config{RedisSentinelAddrs: []string{"a:26379", "b:26379"}, RedisSentinelMaster: "mymaster"}).redisWhere())
}

// The confirmed slot hold outlasts a queued booking's gap between runs:
// SLOT_RESERVATION_BOOKED_TTL at its default is raised to the worker's
// HoldKeepTTL (a review helper's drill: with holds as long as the backoff
// cap the hold lapsed, another caller booked the slot, and the queued
// booking failed); a value set is kept (warned when shorter).
func TestConfirmedHoldOutlastsTheRetryGap(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want time.Duration
	}{
		{map[string]string{}, 10*time.Minute + 25*time.Second},
		{map[string]string{"BOOKING_BACKOFF_BASE": "1s", "BOOKING_BACKOFF_MAX": "30s"}, 4*time.Minute + 25*time.Second + 30*time.Second + time.Minute},
		{map[string]string{"SLOT_RESERVATION_BOOKED_TTL": "30s"}, 30 * time.Second},
		{map[string]string{"SLOT_RESERVATION_BOOKED_TTL": "1h"}, time.Hour},
	} {
		cfg, err := LoadConfig(envOf(c.env))
		require.NoError(t, err)
		m := NewMain(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.Equal(t, c.want, m.confirmTTL(cfg.Booking), "%v", c.env)
	}
}
