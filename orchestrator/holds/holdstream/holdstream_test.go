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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

var t0 = time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)

// metric is the value of a series of reg whose labels include want.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestStreamProtocol follows the seed's lifecycle on one stream: the four
// headers, retry 5000, init, snapshot with isOwnHold (an expired hold as
// release), connected, pings, forwarded events (a heartbeat only to its
// owner), and the lease ending the stream with lease-expired.
func TestStreamProtocol(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.engine.add(hold("h1", "alice", "type1", "spec1", t0, now.Add(30*time.Second)))
	e.engine.add(hold("h2", "bob", "type1", "spec2", t0, now.Add(30*time.Second)))
	e.engine.add(hold("h3", "bob", "type1", "spec1", t0.Add(time.Hour), now.Add(-time.Second)))
	in := e.instance(t, nil)

	alice := in.open(t, "appointmentTypeId=type1&clientId=alice&leaseMs=1500")
	require.Equal(t, sse.ContentType, alice.resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache, no-transform", alice.resp.Header.Get("Cache-Control"))
	require.Equal(t, "keep-alive", alice.resp.Header.Get("Connection"))
	require.Equal(t, "no", alice.resp.Header.Get("X-Accel-Buffering"))

	init := alice.next(t)
	require.Equal(t, "init", init["type"])
	require.NotEmpty(t, init["connectionId"])
	require.EqualValues(t, 1500, init["leaseMs"])
	snap := []map[string]any{alice.next(t), alice.next(t), alice.next(t)}
	require.Equal(t, map[string]any{"type": "hold", "holdId": ref("h1"), "isOwnHold": true}, pick(snap[0], "type", "holdId", "isOwnHold"))
	require.Equal(t, map[string]any{"type": "hold", "holdId": ref("h2"), "isOwnHold": false}, pick(snap[1], "type", "holdId", "isOwnHold"))
	require.Equal(t, map[string]any{"type": "release", "holdId": ref("h3"), "isOwnHold": false}, pick(snap[2], "type", "holdId", "isOwnHold"))
	connected := alice.next(t)
	require.Equal(t, "connected", connected["type"])
	require.Equal(t, init["connectionId"], connected["connectionId"])
	alice.mu.Lock()
	require.Equal(t, "retry: 5000", alice.lines[0], "the retry hint comes first")
	alice.mu.Unlock()

	bob := in.open(t, "appointmentTypeId=type1&clientId=bob&leaseMs=5000")
	bob.until(t, "connected")
	require.EqualValues(t, 2, metric(t, in.reg, "holdstream_streams", map[string]string{"appointment_type_id": "type1"}))

	e.engine.publish(t, holdstream.TypeHeartbeat, hold("h2", "bob", "type1", "spec2", t0, now.Add(time.Minute)))
	e.engine.publish(t, holdstream.TypeHold, hold("h4", "bob", "type1", "spec3", t0, now.Add(time.Minute)))
	e.engine.publish(t, holdstream.TypeConfirm, hold("h1", "alice", "type1", "spec1", t0, now.Add(time.Minute)))
	e.engine.publish(t, holdstream.TypeHold, hold("h9", "carol", "type2", "spec1", t0, now.Add(time.Minute))) // another type

	require.Equal(t, map[string]any{"type": "hold", "holdId": ref("h4"), "isOwnHold": false, "specialistId": "spec3"},
		pick(alice.next(t), "type", "holdId", "isOwnHold", "specialistId"), "bob's heartbeat is not forwarded to alice")
	require.Equal(t, map[string]any{"type": "confirm", "holdId": ref("h1"), "isOwnHold": true}, pick(alice.next(t), "type", "holdId", "isOwnHold"))
	require.Equal(t, map[string]any{"type": "heartbeat", "holdId": ref("h2"), "isOwnHold": true}, pick(bob.next(t), "type", "holdId", "isOwnHold"))
	require.Equal(t, map[string]any{"type": "hold", "holdId": ref("h4"), "isOwnHold": true}, pick(bob.next(t), "type", "holdId", "isOwnHold"))
	require.Equal(t, map[string]any{"type": "confirm", "holdId": ref("h1"), "isOwnHold": false}, pick(bob.next(t), "type", "holdId", "isOwnHold"))

	end := alice.next(t)
	require.Equal(t, map[string]any{"type": "end", "reason": holdstream.ReasonLeaseExpired}, pick(end, "type", "reason"))
	alice.closed(t)
	alice.mu.Lock()
	pings := 0
	for _, l := range alice.lines {
		if strings.Contains(l, `"type":"ping"`) {
			pings++
		}
	}
	alice.mu.Unlock()
	require.GreaterOrEqual(t, pings, 5, "pings every 100ms over a 1.5s lease")
	require.Eventually(t, func() bool {
		return metric(t, in.reg, "holdstream_streams_ended_total", map[string]string{"reason": holdstream.ReasonLeaseExpired}) == 1
	}, 3*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1, metric(t, in.reg, "holdstream_streams", map[string]string{"appointment_type_id": "type1"}))
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// TestHoldOnOneInstanceReachesStreamsOnAnother: two hubs on one Redis; an
// event the engine publishes (as instance A's engine does on a hold)
// reaches streams on both, and each instance keeps ONE subscription per
// appointment type however many streams it serves.
func TestHoldOnOneInstanceReachesStreamsOnAnother(t *testing.T) {
	e := newEnv(t)
	a, b := e.instance(t, nil), e.instance(t, nil)
	var onA, onB []*client
	for i := range 3 {
		c := a.open(t, fmt.Sprintf("appointmentTypeId=type1&clientId=a%d", i))
		c.until(t, "connected")
		onA = append(onA, c)
	}
	for i := range 2 {
		c := b.open(t, fmt.Sprintf("appointmentTypeId=type1&clientId=b%d", i))
		c.until(t, "connected")
		onB = append(onB, c)
	}
	n, err := e.db.Client.PubSubNumSub(context.Background(), e.prefix+"holds:events:type1").Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n[e.prefix+"holds:events:type1"], "one subscription per type per instance")

	e.engine.publish(t, holdstream.TypeHold, hold("h1", "a0", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	for i, c := range append(onA, onB...) {
		got := c.until(t, "hold")
		require.Equal(t, ref("h1"), got["holdId"])
		require.Equal(t, i == 0, got["isOwnHold"])
	}

	for _, c := range onB {
		require.NoError(t, c.resp.Body.Close())
	}
	require.Eventually(t, func() bool {
		n, err := e.db.Client.PubSubNumSub(context.Background(), e.prefix+"holds:events:type1").Result()
		return err == nil && n[e.prefix+"holds:events:type1"] == 1
	}, 5*time.Second, 20*time.Millisecond, "B's last stream gone (noticed on a ping): B unsubscribes")
}

// TestExpiredHoldReachesStreamsAsRelease: the engine publishes a release
// when a hold expires; streams forward it (isOwnHold per client).
func TestExpiredHoldReachesStreamsAsRelease(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, nil)
	c := in.open(t, "appointmentTypeId=type1&clientId=alice")
	c.until(t, "connected")
	expired := hold("h1", "bob", "type1", "spec1", t0, time.Now().Add(-time.Millisecond))
	e.engine.publish(t, holdstream.TypeRelease, expired)
	got := c.until(t, "release")
	require.Equal(t, map[string]any{"holdId": ref("h1"), "specialistId": "spec1", "slotStartDate": "2026-11-23T15:00:00Z", "isOwnHold": false},
		pick(got, "holdId", "specialistId", "slotStartDate", "isOwnHold"))
}

// TestDedupReplacesOldStream: a second stream of a client, on the same or
// another instance, ends the first with "replaced".
func TestDedupReplacesOldStream(t *testing.T) {
	e := newEnv(t)
	a, b := e.instance(t, nil), e.instance(t, nil)
	first := a.open(t, "appointmentTypeId=type1&clientId=alice")
	firstID := first.until(t, "connected")["connectionId"]
	second := a.open(t, "appointmentTypeId=type1&clientId=alice")
	require.Equal(t, map[string]any{"type": "end", "reason": "replaced", "connectionId": firstID}, pick(first.until(t, "end"), "type", "reason", "connectionId"))
	first.closed(t)
	second.until(t, "connected")

	third := b.open(t, "appointmentTypeId=type2&clientId=alice") // another instance, another type
	require.Equal(t, "replaced", second.until(t, "end")["reason"])
	second.closed(t)
	third.until(t, "connected")
	e.engine.publish(t, holdstream.TypeHold, hold("h1", "bob", "type2", "spec1", t0, time.Now().Add(time.Minute)))
	require.Equal(t, ref("h1"), third.until(t, "hold")["holdId"], "the newest stream stays")
	require.Equal(t, 0, a.hub.Streams())
}

// TestConcurrentOpensOfOneClientLeaveOne: 20 streams of one client opened
// at once on two instances: exactly one is left open.
func TestConcurrentOpensOfOneClientLeaveOne(t *testing.T) {
	e := newEnv(t)
	ins := []*instance{e.instance(t, nil), e.instance(t, nil)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(ins[i%2].base + "/v1/holds/stream?appointmentTypeId=type1&clientId=alice")
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { _ = resp.Body.Close() })
			go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return ins[0].hub.Streams()+ins[1].hub.Streams() == 1 }, 5*time.Second, 20*time.Millisecond)
	require.Never(t, func() bool { return ins[0].hub.Streams()+ins[1].hub.Streams() != 1 }, 300*time.Millisecond, 20*time.Millisecond,
		"something ended the survivor")
	require.Equal(t, 1, ins[0].hub.Streams()+ins[1].hub.Streams())
}

// TestVanishedClientDetectedOnPingWrite: a raw TCP client reads up to
// "connected" and disappears without a word; fasthttp only notices on a
// write, so the next pings fail, the stream ends with client-abort and the
// hub forgets it (gauge, subscription).
func TestVanishedClientDetectedOnPingWrite(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) { c.Ping = 50 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "GET /v1/holds/stream?appointmentTypeId=type1&clientId=ghost HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if strings.Contains(line, `"type":"connected"`) {
			break
		}
	}
	require.Equal(t, 1, in.hub.Streams())
	require.NoError(t, conn.(*net.TCPConn).SetLinger(0)) // vanish: no FIN handshake, an RST
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return in.hub.Streams() == 0 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1, metric(t, in.reg, "holdstream_streams_ended_total", map[string]string{"reason": holdstream.ReasonClientAbort}))
	require.EqualValues(t, 0, metric(t, in.reg, "holdstream_streams", map[string]string{"appointment_type_id": "type1"}))
	n, err := e.db.Client.PubSubNumSub(context.Background(), e.prefix+"holds:events:type1").Result()
	require.NoError(t, err)
	require.Zero(t, n[e.prefix+"holds:events:type1"])
}

// TestShutdownEndsStreamsWithServerShutdown: Shutdown ends every stream
// with its end event before returning, and refuses new ones (503).
func TestShutdownEndsStreamsWithServerShutdown(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, nil)
	var cs []*client
	for i := range 3 {
		c := in.open(t, fmt.Sprintf("appointmentTypeId=type%d&clientId=c%d", i%2, i))
		c.until(t, "connected")
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, in.hub.Shutdown(ctx))
	for _, c := range cs {
		require.Equal(t, holdstream.ReasonServerShutdown, c.until(t, "end")["reason"])
		c.closed(t)
	}
	status, body := get(t, in.base+"/v1/holds/stream?appointmentTypeId=type1&clientId=late")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, contracts.CodeUnavailable, body.Error.Code)
}

// TestCancelEndsTheClientsStreamAnywhere: DELETE on instance B with the
// streamToken of the stream's init event ends the client's stream on
// instance A with client-cancel. Without the token it is 400; with a wrong
// one, or another stream's, nothing ends (a clientId proves nothing).
func TestCancelEndsTheClientsStreamAnywhere(t *testing.T) {
	e := newEnv(t)
	a, b := e.instance(t, nil), e.instance(t, nil)
	c := a.open(t, "appointmentTypeId=type1&clientId=alice")
	init := c.next(t)
	require.Equal(t, "init", init["type"])
	token, _ := init["streamToken"].(string)
	require.Regexp(t, `^[0-9a-f]{32}$`, token, "128 random bits")
	c.until(t, "connected")
	bob := b.open(t, "appointmentTypeId=type1&clientId=bob")
	bobToken := bob.next(t)["streamToken"].(string)
	require.NotEqual(t, token, bobToken)
	bob.until(t, "connected")

	cancel := func(query string) *http.Response {
		req, _ := http.NewRequest(http.MethodDelete, b.base+"/v1/holds/stream?"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusBadRequest, cancel("clientId=alice").StatusCode, "no streamToken")
	for _, q := range []string{"clientId=alice&streamToken=" + bobToken, "clientId=alice&streamToken=" + strings.Repeat("0", 32),
		"clientId=alice&streamToken=" + init["connectionId"].(string), "clientId=bob&streamToken=" + token} {
		require.Equal(t, http.StatusNoContent, cancel(q).StatusCode, q)
	}
	e.engine.publish(t, holdstream.TypeHold, hold("h1", "carol", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	require.Equal(t, ref("h1"), c.until(t, "hold")["holdId"], "alice's stream is still open")
	require.Equal(t, ref("h1"), bob.until(t, "hold")["holdId"], "bob's too")
	require.Equal(t, 2, a.hub.Streams()+b.hub.Streams())

	require.Equal(t, http.StatusNoContent, cancel("clientId=alice&streamToken="+token).StatusCode)
	require.Equal(t, holdstream.ReasonClientCancel, c.until(t, "end")["reason"])
	c.closed(t)
	require.Equal(t, 1, b.hub.Streams(), "bob's stream stays")
}

// TestSnapshotFailureEndsWithInitFailed: the engine cannot answer the
// snapshot: the stream ends with init-failed (and the hub forgets it).
func TestSnapshotFailureEndsWithInitFailed(t *testing.T) {
	e := newEnv(t)
	e.engine.err = errors.New("engine down")
	in := e.instance(t, nil)
	c := in.open(t, "appointmentTypeId=type1&clientId=alice")
	require.Equal(t, "init", c.next(t)["type"])
	require.Equal(t, holdstream.ReasonInitFailed, c.next(t)["reason"])
	c.closed(t)
	require.Eventually(t, func() bool { return in.hub.Streams() == 0 }, 3*time.Second, 10*time.Millisecond)
}

func get(t *testing.T, url string) (int, contracts.ErrorResponse) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body contracts.ErrorResponse
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestBadInputAnswers4xxNamingTheField and changes nothing in Redis.
func TestBadInputAnswers4xxNamingTheField(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) {
		c.Validate = func(_ context.Context, id string) error {
			if id == "nope" {
				return contracts.Errorf(contracts.CodeNotFound, "no appointment type %s", id)
			}
			return nil
		}
	})
	for _, tc := range []struct{ query, field string }{
		{"clientId=a", "appointmentTypeId"},
		{"appointmentTypeId=t", "clientId"},
		{"appointmentTypeId=t&clientId=" + strings.Repeat("x", 129), "clientId"},
		{"appointmentTypeId=t%0A&clientId=a", "appointmentTypeId"},
		{"appointmentTypeId=t&clientId=a&leaseMs=abc", "leaseMs"},
		{"appointmentTypeId=t&clientId=a&leaseMs=999", "leaseMs"},
		{"appointmentTypeId=t&clientId=a&leaseMs=-5", "leaseMs"},
		{"appointmentTypeId=t&clientId=a&leaseMs=1500.5", "leaseMs"},
		{"appointmentTypeId=t&clientId=a&leaseMs=-99999999999999999999", "leaseMs"},
	} {
		status, body := get(t, in.base+"/v1/holds/stream?"+tc.query)
		require.Equal(t, http.StatusBadRequest, status, tc.query)
		require.Equal(t, contracts.CodeInvalid, body.Error.Code, tc.query)
		require.Equal(t, tc.field, body.Error.Details["field"], tc.query)
	}
	status, body := get(t, in.base+"/v1/holds/stream?appointmentTypeId=nope&clientId=a")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, contracts.CodeNotFound, body.Error.Code)
	keys, err := e.db.Client.Keys(context.Background(), "*holdstream*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "a refusal changes nothing in Redis")
	require.Zero(t, in.hub.Streams())
}

// TestLeaseAboveTheMaxIsClamped: the lease is "default 15 min, max
// 1 hour" — a larger leaseMs is clamped to HOLDS_STREAM_LEASE_MAX, not
// refused; the init event's leaseMs says the lease in force, and the
// stream ends with lease-expired when it runs out.
func TestLeaseAboveTheMaxIsClamped(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, nil)
	for _, q := range []string{"3600001", "7200000", "99999999999999999999"} {
		c := in.open(t, "appointmentTypeId=type1&clientId=alice&leaseMs="+q)
		require.Equal(t, http.StatusOK, c.resp.StatusCode, q)
		init := c.next(t)
		require.Equal(t, "init", init["type"])
		require.EqualValues(t, time.Hour.Milliseconds(), init["leaseMs"], "leaseMs=%s: clamped to the 1 h default maximum", q)
		c.until(t, "connected")
	}

	short := e.instance(t, func(c *holdstream.Config) {
		c.MinLease, c.DefaultLease, c.MaxLease = 50*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	})
	start := time.Now()
	c := short.open(t, "appointmentTypeId=type1&clientId=bob&leaseMs=3600000")
	require.EqualValues(t, 300, c.next(t)["leaseMs"], "clamped to MaxLease")
	require.Equal(t, holdstream.ReasonLeaseExpired, c.until(t, "end")["reason"])
	require.Less(t, time.Since(start), 10*time.Second, "the clamped lease ended the stream, not the asked hour")
	c.closed(t)
}

// TestRedisDownAnswers503: a hub whose Redis is gone refuses streams with
// 503 unavailable, never 500.
func TestRedisDownAnswers503(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, nil)
	broken := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = broken.Close() })
	hub, err := holdstream.New(holdstream.Config{Redis: broken, Source: e.engine})
	require.NoError(t, err)
	require.Error(t, hub.Start(context.Background()), "Start needs Redis")
	_ = in // the working instance shows the contrast in the other tests
	app := newBareApp(t, hub)
	status, body := get(t, app+"/v1/holds/stream?appointmentTypeId=t&clientId=a")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, contracts.CodeUnavailable, body.Error.Code)
}

// TestReplacedDuringInitKeepsItsReason: a stream replaced while its
// snapshot is under way, whose snapshot then fails, ends with "replaced" —
// the first reason — not "init-failed": a client told "init-failed"
// reconnects and would replace the newer stream in turn.
func TestReplacedDuringInitKeepsItsReason(t *testing.T) {
	e := newEnv(t)
	e.engine.entered, e.engine.gate = make(chan struct{}), make(chan struct{})
	in := e.instance(t, nil)
	first := in.open(t, "appointmentTypeId=type1&clientId=alice")
	require.Equal(t, "init", first.next(t)["type"])
	<-e.engine.entered // the first stream's snapshot waits
	second := in.open(t, "appointmentTypeId=type1&clientId=alice")
	<-e.engine.entered // registered (the first is replaced), its snapshot waits too
	e.engine.mu.Lock()
	e.engine.err = errors.New("engine down")
	e.engine.mu.Unlock()
	close(e.engine.gate)
	require.Equal(t, holdstream.ReasonReplaced, first.until(t, "end")["reason"])
	first.closed(t)
	require.Equal(t, holdstream.ReasonInitFailed, second.until(t, "end")["reason"])
	second.closed(t)
}
