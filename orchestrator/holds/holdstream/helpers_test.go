package holdstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/redistest"
)

// fakeEngine is a faithful in-memory stand-in for the holds engine until it
// is merged: Active answers its holds, publish sends an event on the
// engine's channel exactly as the engine does (JSON Event).
type fakeEngine struct {
	mu     sync.Mutex
	holds  map[string][]holdstream.Hold
	err    error
	rdb    redis.UniversalClient
	prefix string
	// entered, when set, is sent on when Active is called, which then waits
	// for gate to close (a snapshot that takes a while).
	entered chan struct{}
	gate    chan struct{}
}

func (f *fakeEngine) Active(_ context.Context, typeID string) ([]holdstream.Hold, error) {
	if f.entered != nil {
		f.entered <- struct{}{}
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return append([]holdstream.Hold(nil), f.holds[typeID]...), nil
}

func (f *fakeEngine) add(h holdstream.Hold) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds[h.AppointmentTypeID] = append(f.holds[h.AppointmentTypeID], h)
}

func (f *fakeEngine) publish(t *testing.T, typ string, h holdstream.Hold) {
	t.Helper()
	b, err := json.Marshal(holdstream.Event{Type: typ, Hold: h})
	require.NoError(t, err)
	require.NoError(t, f.rdb.Publish(context.Background(), f.prefix+"holds:events:"+h.AppointmentTypeID, b).Err())
}

// env is a leased Redis database, a channel prefix of the test's own (pub/sub
// is not per database) and the engine fake.
type env struct {
	db     *redistest.DB
	prefix string
	engine *fakeEngine
}

func newEnv(t *testing.T) *env {
	db := redistest.New(t)
	prefix := "t" + strings.ReplaceAll(t.Name(), "/", "_") + ":" + time.Now().Format("150405.000000") + ":"
	return &env{db: db, prefix: prefix, engine: &fakeEngine{holds: map[string][]holdstream.Hold{}, rdb: db.Client, prefix: prefix}}
}

// instance is one hub served by the project's Fiber shell on a free port.
type instance struct {
	hub  *holdstream.Hub
	base string
	reg  *prometheus.Registry
}

func (e *env) instance(t *testing.T, tweak func(*holdstream.Config)) *instance {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := holdstream.Config{Redis: e.db.Client, Source: e.engine, KeyPrefix: e.prefix, Ping: 100 * time.Millisecond,
		Logger: log, Registerer: reg}
	if tweak != nil {
		tweak(&cfg)
	}
	hub, err := holdstream.New(cfg)
	require.NoError(t, err)
	require.NoError(t, hub.Start(context.Background()))
	app, err := web.New(web.Options{Logger: log, Registerer: reg})
	require.NoError(t, err)
	holdstream.Register(app, hub)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hub.Shutdown(ctx)
		_ = app.Shutdown()
	})
	return &instance{hub: hub, base: "http://" + ln.Addr().String(), reg: reg}
}

// client is an open stream read line by line.
type client struct {
	resp   *http.Response
	events chan map[string]any
	lines  []string
	mu     sync.Mutex
}

func (in *instance) open(t *testing.T, query string) *client {
	t.Helper()
	resp, err := http.Get(in.base + "/v1/holds/stream?" + query)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	c := &client{resp: resp, events: make(chan map[string]any, 256)}
	t.Cleanup(func() { _ = resp.Body.Close() })
	go c.read()
	return c
}

func (c *client) read() {
	defer close(c.events)
	r := bufio.NewReader(c.resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		c.mu.Lock()
		c.lines = append(c.lines, line)
		c.mu.Unlock()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				c.events <- m
			}
		}
	}
}

// next returns the next event that is not a ping.
func (c *client) next(t *testing.T) map[string]any {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m, ok := <-c.events:
			require.True(t, ok, "stream closed")
			if m["type"] != "ping" {
				return m
			}
		case <-timeout:
			t.Fatal("no event within 5s")
		}
	}
}

// until skips events until one of type typ.
func (c *client) until(t *testing.T, typ string) map[string]any {
	t.Helper()
	for {
		if m := c.next(t); m["type"] == typ {
			return m
		}
	}
}

// closed waits for the stream to end (EOF).
func (c *client) closed(t *testing.T) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-c.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("stream still open after 5s")
		}
	}
}

// ref is what a stream shows of hold id id: its public reference.
func ref(id string) string { return holds.Ref(id) }

func hold(id, client, typ, spec string, start time.Time, expires time.Time) holdstream.Hold {
	return holdstream.Hold{HoldID: id, ClientID: client, AppointmentTypeID: typ, SpecialistID: spec,
		SlotStartDate: start, SlotEndDate: start.Add(30 * time.Minute), HoldExpiresAt: expires, Face: "web"}
}

// newBareApp serves hub (not started) on the project's shell.
func newBareApp(t *testing.T, hub *holdstream.Hub) string {
	t.Helper()
	app, err := web.New(web.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	holdstream.Register(app, hub)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}
