package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// pauseRedis stops the redis-server at addr with SIGSTOP (it keeps its
// connections open and answers nothing, like a hung server) and returns the
// function that resumes it; a cleanup resumes it in any case. The pid comes
// from INFO, so any private server of the test can be paused.
func pauseRedis(t *testing.T, addr string) (resume func()) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	require.NoError(t, err)
	pid := 0
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err = strconv.Atoi(v)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, pid, "INFO server names the process id")
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

// signedV1 and signedV2 sign a request the way a worker does (the seed's
// timestamp.body, and the route-bound version 2).
func signedV1(t *testing.T, secret, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	hmacsig.SignRequest(req, []byte(secret), time.Now(), []byte(body))
	return req
}

func signedV2(t *testing.T, secret, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	hmacsig.SignRequestV2(req, []byte(secret), time.Now(), []byte(body))
	return req
}

func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
