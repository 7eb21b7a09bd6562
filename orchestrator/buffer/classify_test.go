package buffer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// TestRetryableNetworkErrors: real network failures are retried with the
// seed's codes.
func TestRetryableNetworkErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, refused := http.Get("http://" + addr + "/")
	require.True(t, buffer.Retryable(refused))
	require.Equal(t, "ECONNREFUSED", buffer.ErrorCode(refused))

	_, dns := net.DefaultResolver.LookupHost(context.Background(), "no-such-host.invalid")
	require.True(t, buffer.Retryable(dns))
	require.Equal(t, "ENOTFOUND", buffer.ErrorCode(dns))

	for _, e := range []error{fmt.Errorf("read: %w", syscall.ECONNRESET), os.ErrDeadlineExceeded, context.DeadlineExceeded} {
		require.True(t, buffer.Retryable(e), "%v", e)
	}
	require.Equal(t, "ECONNRESET", buffer.ErrorCode(fmt.Errorf("x: %w", syscall.ECONNRESET)))
	coded := &buffer.CodedError{Code: "QUOTA", Retry: false, Err: errors.New("over quota")}
	require.False(t, buffer.Retryable(coded))
	require.Equal(t, "QUOTA", buffer.ErrorCode(coded))
}

// TestBackoff is the seed's table: 1, 2, 4, 8, 16, 32, then 60 s.
func TestBackoff(t *testing.T) {
	b := buffer.Backoff{Base: buffer.DefaultBackoffBase, Multiplier: buffer.DefaultBackoffMultiplier, Max: buffer.DefaultBackoffMax}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for n, w := range want {
		require.Equal(t, w*time.Second, b.Delay(n), "retry %d", n+1)
		require.Equal(t, w*time.Second, b.RetryDelay(n, nil, nil))
	}
	require.Equal(t, time.Second, b.Delay(-1))
	require.Equal(t, 60*time.Second, b.Delay(1000))
}

// TestRetryableStatuses: 5xx, 429 and 408 are retried; other 4xx and
// every 3xx (a redirect flowgate does not follow) are not, and a 3xx says
// where it pointed.
func TestRetryableStatuses(t *testing.T) {
	for status, want := range map[int]bool{500: true, 503: true, 429: true, 408: true, 400: false, 404: false, 422: false,
		301: false, 302: false, 303: false, 307: false, 308: false} {
		se := &buffer.StatusError{StatusCode: status}
		require.Equal(t, want, buffer.Retryable(fmt.Errorf("wrapped: %w", se)), "HTTP %d", status)
		require.Equal(t, fmt.Sprintf("HTTP_%d", status), buffer.ErrorCode(se))
	}
	se := &buffer.StatusError{StatusCode: 302, Location: "https://elsewhere.example/x", Body: "Found"}
	require.Equal(t, `downstream answered HTTP 302, a redirect to "https://elsewhere.example/x" (not followed): Found`, se.Error())
	require.Equal(t, "downstream answered HTTP 503: busy", (&buffer.StatusError{StatusCode: 503, Body: "busy"}).Error())
}
