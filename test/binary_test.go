package test

import (
	"testing"

	"github.com/flowgate/flowgate/test/flowgatetest"
)

// proc is a running flowgate binary (see flowgatetest).
type proc = flowgatetest.Proc

// startFlowgate runs the binary with env and waits until it is ready.
func startFlowgate(t *testing.T, env map[string]string) *proc { return flowgatetest.Start(t, env) }

func flowgateBinary(t *testing.T) string { return flowgatetest.Binary(t) }

func freeAddr(t *testing.T) string { return flowgatetest.FreeAddr(t) }
