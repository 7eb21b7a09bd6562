//go:build linux

package rediscluster

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
