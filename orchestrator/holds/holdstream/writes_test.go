package holdstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// rawStream is a stream read over raw TCP, chunk by chunk: every chunk must
// be exactly one whole SSE frame (what the hub writes), so two writes that
// interleaved on the connection fail the parse.
type rawStream struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialStream(t *testing.T, in *instance, query string) *rawStream {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "GET /v1/holds/stream?%s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n", query)
	require.NoError(t, err)
	s := &rawStream{conn: conn, r: bufio.NewReader(conn)}
	status, err := s.r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 OK\r\n", status)
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			return s
		}
	}
}

var (
	retryFrame = regexp.MustCompile(`^retry: \d+\n\n$`)
	errEnded   = errors.New("last chunk: the response ended")
)

// frame reads one chunk and checks it is one whole frame; a data frame is
// answered decoded, the retry hint as nil. errEnded: the last chunk came.
func (s *rawStream) frame() (map[string]any, error) {
	size, err := s.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(size, "\r\n"), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("chunk size line %q: %w", size, err)
	}
	if n == 0 {
		if _, err := s.r.ReadString('\n'); err != nil {
			return nil, err
		}
		return nil, errEnded
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, err
	}
	if string(b[n:]) != "\r\n" {
		return nil, fmt.Errorf("chunk not followed by CRLF: %q", b)
	}
	f := string(b[:n])
	if retryFrame.MatchString(f) {
		return nil, nil
	}
	data, ok := strings.CutPrefix(f, "data: ")
	if !ok || !strings.HasSuffix(data, "\n\n") || strings.Count(data, "\n") != 2 {
		return nil, fmt.Errorf("chunk is not one SSE frame: %q", f)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSuffix(data, "\n\n")), &m); err != nil {
		return nil, fmt.Errorf("frame data is not JSON (%w): %q", err, f)
	}
	return m, nil
}

// until reads frames (every one checked) until an event of type typ.
func (s *rawStream) until(t *testing.T, typ string) map[string]any {
	t.Helper()
	require.NoError(t, s.conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		m, err := s.frame()
		require.NoError(t, err)
		if m != nil && m["type"] == typ {
			return m
		}
	}
}

// TestSlowClientEndsWithSendFailedWhileOthersReceive: a client that stops
// reading fills its socket buffers; the hub queues for it, gives up with
// send-failed (queue over Buffer, or the write stalled for WriteTimeout)
// and closes it, while a reading client gets every event.
func TestSlowClientEndsWithSendFailedWhileOthersReceive(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) {
		c.Ping, c.WriteTimeout, c.Buffer = time.Hour, 300*time.Millisecond, 4
	})
	slow := dialStream(t, in, "appointmentTypeId=type1&clientId=slow")
	slow.until(t, "connected") // and reads nothing more
	fast := dialStream(t, in, "appointmentTypeId=type1&clientId=fast")
	fast.until(t, "connected")
	got := make(chan string, 1)
	go func() {
		defer close(got)
		_ = fast.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			m, err := fast.frame()
			if err != nil {
				got <- err.Error()
				return
			}
			if m != nil && m["holdId"] == ref("last") {
				got <- "last"
				return
			}
		}
	}()

	deadline := time.Now().Add(15 * time.Second)
	for metric(t, in.reg, "holdstream_streams_ended_total", map[string]string{"reason": holdstream.ReasonSendFailed}) == 0 {
		require.True(t, time.Now().Before(deadline), "the slow client was never given up on")
		publishBig(t, e)
		time.Sleep(20 * time.Millisecond) // paces the publishing; publishBig fails t, so no require.Eventually
	}
	e.engine.publish(t, holdstream.TypeHold, hold("last", "bob", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	select {
	case r := <-got:
		require.Equal(t, "last", r, "the reading client gets every event")
	case <-time.After(10 * time.Second):
		t.Fatal("the reading client did not get the last event")
	}
	require.Eventually(t, func() bool { return in.hub.Streams() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1, metric(t, in.reg, "holdstream_streams", map[string]string{"appointment_type_id": "type1"}))

	// What the slow client still has to read is whole frames, then the close.
	require.NoError(t, slow.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	for {
		m, err := slow.frame()
		if err != nil {
			require.True(t, errors.Is(err, io.EOF) || errors.Is(err, errEnded) || errors.Is(err, io.ErrUnexpectedEOF) ||
				strings.Contains(err.Error(), "reset"), "the slow client's connection is closed: %v", err)
			break
		}
		if m != nil {
			require.NotEqual(t, ref("last"), m["holdId"], "nothing is written after the stream gave up")
		}
	}
}

// TestClientGoneDetectedOnNextEventWrite: a client that vanished (RST)
// is noticed on the next event written to it (no ping needed): the stream
// ends with client-abort and the hub forgets it; another stream of the
// type gets the event.
func TestClientGoneDetectedOnNextEventWrite(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) { c.Ping = time.Hour })
	ghost := dialStream(t, in, "appointmentTypeId=type1&clientId=ghost")
	ghost.until(t, "connected")
	bob := dialStream(t, in, "appointmentTypeId=type1&clientId=bob")
	bob.until(t, "connected")
	require.Equal(t, 2, in.hub.Streams())
	require.NoError(t, ghost.conn.(*net.TCPConn).SetLinger(0))
	require.NoError(t, ghost.conn.Close())
	require.Never(t, func() bool { return in.hub.Streams() != 2 }, 50*time.Millisecond, 5*time.Millisecond,
		"nothing notices before a write (while the RST reaches the server's socket)")
	require.Equal(t, 2, in.hub.Streams(), "nothing notices before a write")

	e.engine.publish(t, holdstream.TypeHold, hold("h1", "carol", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	require.Equal(t, ref("h1"), bob.until(t, "hold")["holdId"])
	require.Eventually(t, func() bool { return in.hub.Streams() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1, metric(t, in.reg, "holdstream_streams_ended_total", map[string]string{"reason": holdstream.ReasonClientAbort}))
}

// TestEventsDuringInitArriveInOrderAfterSnapshot: events published while
// the snapshot is being read queue up and follow "connected", in order.
func TestEventsDuringInitArriveInOrderAfterSnapshot(t *testing.T) {
	e := newEnv(t)
	e.engine.add(hold("h1", "alice", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	e.engine.entered, e.engine.gate = make(chan struct{}, 1), make(chan struct{})
	in := e.instance(t, nil)
	c := in.open(t, "appointmentTypeId=type1&clientId=alice")
	<-e.engine.entered // subscribed, reading the snapshot
	e.engine.publish(t, holdstream.TypeHold, hold("h2", "bob", "type1", "spec2", t0, time.Now().Add(time.Minute)))
	e.engine.publish(t, holdstream.TypeHold, hold("h3", "alice", "type1", "spec3", t0, time.Now().Add(time.Minute)))
	e.engine.publish(t, holdstream.TypeRelease, hold("h2", "bob", "type1", "spec2", t0, time.Now().Add(time.Minute)))
	time.Sleep(200 * time.Millisecond) // the events reach the hub and queue behind the snapshot
	close(e.engine.gate)

	var got []string
	for len(got) < 6 {
		m := c.next(t)
		got = append(got, fmt.Sprint(m["type"], " ", m["holdId"]))
	}
	require.Equal(t, []string{"init <nil>", "hold " + ref("h1"), "connected <nil>", "hold " + ref("h2"), "hold " + ref("h3"), "release " + ref("h2")}, got)
}

// TestStreamOutlivesWriteTimeout: the write deadline of a blocking write
// is cleared after it, so the non-blocking writes of a stream older than
// WriteTimeout still go out.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) { c.WriteTimeout = 100 * time.Millisecond; c.Ping = 30 * time.Millisecond })
	c := dialStream(t, in, "appointmentTypeId=type1&clientId=alice")
	c.until(t, "connected")
	time.Sleep(300 * time.Millisecond) // under test: the stream outlives WriteTimeout in real time
	e.engine.publish(t, holdstream.TypeHold, hold("h1", "bob", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	require.Equal(t, ref("h1"), c.until(t, "hold")["holdId"])
	require.Equal(t, 1, in.hub.Streams())
}

// TestConnectionCloseRequestRefused: fasthttp never hands a connection the
// client asked to close to the stream, so such a request is refused (400)
// before a stream is opened.
func TestConnectionCloseRequestRefused(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /v1/holds/stream?appointmentTypeId=type1&clientId=alice HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var body struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "Connection", body.Error.Details["field"])
	require.Zero(t, in.hub.Streams())
}

// TestWritesNeverInterleave: streams get events from the fan-out, pings
// every 2 ms, short leases ending some and a shutdown ending the rest, all
// at once; every chunk each client reads is one whole frame, the end event
// (when a stream ends with one) is the last, and the race detector sees
// every write to a connection made by one goroutine at a time.
func TestWritesNeverInterleave(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) {
		c.Ping, c.MinLease, c.Buffer = 2*time.Millisecond, 10*time.Millisecond, 256
	})
	const n = 24
	streams := make([]*rawStream, n)
	for i := range streams {
		lease := ""
		if i%2 == 0 {
			lease = fmt.Sprintf("&leaseMs=%d", 150+10*i)
		}
		streams[i] = dialStream(t, in, fmt.Sprintf("appointmentTypeId=type%d&clientId=c%d%s", i%3, i, lease))
		streams[i].until(t, "connected")
	}
	stop := make(chan struct{})
	var published sync.WaitGroup
	published.Add(1)
	go func() { // the fan-out: events on every type as fast as Redis takes them
		defer published.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b, _ := json.Marshal(holdstream.Event{Type: holdstream.TypeHold, Hold: hold(fmt.Sprint("h", i), fmt.Sprint("c", i%n), fmt.Sprint("type", i%3), "spec1", t0, time.Now().Add(time.Minute))})
			_ = e.db.Client.Publish(context.Background(), e.prefix+"holds:events:"+fmt.Sprint("type", i%3), b).Err()
			time.Sleep(200 * time.Microsecond) // paces the load
		}
	}()
	var read sync.WaitGroup
	ends := make([]string, n)
	errs := make([]error, n)
	for i, s := range streams {
		read.Add(1)
		go func() {
			defer read.Done()
			_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				m, err := s.frame()
				if err != nil {
					if !errors.Is(err, errEnded) {
						errs[i] = err
					}
					return
				}
				if ends[i] != "" {
					errs[i] = fmt.Errorf("a frame after the end event: %v", m)
					return
				}
				if m != nil && m["type"] == "end" {
					ends[i] = m["reason"].(string)
				}
			}
		}()
	}
	time.Sleep(250 * time.Millisecond) // some leases have run out
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, in.hub.Shutdown(ctx))
	close(stop)
	published.Wait()
	read.Wait()
	leased := 0
	for i := range streams {
		require.NoError(t, errs[i], "stream %d", i)
		require.Contains(t, []string{holdstream.ReasonLeaseExpired, holdstream.ReasonServerShutdown}, ends[i], "stream %d", i)
		if ends[i] == holdstream.ReasonLeaseExpired {
			require.Zero(t, i%2, "only leased streams expire")
			leased++
		}
	}
	require.Positive(t, leased, "some leases ran out before the shutdown")
	require.Zero(t, in.hub.Streams())
}

// TestPingsSpreadOverTheInterval: with a 1 s ping the streams are pinged
// in 4 groups a quarter second apart, each stream once per interval, not
// all at the same instant.
func TestPingsSpreadOverTheInterval(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) { c.Ping = time.Second })
	const n = 8
	first := make(chan time.Time, n)
	for i := range n {
		c := dialStream(t, in, fmt.Sprintf("appointmentTypeId=type1&clientId=c%d", i))
		c.until(t, "connected")
		go func() {
			_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			pings := 0
			for pings < 2 {
				m, err := c.frame()
				if err != nil {
					return
				}
				if m != nil && m["type"] == "ping" {
					if pings++; pings == 1 {
						first <- time.Now()
					}
				}
			}
		}()
	}
	var lo, hi time.Time
	for range n {
		select {
		case at := <-first:
			if lo.IsZero() || at.Before(lo) {
				lo = at
			}
			if at.After(hi) {
				hi = at
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a stream got no ping within 3 s")
		}
	}
	require.Greater(t, hi.Sub(lo), 400*time.Millisecond, "the first pings are spread over the interval")
	require.Less(t, hi.Sub(lo), 1100*time.Millisecond, "every stream is pinged within one interval")
}

// TestShutdownAbortsASlowClientsDrain: a stream draining to a client that
// stopped reading would hold its write for WriteTimeout (here a minute);
// once Shutdown's wait runs out the write is aborted and the stream ends.
func TestShutdownAbortsASlowClientsDrain(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) {
		c.Ping, c.WriteTimeout, c.Buffer = time.Hour, time.Minute, 1<<20
	})
	slow := dialStream(t, in, "appointmentTypeId=type1&clientId=slow")
	slow.until(t, "connected") // and reads nothing more
	// 40 × 800 KB = 32 MB: more than the sockets buffer, the rest is pending.
	for range 40 {
		publishBig(t, e)
	}
	time.Sleep(500 * time.Millisecond) // the fan-out is behind the socket: the drain holds a write
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := in.hub.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the slow stream was still draining")
	require.Eventually(t, func() bool { return in.hub.Streams() == 0 }, 3*time.Second, 10*time.Millisecond,
		"the aborted drain ends the stream, not the one-minute write timeout")
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestPanicEndsOneStreamNotTheProcess: a panic while writing to one stream
// (here the clock, read for the ping) ends that stream with "unknown";
// the hub goes on serving.
func TestPanicEndsOneStreamNotTheProcess(t *testing.T) {
	e := newEnv(t)
	var boom atomic.Bool
	in := e.instance(t, func(c *holdstream.Config) {
		c.Ping = 100 * time.Millisecond
		c.Now = func() time.Time {
			if boom.Load() {
				panic("clock broke")
			}
			return time.Now()
		}
	})
	s := dialStream(t, in, "appointmentTypeId=type1&clientId=victim")
	s.until(t, "connected")
	boom.Store(true)
	require.Eventually(t, func() bool {
		return metric(t, in.reg, "holdstream_streams_ended_total", map[string]string{"reason": holdstream.ReasonUnknown}) == 1
	}, 5*time.Second, 10*time.Millisecond, "the stream whose ping panicked ended with unknown")
	require.Equal(t, holdstream.ReasonUnknown, s.until(t, "end")["reason"])
	boom.Store(false)
	next := dialStream(t, in, "appointmentTypeId=type1&clientId=next")
	next.until(t, "connected")
	require.Equal(t, 1, in.hub.Streams())
}

// publishBig publishes 100 hold events of type1 with 8 KB specialist ids
// (800 KB: a client that does not read fills its socket buffers fast).
func publishBig(t *testing.T, e *env) {
	t.Helper()
	big := strings.Repeat("s", 8<<10)
	pipe := e.db.Client.Pipeline()
	for i := range 100 {
		b, _ := json.Marshal(holdstream.Event{Type: holdstream.TypeHold, Hold: hold(fmt.Sprint("h", i), "bob", "type1", big, t0, time.Now().Add(time.Minute))})
		pipe.Publish(context.Background(), e.prefix+"holds:events:type1", b)
	}
	_, err := pipe.Exec(context.Background())
	require.NoError(t, err)
}
