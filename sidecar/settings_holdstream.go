package main

import (
	"time"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// HoldStreamConfig holds the live holds stream's settings
// (docs/holds.md#the-live-stream-sse).
type HoldStreamConfig struct {
	Ping         time.Duration
	Retry        time.Duration
	LeaseDefault time.Duration
	LeaseMax     time.Duration
	WriteTimeout time.Duration
	Buffer       int
	HeapWarnMB   int
	RSSWarnMB    int
	MemoryCheck  time.Duration
	Shards       int
	ReleaseQuiet time.Duration
	ReleaseBurst int
}

// stream is the holds stream's configuration from the settings (the
// sidecar adds Redis, the hold engine, the validator, its clock, logger
// and registry).
func (h HoldStreamConfig) stream() holdstream.Config {
	return holdstream.Config{Ping: h.Ping, Retry: h.Retry, DefaultLease: h.LeaseDefault, MaxLease: h.LeaseMax,
		WriteTimeout: h.WriteTimeout, Buffer: h.Buffer, Shards: h.Shards, ReleaseQuiet: h.ReleaseQuiet, ReleaseBurst: h.ReleaseBurst,
		HeapWarn: uint64(h.HeapWarnMB) << 20, RSSWarn: uint64(h.RSSWarnMB) << 20, MemoryCheck: h.MemoryCheck}
}

func holdStreamDuration(dst func(*HoldStreamConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.HoldStream) })
}

func holdStreamInt(dst func(*HoldStreamConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.HoldStream) }, min, max)
}

// holdStreamSettings are the holds stream's variables.
var holdStreamSettings = []setting{
	{name: "HOLDS_STREAM_PING", def: durStr(holdstream.DefaultPing), help: "interval of the ping event on /v1/holds/stream (a vanished client is noticed on this write)", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.Ping })},
	{name: "HOLDS_STREAM_RETRY", def: durStr(holdstream.DefaultRetry), help: "reconnect delay announced to stream clients (retry: hint)", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.Retry })},
	{name: "HOLDS_STREAM_LEASE_DEFAULT", def: durStr(holdstream.DefaultLease), help: "stream lifetime without leaseMs; the stream then ends with lease-expired", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.LeaseDefault })},
	{name: "HOLDS_STREAM_LEASE_MAX", def: durStr(holdstream.DefaultMaxLease), help: "longest stream lease; a larger leaseMs is clamped to it (as the original web holds service), and the init event's leaseMs says so", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.LeaseMax })},
	{name: "HOLDS_STREAM_WRITE_TIMEOUT", def: durStr(holdstream.DefaultWriteTimeout), help: "a stream write stalled this long (client not reading) ends it with send-failed", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.WriteTimeout })},
	{name: "HOLDS_STREAM_BUFFER", def: itoa(holdstream.DefaultBuffer), help: "events queued per stream; a client further behind is ended with send-failed and reconnects", apply: holdStreamInt(func(h *HoldStreamConfig) *int { return &h.Buffer }, 1, 100_000)},
	{name: "HOLDS_STREAM_HEAP_WARN_MB", def: itoa(holdstream.DefaultHeapWarn >> 20), help: "live heap (MB) above which a warning with the stream count is logged", apply: holdStreamInt(func(h *HoldStreamConfig) *int { return &h.HeapWarnMB }, 1, 1_000_000)},
	{name: "HOLDS_STREAM_RSS_WARN_MB", def: itoa(holdstream.DefaultRSSWarn >> 20), help: "resident memory (MB) above which a warning with the stream count is logged", apply: holdStreamInt(func(h *HoldStreamConfig) *int { return &h.RSSWarnMB }, 1, 1_000_000)},
	{name: "HOLDS_STREAM_SHARDS", def: "0", help: "parts each appointment type's streams are split into, written in parallel on an event (0: one per CPU, GOMAXPROCS)", apply: holdStreamInt(func(h *HoldStreamConfig) *int { return &h.Shards }, 0, 1024)},
	{name: "HOLDS_STREAM_RELEASE_BURST", def: itoa(holdstream.DefaultReleaseBurst), help: "after this many stream opens in a burst, the memory the burst used is returned to the OS once it is over (-1: never)", apply: holdStreamInt(func(h *HoldStreamConfig) *int { return &h.ReleaseBurst }, -1, 10_000_000)},
	{name: "HOLDS_STREAM_RELEASE_QUIET", def: durStr(holdstream.DefaultReleaseQuiet), help: "how long without a stream open ends a burst (see HOLDS_STREAM_RELEASE_BURST)", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.ReleaseQuiet })},
	{name: "HOLDS_STREAM_MEMORY_CHECK", def: durStr(holdstream.DefaultMemoryCheck), help: "how often the stream hub checks heap and resident memory", apply: holdStreamDuration(func(h *HoldStreamConfig) *time.Duration { return &h.MemoryCheck })},
}
