package asynqrt_test

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// Every queue flowgate creates passes ValidQueueName (Asynqmon's routes
// refuse the rest); what is a path segment, a hash tag, an Asynqmon action
// or blank does not.
func TestValidQueueName(t *testing.T) {
	var ours []string
	for q := range asynqrt.DefaultQueues() {
		ours = append(ours, q)
	}
	for _, q := range append(ours, buffer.Queues()...) {
		if !asynqrt.ValidQueueName(q) {
			t.Errorf("flowgate's own queue %q refused", q)
		}
	}
	for _, q := range []string{"", ".", "..", "...", ".hidden", "-x", "_x", "{low}", "low}", "a b", " low", "low\n",
		"low:pause", "a/b", `a\b`, "a%2F", "café", strings.Repeat("q", 129)} {
		if asynqrt.ValidQueueName(q) {
			t.Errorf("%q accepted", q)
		}
	}
	if !asynqrt.ValidQueueName(strings.Repeat("q", 128)) {
		t.Error("a 128-character name refused")
	}
}
