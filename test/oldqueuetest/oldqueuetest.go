// Package oldqueuetest is the old queue API (docs/import-queue.md) for tests: an
// httptest server answering GET /queue?status=&limit=[&cursor=|&offset=]
// with the tasks it holds, in the order added, filtered by status. Every
// request must carry a valid HMAC signature (X-Timestamp within 300 s of
// the server's clock, X-Signature of version 1, or of version 2 with
// X-Signature-Version: 2) and, unless AllowReplays, one never seen before;
// anything else is answered 401. A page can be made to fail.
package oldqueuetest

import (
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// Paging styles.
const (
	// Cursor answers {"success", "tasks", "next_cursor"}: flowgate's shape.
	Cursor = "cursor"
	// Offset answers {"success", "tasks"} and pages by &offset=.
	Offset = "offset"
)

// Server is a running old queue API.
type Server struct {
	*httptest.Server
	Secret []byte

	mu           sync.Mutex
	tasks        []json.RawMessage
	statuses     []string
	paging       string
	allowReplays bool
	seen         map[string]bool
	fail         map[string]int // "STATUS/page" → failures left (-1: always)
	requests     []string
	refused      []string
}

// New starts a server holding no task; it stops when t ends.
func New(t testing.TB, secret string) *Server {
	t.Helper()
	s := &Server{Secret: []byte(secret), paging: Cursor, seen: map[string]bool{}, fail: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Add appends tasks (anything that marshals to a JSON object with a
// "status" member).
func (s *Server) Add(t testing.TB, tasks ...any) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range tasks {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var probe struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			t.Fatal(err)
		}
		s.tasks = append(s.tasks, b)
		s.statuses = append(s.statuses, probe.Status)
	}
}

// Replace swaps the task with queue_id id for v (the source changed it).
func (s *Server) Replace(t testing.TB, id string, v any) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, raw := range s.tasks {
		var probe struct {
			QueueID string `json:"queue_id"`
		}
		_ = json.Unmarshal(raw, &probe)
		if probe.QueueID == id {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(b, &st)
			s.tasks[i], s.statuses[i] = b, st.Status
			return
		}
	}
	t.Fatalf("oldqueuetest: no task %s", id)
}

// SetPaging chooses Cursor (the default) or Offset.
func (s *Server) SetPaging(style string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paging = style
}

// AllowReplays accepts a signature seen before (off by default).
func (s *Server) AllowReplays() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowReplays = true
}

// FailPage makes page n (from 1) of status answer 500, times times (-1:
// until ClearFailures).
func (s *Server) FailPage(status string, n, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[status+"/"+strconv.Itoa(n)] = times
}

// ClearFailures makes every page answer again.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = map[string]int{}
}

// Requests lists the request URIs answered or refused so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Refused lists why requests were refused for their signature.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.URL.RequestURI())
	if r.URL.Path != "/queue" || r.Method != http.MethodGet {
		writeJSON(w, http.StatusNotFound, map[string]any{"success": false, "error": "not found"})
		return
	}
	if why := s.verify(r); why != "" {
		s.refused = append(s.refused, why)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"success": false, "error": why})
		return
	}
	q := r.URL.Query()
	status := q.Get("status")
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error": "bad limit"})
			return
		}
		limit = n
	}
	from := 0
	pos := q.Get("cursor")
	if s.paging == Offset {
		pos = q.Get("offset")
	}
	if pos != "" {
		n, err := strconv.Atoi(pos)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error": "bad cursor"})
			return
		}
		from = n
	}
	var match []json.RawMessage
	for i, t := range s.tasks {
		if status == "" || s.statuses[i] == status {
			match = append(match, t)
		}
	}
	pageNo := from/limit + 1
	key := status + "/" + strconv.Itoa(pageNo)
	if left, ok := s.fail[key]; ok && left != 0 {
		if left > 0 {
			s.fail[key] = left - 1
		}
		writeJSON(w, http.StatusInternalServerError, map[string]any{"success": false, "error": "database unavailable (page " + key + ")"})
		return
	}
	end := min(from+limit, len(match))
	page := []json.RawMessage{}
	if from < len(match) {
		page = match[from:end]
	}
	body := map[string]any{"success": true, "tasks": page}
	if s.paging == Cursor {
		next := ""
		if end < len(match) {
			next = strconv.Itoa(end)
		}
		body["next_cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

// verify checks the signature as the seed's API does; "" when good.
func (s *Server) verify(r *http.Request) string {
	ts, sig := r.Header.Get(hmacsig.HeaderTimestamp), strings.TrimPrefix(r.Header.Get(hmacsig.HeaderSignature), "sha256=")
	if ts == "" || sig == "" {
		return "missing X-Timestamp or X-Signature"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "bad X-Timestamp"
	}
	if d := time.Since(time.Unix(sec, 0)); d > 300*time.Second || d < -300*time.Second {
		return fmt.Sprintf("X-Timestamp %s is %s off", ts, d.Round(time.Second))
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return "bad X-Signature"
	}
	var want []byte
	switch v := r.Header.Get(hmacsig.HeaderSignatureVersion); v {
	case "", "1":
		want = hmacsig.MAC(s.Secret, ts, nil)
	case "2":
		want = hmacsig.MACV2(s.Secret, ts, r.Method, r.URL.RequestURI(), nil)
	default:
		return "bad X-Signature-Version " + v
	}
	if !hmac.Equal(got, want) {
		return "signature mismatch"
	}
	if s.seen[sig] && !s.allowReplays {
		return "replayed signature"
	}
	s.seen[sig] = true
	return ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
