package declared_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/buffer/declared"
)

// circuit is type typ's breaker as Circuits lists it.
func circuit(t *testing.T, b *buffer.Buffer, typ string) contracts.BufferCircuit {
	t.Helper()
	for _, c := range b.Circuits() {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no breaker for %s in %+v", typ, b.Circuits())
	return contracts.BufferCircuit{}
}

// A header name or value that HTTP cannot carry is a load error, each at
// its line, the value checked after ${ENV} expansion and never echoed.
func TestInvalidHeadersRefusedAtLoad(t *testing.T) {
	src := "handlers:\n  - type: a\n    url: http://x/\n    headers:\n      X(Bad): v\n      X-Token: ${TOKEN}\n      X-Ok: fine\n"
	_, err := declared.Parse("h.yaml", []byte(src), declared.Options{Getenv: func(string) (string, bool) { return "s3cret\r\nX-Evil: 1", true }})
	var le *declared.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Len(t, le.Problems, 2, err.Error())
	require.Contains(t, err.Error(), `h.yaml:5: header name "X(Bad)" is not valid`)
	require.Contains(t, err.Error(), `h.yaml:6: header X-Token: the value (after ${NAME} expansion) holds CR, LF`)
	require.NotContains(t, err.Error(), "s3cret")
}

// A correlationId that cannot be an X-Correlation-Id header is refused at
// enqueue: 400 INVALID_MESSAGE naming the field and the reason.
func TestCorrelationIDWithCRLFRefusedAtEnqueue(t *testing.T) {
	tg := newTarget(t, status(200, `{}`))
	b, _ := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n", nil)
	for _, bad := range []string{"abc\r\nX-Evil: 1", "a\nb", "nul\x00"} {
		_, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "t", Payload: json.RawMessage(`{}`),
			Metadata: contracts.BufferMetadata{CorrelationID: bad}})
		var ce *contracts.Error
		require.True(t, errors.As(err, &ce), "%q: %v", bad, err)
		require.Equal(t, contracts.CodeInvalidMessage, ce.Code)
		require.Equal(t, "metadata.correlationId", ce.Details["field"])
		require.Equal(t, "invalid_header_value", ce.Details["reason"])
	}
	e, err := b.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "t", Payload: json.RawMessage(`{}`),
		Metadata: contracts.BufferMetadata{CorrelationID: "corr-1\ttabbed é"}})
	require.NoError(t, err, "a tab and non-ASCII are valid header values")
	settle(t, b, e.MessageID, contracts.BufferCompleted)
	require.Equal(t, "corr-1\ttabbed é", tg.seen()[0].header.Get("X-Correlation-Id"))
}

// A request that cannot be built (here a spec that bypassed the load
// checks) dead-letters at its first attempt with REQUEST_INVALID and a
// clear reason, and does not count toward the breaker (threshold 1).
func TestUnbuildableRequestIsFinalAndSparesTheBreaker(t *testing.T) {
	tg := newTarget(t, status(200, `{}`))
	b, set := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n    maxRetries: 3\n    circuitBreaker: {threshold: 1}\n", nil)
	sp := *set.Spec("t")
	sp.Headers = map[string]string{"X-Injected": "a\r\nb"}
	set.Swap(&declared.File{Specs: []*declared.Spec{&sp}})
	var ids []string
	for range 3 {
		ids = append(ids, enqueue(t, b, "t", `{}`))
	}
	for _, id := range ids {
		m := settle(t, b, id, contracts.BufferDLQ)
		require.Len(t, m.Errors, 1, "never retried")
		require.Equal(t, buffer.CodeRequestInvalid, m.Errors[0].Code)
		require.Contains(t, m.Errors[0].Message, "header X-Injected has a value with CR, LF")
	}
	require.Empty(t, tg.seen(), "nothing was sent")
	c := circuit(t, b, "t")
	require.Equal(t, "CLOSED", c.State)
	require.Zero(t, c.TotalFailures)
}

// 429s are retried (after Retry-After when given) but are not breaker
// failures: five in a row with threshold 2 leave it CLOSED.
func TestTooManyRequestsDoesNotOpenTheBreaker(t *testing.T) {
	tg := newTarget(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 5 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	b, _ := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n    maxRetries: 6\n    backoff: {base: 10ms, max: 20ms}\n    circuitBreaker: {threshold: 2, timeout: 1m}\n", nil)
	m := settle(t, b, enqueue(t, b, "t", `{}`), contracts.BufferCompleted)
	require.Equal(t, 6, m.AttemptCount)
	require.Len(t, tg.seen(), 6)
	c := circuit(t, b, "t")
	require.Equal(t, "CLOSED", c.State)
	require.Zero(t, c.TotalFailures)
	for _, e := range m.Errors {
		require.Equal(t, "HTTP_429", e.Code, "no CIRCUIT_OPEN deferral in between")
	}
}

// A 2xx answer over 1 MiB completes the message with the answer's
// beginning and resultTruncated: the work was done.
func TestOversizedAnswerCompletesTruncated(t *testing.T) {
	big := strings.Repeat("é", 1<<19) + "tail" // 1 MiB + 4 bytes; a 2-byte rune falls on the cut
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("x" + big)) })
	small := newTarget(t, status(200, `{"n":1}`))
	b, _ := run(t, "handlers:\n  - type: big\n    url: "+tg.URL+"\n  - type: small\n    url: "+small.URL+"\n", nil)
	m := settle(t, b, enqueue(t, b, "big", `{}`), contracts.BufferCompleted)
	require.True(t, m.ResultTruncated)
	var got string
	require.NoError(t, json.Unmarshal(m.Result, &got))
	require.Equal(t, (1<<20)-1, len(got), "cut at 1 MiB, less the split rune")
	require.True(t, strings.HasPrefix("x"+big, got))
	require.Len(t, tg.seen(), 1, "not retried")
	require.Empty(t, m.Errors)

	m = settle(t, b, enqueue(t, b, "small", `{}`), contracts.BufferCompleted)
	require.False(t, m.ResultTruncated)
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "resultTruncated", "absent unless set")
}

// A handlers file over 1 MiB or 1,000 types is refused before it is
// parsed, with the figure.
func TestHandlersFileBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte("handlers:\n"+strings.Repeat("# padding\n", (1<<20)/10+1)), 0o600))
	_, err := declared.Load(big, declared.Options{})
	require.ErrorContains(t, err, "big.yaml: the file is 1048590 bytes, over 1048576 (1 MiB)")
	_, err = declared.Parse("p.yaml", make([]byte, declared.MaxFileBytes+1), declared.Options{})
	require.ErrorContains(t, err, "over 1048576 (1 MiB)")

	var many strings.Builder
	many.WriteString("handlers:\n")
	for i := range declared.MaxTypes + 1 {
		fmt.Fprintf(&many, "  - {type: t%d, url: \"http://x/\"}\n", i)
	}
	path := filepath.Join(dir, "many.yaml")
	require.NoError(t, os.WriteFile(path, []byte(many.String()), 0o600))
	_, err = declared.Load(path, declared.Options{})
	var le *declared.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, []declared.Problem{{Line: 2, Msg: "handlers declares 1001 types, over 1000, the most a handlers file may declare"}}, le.Problems)

	at := strings.Index(many.String(), "  - {type: t1000")
	f, err := declared.Parse("ok.yaml", []byte(many.String()[:at]), declared.Options{})
	require.NoError(t, err)
	require.Len(t, f.Specs, declared.MaxTypes, "exactly the bound is fine")
}

// visibilityTimeout: per type, at least timeout + 10 s, 30 s by default;
// it is the Asynq task's timeout of the type's messages. concurrency: sets
// the type's bulkhead.
func TestVisibilityTimeoutAndConcurrencyPerType(t *testing.T) {
	_, err := declared.Parse("h.yaml", []byte("handlers:\n  - type: d\n    url: http://x/\n    timeout: 10s\n    visibilityTimeout: 15s\n  - type: e\n    url: http://x/\n    visibilityTimeout: 13h\n    concurrency: 0\n"), declared.Options{})
	require.ErrorContains(t, err, `h.yaml:5: handler "d": visibilityTimeout 15s must be at least timeout + 10s (20s)`)
	require.ErrorContains(t, err, "h.yaml:8: visibilityTimeout must be at most 12h0m0s")
	require.ErrorContains(t, err, "h.yaml:9: concurrency must be an integer 1..64000")

	tg := newTarget(t, status(200, `{}`))
	b, set := run(t, "handlers:\n  - type: a\n    url: "+tg.URL+"\n    timeout: 5s\n"+
		"  - type: b\n    url: "+tg.URL+"\n    timeout: 25s\n"+
		"  - type: c\n    url: "+tg.URL+"\n    visibilityTimeout: 2m\n    concurrency: 3\n", nil)
	want := map[string]time.Duration{"a": 30 * time.Second, "b": 35 * time.Second, "c": 2 * time.Minute}
	for typ, vt := range want {
		require.Equal(t, vt, set.Spec(typ).Visibility, typ)
		require.Equal(t, vt, set.Handler(typ).VisibilityTimeout(), typ)
		id := enqueue(t, b, typ, `{}`)
		settle(t, b, id, contracts.BufferCompleted)
		info, err := b.Runtime().Inspector.GetTaskInfo(buffer.QueueFor(contracts.BufferPriorityNormal), id)
		require.NoError(t, err)
		require.Equal(t, vt, info.Timeout, "the task of a %s message", typ)
	}
	require.Equal(t, 3, set.Handler("c").MaxConcurrency())
	require.Equal(t, 0, set.Handler("a").MaxConcurrency(), "the buffer's default")
}

// A type dropped from the file defers its messages (no attempt, nothing
// sent, nothing dead-lettered) for the grace; declared again, they run.
// Past the grace they are dead-lettered with HANDLER_NOT_FOUND.
func TestRemovedTypeDefersForTheGrace(t *testing.T) {
	tg := newTarget(t, status(200, `{}`))
	b, set := run(t, "handlers:\n  - type: t\n    url: "+tg.URL+"\n  - type: other\n    url: "+tg.URL+"\n", nil)
	full := &declared.File{Specs: []*declared.Spec{set.Spec("t"), set.Spec("other")}}
	without := &declared.File{Specs: []*declared.Spec{set.Spec("other")}}

	set.SetRemovedGrace(time.Minute)
	require.Empty(t, set.Swap(without))
	require.Contains(t, set.Removed(), "t")
	var ids []string
	for range 20 {
		ids = append(ids, enqueue(t, b, "t", `{}`))
	}
	time.Sleep(700 * time.Millisecond) // each was dequeued and deferred (a tenth of the grace, at most 5 s)
	for _, id := range ids {
		m, err := b.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, contracts.BufferPending, m.State, id)
		require.Zero(t, m.AttemptCount, "no attempt counted")
	}
	require.Empty(t, tg.seen())

	require.Equal(t, []string{"t"}, set.Swap(full), "declared again")
	require.NotContains(t, set.Removed(), "t")
	for _, id := range ids {
		m := settle(t, b, id, contracts.BufferCompleted)
		require.Equal(t, 1, m.AttemptCount)
	}
	require.Len(t, tg.seen(), 20)

	set.SetRemovedGrace(300 * time.Millisecond)
	set.Swap(without)
	m := settle(t, b, enqueue(t, b, "t", `{}`), contracts.BufferDLQ)
	require.Equal(t, string(contracts.CodeHandlerNotFound), m.LastError.Code)
	require.Contains(t, m.LastError.Message, "past the grace of 300ms (BUFFER_REMOVED_TYPE_GRACE)")
	require.Len(t, tg.seen(), 20)
	require.Equal(t, "CLOSED", circuit(t, b, "t").State)
}
