//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package taskhttp

import "net"

// peerGone cannot tell on this platform; long polls end at wait_ms or at
// shutdown only.
func peerGone(net.Conn) bool { return false }
