package main

import (
	"time"

	"github.com/flowgate/flowgate/orchestrator/shadow"
)

// ShadowConfig holds the shadow mode's settings (shadow.go): when the
// /switch-over verdict says ready, and how long the records live.
type ShadowConfig struct {
	ReadyMinCalls int
	ReadyWindow   int
	Retention     time.Duration
}

func shadowInt(dst func(*ShadowConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.Shadow) }, min, max)
}

// shadowSettings are the shadow mode's variables.
var shadowSettings = []setting{
	{name: "SHADOW_READY_MIN_CALLS", def: itoa(shadow.DefaultReadyMinCalls), help: "compared calls an endpoint needs before /switch-over can call it ready",
		apply: shadowInt(func(s *ShadowConfig) *int { return &s.ReadyMinCalls }, 1, 10_000_000)},
	{name: "SHADOW_READY_WINDOW", def: itoa(shadow.DefaultReadyWindow), help: "the last this many comparisons per endpoint are kept (paths and classes only) and must hold no missing key path and no type mismatch for ready",
		apply: shadowInt(func(s *ShadowConfig) *int { return &s.ReadyWindow }, 1, 10_000)},
	{name: "SHADOW_RETENTION", def: durStr(shadow.DefaultRetention), help: "the shadow records (flowgate:shadow:…) expire this long after an endpoint's last comparison",
		apply: duration(func(c *Config) *time.Duration { return &c.Shadow.Retention })},
}
