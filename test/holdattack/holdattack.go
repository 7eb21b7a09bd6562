// Package holdattack is the replay attack of issue 34 on the holds routes,
// shared by the sidecar's package test and the chaos drill: an anonymous
// client watches the live stream (a spy subscriber) and the public /v1
// routes, harvests every value they show, and replays each one against
// every route that acts on a hold, a stream or a booking. Nothing of it may
// be accepted: those routes' credentials (a hold id, a stream token, an
// appointment id) are never shown to anyone but their owner.
package holdattack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kit talks to one flowgate.
type Kit struct {
	Base string // http://host:port
	HC   *http.Client
}

// New is a Kit on base.
func New(base string) *Kit {
	return &Kit{Base: base, HC: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// Answer is one request's outcome.
type Answer struct {
	Method, Path string
	Status       int
	Body         []byte
	Err          error
}

func (a Answer) String() string {
	if a.Err != nil {
		return fmt.Sprintf("%s %s: %v", a.Method, a.Path, a.Err)
	}
	b := a.Body
	if len(b) > 300 {
		b = b[:300]
	}
	return fmt.Sprintf("%s %s: %d %s", a.Method, a.Path, a.Status, b)
}

// Do sends a request (body marshalled as JSON unless nil).
func (k *Kit) Do(method, path string, body any) Answer {
	a := Answer{Method: method, Path: path}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			a.Err = err
			return a
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, k.Base+path, rd)
	if err != nil {
		a.Err = err
		return a
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.HC.Do(req)
	if err != nil {
		a.Err = err
		return a
	}
	defer resp.Body.Close()
	a.Status = resp.StatusCode
	a.Body, a.Err = io.ReadAll(resp.Body)
	return a
}

// Stream is an open GET /v1/holds/stream, every data event recorded.
type Stream struct {
	ClientID string
	resp     *http.Response
	mu       sync.Mutex
	events   []map[string]any
	raw      []string
	done     chan struct{}
	notify   chan struct{}
}

// Open opens a stream of typeID for clientID (a one-hour lease) and
// waits for its "connected" event.
func (k *Kit) Open(ctx context.Context, typeID, clientID string) (*Stream, error) {
	return k.OpenLease(ctx, typeID, clientID, "3600000")
}

// OpenLease is Open asking for the lease leaseMs (sent as given).
func (k *Kit) OpenLease(ctx context.Context, typeID, clientID, leaseMs string) (*Stream, error) {
	q := url.Values{"appointmentTypeId": {typeID}, "clientId": {clientID}, "leaseMs": {leaseMs}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.Base+"/v1/holds/stream?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{}).Do(req) // no timeout: a stream lives long
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("stream %s: %d %s", clientID, resp.StatusCode, b)
	}
	s := &Stream{ClientID: clientID, resp: resp, done: make(chan struct{}), notify: make(chan struct{}, 1)}
	go s.read()
	if _, err := s.WaitFor(func(m map[string]any) bool { return m["type"] == "connected" }, 10*time.Second); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Stream) read() {
	defer close(s.done)
	r := bufio.NewReader(s.resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(data), &m) != nil {
			continue
		}
		s.mu.Lock()
		s.events, s.raw = append(s.events, m), append(s.raw, data)
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// Close closes the stream's connection.
func (s *Stream) Close() { _ = s.resp.Body.Close() }

// Events are the data events so far (init, snapshot, …).
func (s *Stream) Events() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Raw are the events' data lines so far.
func (s *Stream) Raw() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.raw)
}

// Init is the stream's init event (nil before it came).
func (s *Stream) Init() map[string]any {
	for _, m := range s.Events() {
		if m["type"] == "init" {
			return m
		}
	}
	return nil
}

// Token is the streamToken of the stream's init event.
func (s *Stream) Token() string {
	t, _ := s.Init()["streamToken"].(string)
	return t
}

// Ended is the reason of the stream's end event, "" while it runs.
func (s *Stream) Ended() string {
	for _, m := range s.Events() {
		if m["type"] == "end" {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}

// WaitFor waits for an event for which pred is true.
func (s *Stream) WaitFor(pred func(map[string]any) bool, timeout time.Duration) (map[string]any, error) {
	deadline := time.After(timeout)
	for {
		for _, m := range s.Events() {
			if pred(m) {
				return m, nil
			}
		}
		select {
		case <-s.notify:
		case <-s.done:
			for _, m := range s.Events() {
				if pred(m) {
					return m, nil
				}
			}
			return nil, errors.New("stream " + s.ClientID + " closed before the event")
		case <-deadline:
			return nil, errors.New("stream " + s.ClientID + ": no such event in " + timeout.String())
		}
	}
}

// Harvest adds every scalar value in the JSON documents docs (raw bytes,
// strings or decoded values) to seen, as strings.
func Harvest(seen map[string]bool, docs ...any) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			seen[x] = true
		case float64:
			seen[strconv.FormatFloat(x, 'f', -1, 64)] = true
		case bool:
			seen[strconv.FormatBool(x)] = true
		}
	}
	for _, d := range docs {
		switch x := d.(type) {
		case []byte:
			var v any
			if json.Unmarshal(x, &v) == nil {
				walk(v)
			}
		case string:
			var v any
			if json.Unmarshal([]byte(x), &v) == nil {
				walk(v)
			}
		default:
			walk(x)
		}
	}
}

// PublicViews GETs what the public /v1 routes show an anonymous client:
// the appointment types and, for each of typeIDs, the timeslots the board
// reads (includeHeld=true) from from for days. It answers the bodies.
func (k *Kit) PublicViews(typeIDs []string, from string, days int) ([][]byte, error) {
	a := k.Do(http.MethodGet, "/v1/appointment-types", nil)
	if a.Err != nil || a.Status != http.StatusOK {
		return nil, fmt.Errorf("appointment types: %s", a)
	}
	out := [][]byte{a.Body}
	for _, id := range typeIDs {
		for _, held := range []string{"&includeHeld=true", ""} {
			p := "/v1/appointment-types/" + url.PathEscape(id) + "/timeslots?from=" + from + "&days=" + strconv.Itoa(days) + held
			a := k.Do(http.MethodGet, p, nil)
			if a.Err != nil || a.Status != http.StatusOK {
				return nil, fmt.Errorf("timeslots: %s", a)
			}
			out = append(out, a.Body)
		}
	}
	return out, nil
}

// HeldSlot is a (specialist, start) a stream showed held.
type HeldSlot struct {
	TypeID, SpecialistID, Start string
}

// Targets is what the replay sends.
type Targets struct {
	// TypeIDs are the appointment types whose /book is tried.
	TypeIDs []string
	// Values are the harvested values: each is tried as holdId,
	// appointmentId and streamToken.
	Values []string
	// ClientIDs are tried as clientId with each value (the spy's own, the
	// values that look like ids, and any known to the test).
	ClientIDs []string
	// Held are slots streams showed held: POST /v1/holds is tried on each
	// with every clientId (a clientId proves nothing: no hold handed out).
	Held []HeldSlot
	// PatientGUID, when set, goes into /book (a Cloud9-sourced type needs
	// one before it looks at the hold).
	PatientGUID string
}

// Result counts the replay.
type Result struct {
	Attempts int
	Accepted []string       // the accepted requests (none, or the attack worked)
	ByRoute  map[string]int // attempts per route
	// Unexpected are answers no refusal of the route gives (a 5xx, a
	// transport error, another route's answer): the attempt proved nothing.
	Unexpected []string
}

// job is one replayed request and what would make it accepted.
type job struct {
	route, method, path string
	body                any
	accepted            func(Answer) bool
}

// refusals are each route's answers that refuse (or, for a release, find
// nothing to release) — and its acceptances; anything else is unexpected.
var refusals = map[string][]int{
	"PATCH /v1/holds":                      {200, 400}, // 200 {ok:false}: no such live hold (docs/holds.md)
	"DELETE /v1/holds/{holdId}":            {200, 400, 404, 409},
	"POST /v1/appointment-types/{id}/book": {201, 202, 400, 404, 409, 422},
	"DELETE /v1/holds/stream":              {204, 400},
	"DELETE /v1/appointments/{id}":         {200, 400, 404},
	"POST /v1/holds (held slot)":           {201, 400, 404, 409, 429},
}

func status(codes ...int) func(Answer) bool {
	return func(a Answer) bool { return slices.Contains(codes, a.Status) }
}

// Kept reports whether a answers a heartbeat (PATCH /v1/holds) that
// extended a hold: 200 {ok:true}. The web face (docs/holds.md) answers a
// hold it did not find 200 {ok:false}, so the status alone says nothing.
func Kept(a Answer) bool {
	var r struct{ OK bool }
	return a.Status == http.StatusOK && json.Unmarshal(a.Body, &r) == nil && r.OK
}

func released(a Answer) bool {
	var r struct{ Released bool }
	return a.Status == http.StatusOK && json.Unmarshal(a.Body, &r) == nil && r.Released
}

func never(Answer) bool { return false }

// jobs are the requests of t (see Replay).
func (t Targets) jobs() []job {
	var jobs []job
	add := func(route, method, path string, body any, ok func(Answer) bool) {
		jobs = append(jobs, job{route, method, path, body, ok})
	}
	for _, v := range t.Values {
		add("DELETE /v1/appointments/{id}", http.MethodDelete, "/v1/appointments/"+url.PathEscape(v), nil, status(200))
		for _, c := range t.ClientIDs {
			add("PATCH /v1/holds", http.MethodPatch, "/v1/holds", map[string]string{"holdId": v, "clientId": c}, Kept)
			add("DELETE /v1/holds/{holdId}", http.MethodDelete, "/v1/holds/"+url.PathEscape(v)+"?clientId="+url.QueryEscape(c), nil, released)
			for _, ty := range t.TypeIDs {
				body := map[string]string{"holdId": v, "clientId": c}
				if t.PatientGUID != "" {
					body["patientGUID"] = t.PatientGUID
				}
				add("POST /v1/appointment-types/{id}/book", http.MethodPost, "/v1/appointment-types/"+url.PathEscape(ty)+"/book", body, status(201, 202))
			}
			add("DELETE /v1/holds/stream", http.MethodDelete, "/v1/holds/stream?clientId="+url.QueryEscape(c)+"&streamToken="+url.QueryEscape(v), nil, never)
		}
	}
	for _, h := range t.Held {
		for _, c := range t.ClientIDs {
			add("POST /v1/holds (held slot)", http.MethodPost, "/v1/holds",
				map[string]string{"appointmentTypeId": h.TypeID, "slotStartDate": h.Start, "specialistId": h.SpecialistID, "clientId": c}, status(201))
		}
	}
	return jobs
}

// Replay sends every target: PATCH /v1/holds, DELETE /v1/holds/{v},
// POST /v1/appointment-types/{t}/book, DELETE /v1/holds/stream and POST
// /v1/holds (on held slots) with every (value, clientId), DELETE
// /v1/appointments/{v} with every value. An answer that says it acted is
// accepted: 200 ok:true heartbeat, released:true, 201/202 booking or hold, 200
// cancel. DELETE /v1/holds/stream answers 204 whatever it did: the
// caller checks the victims' streams. conc requests at a time.
func (k *Kit) Replay(t Targets, conc int) Result {
	res := Result{ByRoute: map[string]int{}}
	var mu sync.Mutex
	ch := make(chan job)
	var wg sync.WaitGroup
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				a := k.Do(j.method, j.path, j.body)
				mu.Lock()
				res.Attempts++
				res.ByRoute[j.route]++
				switch {
				case a.Err != nil || !slices.Contains(refusals[j.route], a.Status):
					res.Unexpected = append(res.Unexpected, a.String())
				case j.accepted(a):
					res.Accepted = append(res.Accepted, a.String())
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range t.jobs() {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return res
}

// IDLike reports whether v can be an id of the holds routes (1–200
// characters without ':', '{', '}' or white space): other values are
// refused 400 before any lookup, so the replay tries them once as a
// clientId (with the spy's own) rather than with every value.
func IDLike(v string) bool {
	return v != "" && len(v) <= 200 && !strings.ContainsAny(v, ":{} \t\r\n/?#%")
}

// Values turns a harvest into the replay's values, sorted: each value as
// seen, and, for a "ref-…" value, its tail (an attacker's first guess).
func Values(seen map[string]bool) []string {
	out := map[string]bool{}
	for v := range seen {
		out[v] = true
		if tail, ok := strings.CutPrefix(v, "ref-"); ok {
			out[tail] = true
		}
	}
	vals := make([]string, 0, len(out))
	for v := range out {
		if v != "" {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	return vals
}

// HeldSlots are the (type, specialist, start) of the hold events in evs.
func HeldSlots(evs []map[string]any) []HeldSlot {
	seen := map[HeldSlot]bool{}
	var out []HeldSlot
	for _, m := range evs {
		if m["type"] != "hold" {
			continue
		}
		h := HeldSlot{TypeID: str(m["appointmentTypeId"]), SpecialistID: str(m["specialistId"]), Start: str(m["slotStartDate"])}
		if h.TypeID != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
