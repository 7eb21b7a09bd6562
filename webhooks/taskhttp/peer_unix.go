//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package taskhttp

import (
	"errors"
	"net"
	"syscall"
)

// peerGone reports whether the client at the other end of conn has closed
// or reset the connection. It peeks (MSG_PEEK|MSG_DONTWAIT) at the socket,
// so no byte is taken from fasthttp's reader: pending data (a pipelined
// request) means the client is there, an orderly end of stream or a reset
// means it is gone. Connections that are not sockets (app.Test's pipes)
// are never reported gone. TLS connections are looked through.
func peerGone(conn net.Conn) bool {
	if u, ok := conn.(interface{ NetConn() net.Conn }); ok {
		conn = u.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		buf  [1]byte
		n    int
		rerr error
	)
	if err := raw.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readability
	}); err != nil {
		return false // e.g. the read deadline passed: unknown, not gone
	}
	switch {
	case rerr == nil:
		return n == 0 // 0 bytes without error: end of stream
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EWOULDBLOCK), errors.Is(rerr, syscall.EINTR):
		return false // open, nothing to read
	default:
		return true // ECONNRESET and friends
	}
}
