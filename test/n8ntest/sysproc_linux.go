//go:build linux

package n8ntest

import "syscall"

// sysProcAttr kills n8n when the test process dies without running
// its cleanups (a -timeout panic, a SIGKILL), so no n8n outlives it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
