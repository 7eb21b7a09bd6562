package taskimport

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// maxPageBytes bounds one page's body: a page whose Content-Length says
// more is refused before a byte of it is read, and a body without one is
// cut there.
const maxPageBytes = 256 << 20

// maxErrBody is how much of an answer other than 200 is read, for the
// error.
const maxErrBody = 4 << 10

// source is the old queue API: GET <base>/queue, signed.
type source struct {
	base    *url.URL
	secret  []byte
	version int // signature version: 1 (the seed's scheme) or 2
	client  *http.Client
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error

	// Signatures sent in the current second: one is never sent twice, since
	// a server that refuses replays (flowgate's own does) would refuse the
	// second. A version-1 signature of a GET covers only the timestamp, so
	// two pages in one second would share it. The second a run starts in
	// (start) is not used at all: a run just before may have signed in it.
	start int64
	sec   int64
	sent  map[string]bool
}

// newSource returns a source whose first request waits for the next
// second (see start).
func newSource(base *url.URL, secret []byte, version int, client *http.Client, now func() time.Time,
	sleep func(context.Context, time.Duration) error) *source {
	return &source{base: base, secret: secret, version: version, client: client, now: now, sleep: sleep, start: now().Unix()}
}

// page is one answer of GET /queue: its tasks, undecoded, and where the
// next page starts.
type page struct {
	tasks []json.RawMessage
	// next is the next page's cursor; "" and more false on the last page.
	// Without cursors (the answer has no next_cursor member) a full page
	// means more, asked for by offset.
	next    string
	more    bool
	byIndex bool
}

// fetch asks for one page of status: after cursor, or from offset when
// the API pages by offset.
func (s *source) fetch(ctx context.Context, status contracts.Status, limit int, cursor string, offset int) (page, error) {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/queue"
	q := url.Values{}
	q.Set("status", string(status))
	q.Set("limit", strconv.Itoa(limit))
	q.Set("history", "true")
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return page{}, err
	}
	req.Header.Set("Accept", "application/json")
	if err := s.sign(ctx, req); err != nil {
		return page{}, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return page{}, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
		hint := ""
		switch {
		case hmacsig.IsRedirect(resp.StatusCode):
			// The client stops at a redirect (hmacsig.NoRedirect): the
			// request is signed, and the tasks would be recorded as coming
			// from --from while another host answered them.
			return page{}, fmt.Errorf("GET %s: HTTP %d, a redirect to %q: not followed (the request is signed); give --from the URL that answers",
				u.Redacted(), resp.StatusCode, hmacsig.Location(resp.Header))
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			hint = " (check the secret — --secret, IMPORT_HMAC_SECRET or HMAC_SECRET — and that both clocks are right)"
		}
		return page{}, fmt.Errorf("GET %s: HTTP %d%s: %s", u.Redacted(), resp.StatusCode, hint, snippet(raw))
	}
	if resp.ContentLength > maxPageBytes {
		return page{}, fmt.Errorf("GET %s: the answer announces %d bytes (Content-Length), over %d: use a smaller --page-size", u.Redacted(), resp.ContentLength, maxPageBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		return page{}, fmt.Errorf("GET %s: reading the answer: %w", u.Redacted(), err)
	}
	if len(body) > maxPageBytes {
		return page{}, fmt.Errorf("GET %s: answer larger than %d bytes: use a smaller --page-size", u.Redacted(), maxPageBytes)
	}
	p, err := decodePage(body)
	if err != nil {
		return page{}, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if p.byIndex {
		p.more = len(p.tasks) >= limit
	}
	return p, nil
}

// decodePage reads flowgate's GET /queue answer ({"success", "tasks",
// "next_cursor"}), or a bare array of tasks.
func decodePage(body []byte) (page, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var tasks []json.RawMessage
		if err := json.Unmarshal(trimmed, &tasks); err != nil {
			return page{}, fmt.Errorf("answer is not a JSON array of tasks: %w", err)
		}
		return page{tasks: tasks, byIndex: true}, nil
	}
	var env struct {
		Success    *bool             `json:"success"`
		Tasks      []json.RawMessage `json:"tasks"`
		NextCursor *string           `json:"next_cursor"`
		Error      json.RawMessage   `json:"error"`
	}
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return page{}, fmt.Errorf("answer is not JSON of GET /queue's shape: %w: %s", err, snippet(body))
	}
	if env.Success != nil && !*env.Success {
		return page{}, fmt.Errorf("answer says success false: %s", snippet(body))
	}
	if env.Tasks == nil {
		return page{}, fmt.Errorf("answer has no tasks array: %s", snippet(body))
	}
	p := page{tasks: env.Tasks}
	if env.NextCursor == nil {
		p.byIndex = true
	} else {
		p.next, p.more = *env.NextCursor, *env.NextCursor != ""
	}
	return p, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// sign sets X-Timestamp and X-Signature (and X-Signature-Version for
// version 2) on a body-less request, waiting for the next second when the
// signature was sent already in this one.
func (s *source) sign(ctx context.Context, req *http.Request) error {
	for {
		now := s.now()
		if sec := now.Unix(); sec != s.sec || s.sent == nil {
			s.sec, s.sent = sec, map[string]bool{}
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		var sig string
		if s.version == 2 {
			sig = hex.EncodeToString(hmacsig.MACV2(s.secret, ts, req.Method, req.URL.RequestURI(), nil))
		} else {
			sig = hex.EncodeToString(hmacsig.MAC(s.secret, ts, nil))
		}
		if now.Unix() > s.start && !s.sent[sig] {
			s.sent[sig] = true
			req.Header.Set(hmacsig.HeaderTimestamp, ts)
			req.Header.Set(hmacsig.HeaderSignature, sig)
			if s.version == 2 {
				req.Header.Set(hmacsig.HeaderSignatureVersion, "2")
			}
			return nil
		}
		if err := s.sleep(ctx, time.Unix(now.Unix()+1, 0).Sub(now)); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// wireTask is a task as the old API sends it: flowgate's contracts.Task
// shape, read leniently (ids and counts as strings or numbers, timestamps
// in RFC 3339, SQL's "2006-01-02 15:04:05" or Unix seconds or
// milliseconds, parsed_payload as an object or a string holding one).
type wireTask struct {
	QueueID       flexString      `json:"queue_id"`
	EncounterID   flexString      `json:"encounter_id"`
	Status        string          `json:"status"`
	Priority      string          `json:"priority"`
	Attempts      flexInt         `json:"attempts"`
	MaxAttempts   flexInt         `json:"max_attempts"`
	Payload       json.RawMessage `json:"payload"`
	ParsedPayload json.RawMessage `json:"parsed_payload"`
	ErrorMessage  flexString      `json:"error_message"`
	WorkerID      flexString      `json:"worker_id"`
	CreatedAt     flexTime        `json:"created_at"`
	UpdatedAt     flexTime        `json:"updated_at"`
	History       []wireEvent     `json:"history"`
}

// decodeTask turns one task of a page into what the ledger imports. The
// queue_id and status are returned even when the rest fails, for the
// report.
func decodeTask(raw json.RawMessage) (tasks.ImportTask, error) {
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		var id struct {
			QueueID any `json:"queue_id"`
			Status  any `json:"status"`
		}
		_ = json.Unmarshal(raw, &id)
		t := tasks.ImportTask{QueueID: fmt.Sprint(orEmpty(id.QueueID)), Status: contracts.Status(fmt.Sprint(orEmpty(id.Status)))}
		return t, fmt.Errorf("not a task: %w", err)
	}
	t := tasks.ImportTask{
		QueueID: string(w.QueueID), EncounterID: string(w.EncounterID),
		Status:   contracts.Status(strings.ToUpper(strings.TrimSpace(w.Status))),
		Priority: contracts.Priority(w.Priority), Attempts: int(w.Attempts), MaxAttempts: int(w.MaxAttempts),
		Payload: w.Payload, ParsedPayload: unwrapObject(w.ParsedPayload),
		ErrorMessage: string(w.ErrorMessage), WorkerID: string(w.WorkerID),
		CreatedAt: time.Time(w.CreatedAt), UpdatedAt: time.Time(w.UpdatedAt),
	}
	for _, e := range w.History {
		t.History = append(t.History, contracts.TaskEvent(e))
	}
	return t, nil
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// unwrapObject returns the object a JSON string holds (a database that
// stores parsed_payload as text), or raw as it is.
func unwrapObject(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	inner := json.RawMessage(strings.TrimSpace(s))
	if s == "" {
		return json.RawMessage("null")
	}
	if json.Valid(inner) {
		return inner
	}
	return raw
}

// flexString is a string, a number (kept as written) or null.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number, got %s", b)
	}
	*f = flexString(n.String())
	return nil
}

// flexInt is an integer, written as a number or a string, or null (0).
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	if s == "" {
		*f = 0
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(s)))
	if err != nil {
		return fmt.Errorf("want an integer, got %s", b)
	}
	*f = flexInt(n)
	return nil
}

// flexTime is a timestamp: RFC 3339, "2006-01-02 15:04:05[.fraction][zone]"
// (UTC without a zone), Unix seconds or milliseconds (a number or numeric
// string), or null/"" (zero).
type flexTime time.Time

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

func (f *flexTime) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	v := strings.TrimSpace(string(s))
	if v == "" {
		*f = flexTime{}
		return nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "-:") {
		if n > 1e12 {
			*f = flexTime(time.UnixMilli(int64(n)).UTC())
		} else {
			*f = flexTime(time.UnixMilli(int64(n * 1000)).UTC())
		}
		return nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			*f = flexTime(t.UTC())
			return nil
		}
	}
	return fmt.Errorf("unreadable timestamp %s", b)
}

// wireEvent is one history entry: flowgate's {at, from, to, by, reason},
// or the same under other common names.
type wireEvent contracts.TaskEvent

func (e *wireEvent) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("history entry is not an object: %s", snippet(b))
	}
	pick := func(names ...string) json.RawMessage {
		for _, n := range names {
			if v, ok := m[n]; ok && string(v) != "null" {
				return v
			}
		}
		return nil
	}
	text := func(names ...string) string {
		v := pick(names...)
		if v == nil {
			return ""
		}
		var s flexString
		if s.UnmarshalJSON(v) == nil {
			return string(s)
		}
		return string(v) // an object or array: kept as JSON text
	}
	var at flexTime
	if v := pick("at", "timestamp", "time", "created_at"); v != nil {
		if err := at.UnmarshalJSON(v); err != nil {
			return err
		}
	}
	*e = wireEvent{At: time.Time(at),
		From:   contracts.Status(strings.ToUpper(text("from", "from_status", "old_status"))),
		To:     contracts.Status(strings.ToUpper(text("to", "to_status", "new_status", "status"))),
		By:     text("by", "actor", "worker_id"),
		Reason: text("reason", "message", "note", "error_message", "details")}
	return nil
}
