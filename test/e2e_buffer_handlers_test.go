package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// answering is an HTTP target that answers every POST with body.
func answering(t *testing.T, body string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// settled enqueues a message of typ and waits for it to complete.
func settled(t *testing.T, p *proc, typ string) contracts.BufferMessage {
	t.Helper()
	var e contracts.BufferEnqueueResponse
	require.Equal(t, http.StatusAccepted, bufferCall(t, p, "POST", "/api/buffer/enqueue",
		map[string]any{"type": typ, "payload": map[string]any{"to": "a@example.com"}}, &e))
	var m contracts.BufferMessage
	require.Eventually(t, func() bool {
		bufferCall(t, p, "GET", "/api/buffer/messages/"+e.MessageID, nil, &m)
		return m.State == contracts.BufferCompleted
	}, 15*time.Second, 50*time.Millisecond, "message of %s never completed: %+v", typ, m)
	return m
}

func handlersEnv(db *redistest.DB, file string) map[string]string {
	return map[string]string{"REDIS_URL": db.URL(), "HMAC_SECRET": "e2e-handlers-hmac-secret-0123456789",
		"BOOKING_AUTH_SECRET": "e2e-handlers-booking-secret-01234", "BUFFER_HANDLERS_FILE": file, "CLOUD9_SIMULATOR": "true"}
}

// A buffer message goes to a declared handler through the binary, and
// SIGHUP reloads the file: an invalid one is refused (the old one serves),
// a valid one swaps targets and adds types.
func TestDeclaredHandlersThroughBinaryAndSIGHUP(t *testing.T) {
	t.Parallel()
	one, two := answering(t, `{"from":"one"}`), answering(t, `{"from":"two"}`)
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o600)) }
	write(fmt.Sprintf("handlers:\n  - type: email.send\n    url: %s/email\n    timeout: 2s\n    maxRetries: 1\n", one.URL))
	p := startFlowgate(t, handlersEnv(redistest.New(t), file))

	m := settled(t, p, "email.send")
	require.JSONEq(t, `{"from":"one"}`, string(m.Result))

	hup := func(wait string, n int) {
		require.NoError(t, syscall.Kill(p.PID(), syscall.SIGHUP))
		require.Eventually(t, func() bool { return len(p.LogLines(wait)) >= n }, 10*time.Second, 20*time.Millisecond, "no %q in the logs", wait)
	}
	write("handlers:\n  - type: email.send\n    url: ftp://nowhere\n  - type: sse.emit\n    url: http://x/\n")
	hup("handlers file refused on reload", 1)
	refused := p.LogLines("handlers file refused on reload")[0]
	require.Contains(t, refused, "url must be an http(s) URL")
	require.Contains(t, refused, "built-in handler")
	m = settled(t, p, "email.send")
	require.JSONEq(t, `{"from":"one"}`, string(m.Result), "the old file still serves")

	write(fmt.Sprintf("handlers:\n  - type: email.send\n    url: %s/email\n  - type: metabot.forward\n    url: %s/metabot\n", two.URL, two.URL))
	hup("handlers file reloaded", 1)
	m = settled(t, p, "email.send")
	require.JSONEq(t, `{"from":"two"}`, string(m.Result))
	m = settled(t, p, "metabot.forward")
	require.JSONEq(t, `{"from":"two"}`, string(m.Result))
}

// An invalid file stops the start with every problem, one line each.
func TestInvalidHandlersFileRefusedAtStart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	require.NoError(t, os.WriteFile(file, []byte("handlers:\n  - type: noop\n    url: http://x/\n  - type: a\n    timeout: never\n"), 0o600))
	bin := flowgatetest.Binary(t) // may build it: before the deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(flowgatetest.Env(), "FLOWGATE_ADDR="+flowgatetest.FreeAddr(t), "BUFFER_API_TOKEN="+flowgatetest.TestBufferToken)
	for k, v := range handlersEnv(redistest.New(t), file) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "flowgate started with an invalid handlers file:\n%s", out)
	for _, want := range []string{
		file + `:2: type \"noop\" is a built-in handler's`,
		file + `:5: timeout must be a positive duration`,
		file + `:4: handler \"a\": url is required`,
	} {
		require.True(t, strings.Contains(string(out), want) || strings.Contains(string(out), strings.ReplaceAll(want, `\"`, `"`)), "want %s in:\n%s", want, out)
	}
}

// A type dropped from the file by a SIGHUP defers its messages (still
// pending, no attempt) for BUFFER_REMOVED_TYPE_GRACE; declared again by the
// next SIGHUP, they complete.
func TestRemovedTypeWaitsForItsReturnThroughBinary(t *testing.T) {
	t.Parallel()
	one := answering(t, `{"from":"one"}`)
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	write := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o600)) }
	with := fmt.Sprintf("handlers:\n  - type: email.send\n    url: %s/email\n  - type: other\n    url: %s/other\n", one.URL, one.URL)
	write(with)
	env := handlersEnv(redistest.New(t), file)
	env["BUFFER_REMOVED_TYPE_GRACE"] = "1m"
	p := startFlowgate(t, env)
	settled(t, p, "email.send")

	hup := func(n int) {
		require.NoError(t, syscall.Kill(p.PID(), syscall.SIGHUP))
		require.Eventually(t, func() bool { return len(p.LogLines("handlers file reloaded")) >= n }, 10*time.Second, 20*time.Millisecond)
	}
	write(fmt.Sprintf("handlers:\n  - type: other\n    url: %s/other\n", one.URL))
	hup(1)
	require.Contains(t, p.LogLines("handlers file reloaded")[0], "email.send", "the reload names the removed type")
	var ids []string
	for range 5 {
		var e contracts.BufferEnqueueResponse
		require.Equal(t, http.StatusAccepted, bufferCall(t, p, "POST", "/api/buffer/enqueue",
			map[string]any{"type": "email.send", "payload": map[string]any{"to": "b@example.com"}}, &e))
		ids = append(ids, e.MessageID)
	}
	time.Sleep(1500 * time.Millisecond) // each dequeued and deferred
	for _, id := range ids {
		var m contracts.BufferMessage
		require.Equal(t, http.StatusOK, bufferCall(t, p, "GET", "/api/buffer/messages/"+id, nil, &m))
		require.Equal(t, contracts.BufferPending, m.State, id)
		require.Zero(t, m.AttemptCount)
	}
	write(with)
	hup(2)
	for _, id := range ids {
		var m contracts.BufferMessage
		require.Eventually(t, func() bool {
			bufferCall(t, p, "GET", "/api/buffer/messages/"+id, nil, &m)
			return m.State == contracts.BufferCompleted
		}, 15*time.Second, 50*time.Millisecond, "%s never completed: %+v", id, m)
		require.Equal(t, 1, m.AttemptCount)
	}
}

// A handlers file over 1 MiB stops the start with its size.
func TestOversizedHandlersFileRefusedAtStart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	require.NoError(t, os.WriteFile(file, []byte("handlers:\n"+strings.Repeat("#\n", 1<<19)), 0o600))
	bin := flowgatetest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(flowgatetest.Env(), "FLOWGATE_ADDR="+flowgatetest.FreeAddr(t), "BUFFER_API_TOKEN="+flowgatetest.TestBufferToken)
	for k, v := range handlersEnv(redistest.New(t), file) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "flowgate started with a 1 MiB+ handlers file:\n%s", out)
	require.Contains(t, string(out), "the file is 1048586 bytes, over 1048576 (1 MiB)")
}
