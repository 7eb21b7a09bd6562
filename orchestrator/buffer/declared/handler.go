package declared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// Bounds of what a target's answer may be.
const (
	maxAnswer     = 1 << 20 // bytes of a 2xx body kept as the result (beyond: kept cut, resultTruncated)
	maxErrBody    = 512     // bytes of a failed answer kept in the error
	maxRetryAfter = time.Hour
)

// RetryAfterError is a 429 whose Retry-After named the next delay.
type RetryAfterError struct {
	*buffer.StatusError
	After time.Duration
}

func (e *RetryAfterError) Unwrap() error { return e.StatusError }

// DefaultRemovedGrace is how long the messages of a type dropped from the
// file wait for it to come back before they are dead-lettered
// (BUFFER_REMOVED_TYPE_GRACE).
const DefaultRemovedGrace = 10 * time.Minute

// CodeHandlerRemoved is the reason of a message deferred because its type
// left the file (within the grace).
const CodeHandlerRemoved = "HANDLER_REMOVED"

// Set holds the current file's specs; its handlers read them per attempt.
type Set struct {
	specs    atomic.Pointer[map[string]*Spec]
	fallback buffer.Backoff
	client   *http.Client
	now      func() time.Time

	grace   atomic.Int64 // time.Duration: SetRemovedGrace
	mu      sync.Mutex   // removed
	removed map[string]time.Time
}

// NewSet returns a Set serving f. fallback is the buffer's backoff (for a
// type that names none); client nil: a plain client (each attempt's
// context bounds it). Whatever client it is given, a Set never follows a
// redirect (hmacsig.NoRedirect): a 3xx dead-letters the message.
func NewSet(f *File, fallback buffer.Backoff, client *http.Client, now func() time.Time) *Set {
	client = hmacsig.NoRedirect(client)
	if now == nil {
		now = time.Now
	}
	if fallback == (buffer.Backoff{}) {
		fallback = buffer.Backoff{Base: buffer.DefaultBackoffBase, Multiplier: buffer.DefaultBackoffMultiplier, Max: buffer.DefaultBackoffMax}
	}
	s := &Set{fallback: fallback, client: client, now: now, removed: map[string]time.Time{}}
	s.grace.Store(int64(DefaultRemovedGrace))
	s.Swap(f)
	return s
}

// SetRemovedGrace sets how long a type dropped from the file defers its
// messages (default DefaultRemovedGrace; 0: none, they are dead-lettered
// at their next attempt).
func (s *Set) SetRemovedGrace(d time.Duration) { s.grace.Store(int64(max(d, 0))) }

// Swap makes f current and returns the types it declares that the
// previous file did not (to register). A type the previous file declared
// and f does not is removed from now: its messages are deferred for the
// grace, then dead-lettered; declared again, they run.
func (s *Set) Swap(f *File) (added []string) {
	m := make(map[string]*Spec, len(f.Specs))
	for _, sp := range f.Specs {
		m[sp.Type] = sp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.specs.Swap(&m)
	for _, sp := range f.Specs {
		delete(s.removed, sp.Type)
		if old == nil || (*old)[sp.Type] == nil {
			added = append(added, sp.Type)
		}
	}
	if old != nil {
		for typ := range *old {
			if m[typ] == nil {
				s.removed[typ] = s.now()
			}
		}
	}
	return added
}

// Removed lists the types removed from the file (not declared again) with
// the time each was removed.
func (s *Set) Removed() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.removed)
}

// absent answers an attempt of a type the current file does not declare:
// a deferral while its removal is within the grace, else HANDLER_NOT_FOUND.
func (s *Set) absent(typ string) error {
	s.mu.Lock()
	at, ok := s.removed[typ]
	s.mu.Unlock()
	grace := time.Duration(s.grace.Load())
	if !ok {
		return &buffer.CodedError{Code: string(contracts.CodeHandlerNotFound), Err: ErrRemoved}
	}
	if gone := s.now().Sub(at); gone < grace {
		// Checked again every tenth of the grace (50 ms..5 s): a type
		// declared again resumes within that.
		return asynqrt.Defer(min(max(grace/10, 50*time.Millisecond), 5*time.Second), CodeHandlerRemoved)
	}
	return &buffer.CodedError{Code: string(contracts.CodeHandlerNotFound),
		Err: fmt.Errorf("%w: removed %s ago, past the grace of %s (BUFFER_REMOVED_TYPE_GRACE)", ErrRemoved, s.now().Sub(at).Round(time.Millisecond), grace)}
}

// Spec is a type's current target; nil when the current file has none.
func (s *Set) Spec(typ string) *Spec {
	m := s.specs.Load()
	if m == nil {
		return nil
	}
	return (*m)[typ]
}

// Handler returns the handler of a type (it follows reloads).
func (s *Set) Handler(typ string) *Handler { return &Handler{Base: buffer.Base{Name: typ}, set: s} }

// Handler is one declared type's buffer.Handler (and its retry policy and
// breaker settings).
type Handler struct {
	buffer.Base
	set *Set
}

// Timeout implements buffer.Handler.
func (h *Handler) Timeout() time.Duration {
	if sp := h.set.Spec(h.Name); sp != nil {
		return sp.Timeout
	}
	return DefaultTimeout
}

// VisibilityTimeout implements buffer.VisibilityTimeouter: the type's
// visibilityTimeout.
func (h *Handler) VisibilityTimeout() time.Duration {
	if sp := h.set.Spec(h.Name); sp != nil {
		return sp.Visibility
	}
	return 0
}

// MaxConcurrency implements buffer.ConcurrencyCapper: the type's
// concurrency (0: the buffer's).
func (h *Handler) MaxConcurrency() int {
	if sp := h.set.Spec(h.Name); sp != nil {
		return sp.Concurrency
	}
	return 0
}

// MaxRetries implements buffer.Handler.
func (h *Handler) MaxRetries() int {
	if sp := h.set.Spec(h.Name); sp != nil {
		return sp.Retries
	}
	return buffer.Unset
}

// Circuit implements buffer.CircuitSettings.
func (h *Handler) Circuit() buffer.CircuitConfig {
	if sp := h.set.Spec(h.Name); sp != nil {
		return sp.Circuit
	}
	return buffer.CircuitConfig{}
}

// RetryDelay implements asynqrt.RetryPolicy: a 429's Retry-After, else
// the type's backoff. Asynq keeps a retry's time in whole seconds (the
// fraction is dropped), so Retry-After gets one more second: the retry
// never comes before the receiver asked.
func (h *Handler) RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After + time.Second
	}
	if sp := h.set.Spec(h.Name); sp != nil && sp.Backoff != (buffer.Backoff{}) {
		return sp.Backoff.Delay(n)
	}
	return h.set.fallback.Delay(n)
}

// HonoursContext implements buffer.ContextHonourer: the request, and the
// reading of its answer, take the attempt's context.
func (*Handler) HonoursContext() bool { return true }

// Process sends the message to the type's target.
func (h *Handler) Process(ctx context.Context, m *buffer.Message) (any, error) {
	sp := h.set.Spec(h.Name)
	if sp == nil {
		return nil, h.set.absent(h.Name)
	}
	req, err := h.request(ctx, sp, m)
	if err != nil {
		return nil, err
	}
	res, err := h.set.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", sp.Method, sp.URL, err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, h.failure(res)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", sp.Method, sp.URL, err)
	}
	if len(raw) > maxAnswer {
		// The target did the work: complete, keeping the beginning (a
		// dead letter's replay would repeat the work).
		size := res.ContentLength
		if size <= maxAnswer {
			size = -1
		}
		return buffer.TruncatedResult{Value: string(cutUTF8(raw[:maxAnswer])), Size: size}, nil
	}
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return nil, nil
	case json.Valid(t):
		return json.RawMessage(t), nil
	}
	return string(raw), nil
}

// cutUTF8 drops the bytes of a rune that b cut in two at its end.
func cutUTF8(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// request builds and signs the attempt's request; one that cannot be
// built is buffer.RequestInvalid.
func (h *Handler) request(ctx context.Context, sp *Spec, m *buffer.Message) (*http.Request, error) {
	body := []byte(m.Payload)
	if sp.Body == BodyMessage {
		var err error
		if body, err = json.Marshal(m); err != nil {
			return nil, &buffer.CodedError{Code: "INVALID_MESSAGE", Err: err}
		}
	}
	var rd io.Reader
	if sp.Method == http.MethodGet {
		body = nil // a GET sends no body, so its signature covers none
	} else {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, sp.Method, sp.URL, rd)
	if err != nil {
		return nil, buffer.RequestInvalid("%s %s: %v", sp.Method, sp.URL, err)
	}
	for k, v := range sp.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hmacsig.HeaderMessageID, m.MessageID)
	req.Header.Set(hmacsig.HeaderAttempt, strconv.Itoa(m.AttemptCount))
	req.Header.Set("X-Buffer-Type", m.Type)
	if m.Metadata.CorrelationID != "" {
		req.Header.Set("X-Correlation-Id", m.Metadata.CorrelationID)
	}
	for name, vs := range req.Header {
		for _, v := range vs {
			if !buffer.ValidHeaderValue(v) {
				// net/http would refuse it as a transport error, which
				// reads as a network failure: retried, and counted by the breaker.
				return nil, buffer.RequestInvalid("header %s has a value with CR, LF or another control character", name)
			}
		}
	}
	if sp.Secret != nil {
		if sp.Version == 2 {
			hmacsig.SignRequestV2(req, sp.Secret, h.set.now(), body)
		} else {
			hmacsig.SignRequest(req, sp.Secret, h.set.now(), body)
		}
		hmacsig.SignDelivery(req.Header, sp.Secret, body)
	}
	return req, nil
}

// failure is the error of an answer that is not a 2xx.
func (h *Handler) failure(res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxErrBody))
	se := &buffer.StatusError{StatusCode: res.StatusCode, Body: string(raw)}
	if hmacsig.IsRedirect(res.StatusCode) {
		se.Location = hmacsig.Location(res.Header)
	}
	if res.StatusCode == http.StatusTooManyRequests {
		if d, ok := retryAfter(res.Header.Get("Retry-After"), h.set.now()); ok {
			return &RetryAfterError{StatusError: se, After: d}
		}
	}
	return se
}

// retryAfter reads Retry-After: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, false
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
		if d < 0 {
			d = 0
		}
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// OnError implements buffer.Handler: an HTTP answer is judged by its status
// alone (408, 429 and 5xx retried, other 4xx and every 3xx not: a redirect
// is never followed, so the message was not delivered and a retry would
// meet the same answer), whatever its body says; anything else by the
// buffer's classifier.
func (h *Handler) OnError(err error, _ *buffer.Message) bool {
	var se *buffer.StatusError
	if errors.As(err, &se) {
		return se.StatusCode >= 500 || se.StatusCode == http.StatusTooManyRequests || se.StatusCode == http.StatusRequestTimeout
	}
	return buffer.Retryable(err)
}
