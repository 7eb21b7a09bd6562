package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// sseEvents reads the data events of a holds stream into a channel.
func sseEvents(t *testing.T, url string) (<-chan map[string]any, *http.Response) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { _ = resp.Body.Close() })
	ch := make(chan map[string]any, 64)
	go func() {
		defer close(ch)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch, resp
}

// nextOf waits for the next event of type typ.
func nextOf(t *testing.T, ch <-chan map[string]any, typ string) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			require.True(t, ok, "stream closed before a %s event", typ)
			if m["type"] == typ {
				return m
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// streamSchedule writes a schedule file (the availability testdata's,
// its first appointment type copied under each of typeIDs) and returns
// its path: the binary's stream refuses (404) a type its catalogue does
// not know, and event channels are per Redis server, not per database, so
// each test streams types of its own.
func streamSchedule(t *testing.T, typeIDs ...string) string {
	t.Helper()
	raw, err := os.ReadFile("../orchestrator/holds/availability/testdata/schedule.json")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	types, ok := s["appointmentTypes"].([]any)
	require.True(t, ok)
	model, ok := types[0].(map[string]any)
	require.True(t, ok)
	var out []any
	for _, id := range typeIDs {
		ty := maps.Clone(model)
		ty["id"] = id
		out = append(out, ty)
	}
	s["appointmentTypes"] = out
	raw, err = json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "schedule.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

// TestHoldsStreamBinarySIGTERMEndsStreamsWithServerShutdown runs the built
// binary: streams get the engine's events, and on SIGTERM every stream
// receives end/server-shutdown before the process exits 0.
func TestHoldsStreamBinarySIGTERMEndsStreamsWithServerShutdown(t *testing.T) {
	db := redistest.New(t)
	typeID := fmt.Sprintf("sse-bin-%d", time.Now().UnixNano()) // channels are not per database
	p := flowgatetest.Start(t, withSecrets(map[string]string{"REDIS_URL": db.URL(), "HOLDS_STREAM_PING": "200ms",
		"HOLDS_SCHEDULE_FILE": streamSchedule(t, typeID)}))
	var streams []<-chan map[string]any
	for i := range 3 {
		ch, resp := sseEvents(t, fmt.Sprintf("%s/v1/holds/stream?appointmentTypeId=%s&clientId=c%d&leaseMs=60000", p.Base, typeID, i))
		require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
		nextOf(t, ch, "connected")
		streams = append(streams, ch)
	}
	ev := fmt.Sprintf(`{"type":"hold","holdId":"h1","clientId":"c0","appointmentTypeId":%q,"specialistId":"s1","slotStartDate":"2026-11-24T15:00:00Z","slotEndDate":"2026-11-24T15:30:00Z","holdExpiresAt":"2026-11-24T14:00:30Z","face":"web"}`, typeID)
	require.NoError(t, db.Client.Publish(context.Background(), "holds:events:"+typeID, ev).Err())
	for i, ch := range streams {
		got := nextOf(t, ch, "hold")
		require.Equal(t, holds.Ref("h1"), got["holdId"], "the hold's public reference, not its id")
		require.NotContains(t, got, "clientId")
		require.Equal(t, i == 0, got["isOwnHold"])
	}
	_, body := p.Get("/metrics")
	require.Contains(t, body, fmt.Sprintf(`holdstream_streams{appointment_type_id=%q} 3`, typeID))

	code, took := p.Stop()
	require.Equal(t, 0, code)
	for _, ch := range streams {
		require.Equal(t, "server-shutdown", nextOf(t, ch, "end")["reason"])
	}
	t.Logf("SIGTERM → exit in %s, every stream ended with server-shutdown", took)
}

// TestBoardPageServed: /board answers the embedded page, with or without
// an appointment type (without, it lists the types), and 400 naming the
// field of a malformed type or date. / answers the landing page.
func TestBoardPageServed(t *testing.T) {
	db := redistest.New(t)
	p := flowgatetest.Start(t, withSecrets(map[string]string{"REDIS_URL": db.URL()}))
	status, body := p.Get("/board?appointmentTypeId=t1&date=2026-11-24")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "new EventSource(")
	status, body = p.Get("/board")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "listTypes()")
	status, body = p.Get("/board?appointmentTypeId=" + strings.Repeat("x", 129))
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, `"field":"appointmentTypeId"`)
	status, body = p.Get("/")
	require.Equal(t, http.StatusOK, status)
	for _, link := range []string{`href="/board"`, `href="/monitoring"`, `href="/openapi.json"`, `href="/metrics"`, `href="/healthz"`, `href="/readyz"`} {
		require.Contains(t, body, link)
	}
	status, body = p.Get("/board?appointmentTypeId=t1&date=24.11.2026")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, `"field":"date"`)
}
