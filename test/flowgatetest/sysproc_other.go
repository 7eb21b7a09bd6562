//go:build !linux

package flowgatetest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
