package test

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/flowgate/flowgate/test/flowgatetest"
)

// runBinary runs the binary to completion with one extra env entry.
func runBinary(t *testing.T, bin, env string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = flowgatetest.Env()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		t.Fatal(err)
	}
	return string(out), 0
}
