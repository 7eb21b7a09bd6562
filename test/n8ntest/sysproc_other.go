//go:build !linux

package n8ntest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
