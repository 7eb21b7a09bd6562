//go:build linux

package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// rawFanoutEnv makes the test binary a raw fan-out server (the helper
// process of rawFanout) instead of running tests.
const rawFanoutEnv = "FLOWGATE_RAW_FANOUT_HELPER"

// TestRawFanoutHelper is not a test: run by rawFanout as a separate
// process (so its sockets and CPU are not the clients'), it is the least a
// server can do to deliver an event to every stream, flowgate's fan-out
// without flowgate. It prints its address, answers every connection with
// the response head and a "connected" event, and for each line on stdin
// (a publish time in ns) writes one chunk framing a hold event of the
// holds stream's size (sse.AppendChunk, flowgate's framing) to every connection, from one goroutine per core
// as flowgate's fan-out shards do. It ends when stdin closes.
func TestRawFanoutHelper(t *testing.T) {
	if os.Getenv(rawFanoutEnv) != "1" {
		t.Skip("helper process of TestLoadHoldsSSE10kStreams")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fmt.Println(ln.Addr().String())
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The connection joins the fan-out before its client can read
			// "connected" (under the lock the fan-out snapshots conns with):
			// the clients publish once every stream said connected, and a
			// connection appended after its write could miss the first event.
			mu.Lock()
			_, err = c.Write(sse.AppendChunk([]byte(head), sse.Event{Data: []byte(`{"type":"connected","connectionId":"raw"}`)}))
			if err == nil {
				conns = append(conns, c)
			}
			mu.Unlock()
			if err != nil {
				c.Close()
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		frame := sse.AppendChunk(nil, sse.Event{Data: []byte(`{"type":"hold","holdId":"ref-0123456789abcdef0123456789abcdef","appointmentTypeId":"sse-load-0000000000000000000","specialistId":"` +
			strings.TrimSpace(in.Text()) + `","slotStartDate":"2026-11-24T15:00:00Z","slotEndDate":"2026-11-24T15:30:00Z","holdExpiresAt":"2026-11-24T15:00:30Z","face":"web","isOwnHold":false}`)})
		mu.Lock()
		all := conns
		mu.Unlock()
		shards := runtime.NumCPU()
		var wg sync.WaitGroup
		for s := range shards {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := s; i < len(all); i += shards {
					_, _ = all[i].Write(frame)
				}
			}()
		}
		wg.Wait()
	}
}

// rawFanout measures the raw fan-out server (TestRawFanoutHelper, a
// separate process) with the same n clients and events as the flowgate
// phase: the delivery latency this machine allows at all.
func rawFanout(t *testing.T, n, events int, gap time.Duration) []time.Duration {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRawFanoutHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), rawFanoutEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	require.True(t, out.Scan(), "helper address")
	addr := strings.TrimSpace(out.Text())
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	lats, closeStreams := deliveries{addr: addr, n: n, events: events, gap: gap,
		query: func(int) string { return "raw=1" },
		publish: func(ns int64) error {
			_, err := fmt.Fprintf(stdin, "%d\n", ns)
			return err
		},
	}.run(t)
	closeStreams() // before stdin closes: the helper's writes then fail rather than block
	return lats
}
