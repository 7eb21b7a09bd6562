//go:build linux

package flowgatetest

import "syscall"

// sysProcAttr kills the binary when the test process dies without running
// its cleanups (a -timeout panic, a SIGKILL), so no flowgate outlives it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
