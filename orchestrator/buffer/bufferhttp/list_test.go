package bufferhttp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// list GETs /api/buffer/messages with query and decodes the page.
func (e *env) list(t *testing.T, query string) contracts.BufferMessageList {
	t.Helper()
	st, _, raw := e.do(t, "GET", "/api/buffer/messages?"+query, "")
	require.Equal(t, 200, st, string(raw))
	var l contracts.BufferMessageList
	require.NoError(t, json.Unmarshal(raw, &l), string(raw))
	return l
}

func (e *env) put(t *testing.T, typ string, prio int, payload string) string {
	t.Helper()
	p := contracts.BufferPriority(prio)
	m, err := e.buf.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: typ, Priority: &p, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return m.MessageID
}

func (e *env) await(t *testing.T, id string, state contracts.BufferState) *buffer.Message {
	t.Helper()
	var m *buffer.Message
	require.Eventually(t, func() bool {
		var err error
		m, err = e.buf.Get(context.Background(), id)
		return err == nil && m.State == state
	}, 10*time.Second, 20*time.Millisecond, "%s never reached %s", id, state)
	return m
}

func ids(l contracts.BufferMessageList) []string {
	out := []string{}
	for _, m := range l.Items {
		out = append(out, m.MessageID)
	}
	return out
}

func TestListMessagesByStateTypeAndPriority(t *testing.T) {
	// A retried message waits an hour: it stays in "retry".
	e := setup(t, func(c *buffer.Config) { c.Backoff = buffer.Backoff{Base: time.Hour, Multiplier: 2, Max: time.Hour} })
	require.NoError(t, e.buf.RegisterLive(buffer.Func{Base: buffer.Base{Name: "sms"},
		Fn: func(context.Context, *buffer.Message) (any, error) { return map[string]int{"ok": 1}, nil }}))

	var done []string
	for i := 0; i < 3; i++ {
		done = append(done, e.put(t, "email", 0, `{"to":"a@x"}`))
	}
	done = append(done, e.put(t, "sms", 3, `{}`), e.put(t, "sms", 3, `{}`))
	dead := e.put(t, "email", 2, `{"to":"d@x","fail":422}`)
	retry := e.put(t, "email", 1, `{"to":"r@x","fail":503}`)
	active := e.put(t, "email", 2, `{"to":"w@x","wait":true}`)
	for _, id := range done {
		e.await(t, id, contracts.BufferCompleted)
	}
	e.await(t, dead, contracts.BufferDLQ)
	require.Eventually(t, func() bool { return len(e.list(t, "state=retry").Items) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(e.list(t, "state=active").Items) == 1 }, 10*time.Second, 20*time.Millisecond)

	require.ElementsMatch(t, done, ids(e.list(t, "state=completed")))
	require.ElementsMatch(t, done[3:], ids(e.list(t, "state=completed&type=sms")))
	require.ElementsMatch(t, done[:3], ids(e.list(t, "state=completed&priority=0")))
	require.ElementsMatch(t, done[3:], ids(e.list(t, "state=completed&priority=low")))
	require.Empty(t, e.list(t, "state=completed&priority=low&type=email").Items)
	require.Empty(t, e.list(t, "state=pending").Items)
	require.Equal(t, []string{active}, ids(e.list(t, "state=active")))

	r := e.list(t, "state=retry&type=email")
	require.Equal(t, []string{retry}, ids(r))
	require.Len(t, r.Items[0].Errors, 1)
	require.Equal(t, 1, r.Items[0].Errors[0].AttemptNumber)
	require.Contains(t, r.Items[0].Errors[0].Message, "503")

	d := e.list(t, "state=dead")
	require.Equal(t, []string{dead}, ids(d))
	require.Equal(t, contracts.BufferDLQ, d.Items[0].State)
	require.Len(t, d.Items[0].Errors, 1)
	require.Contains(t, d.Items[0].Errors[0].Message, "422")

	c := e.list(t, "state=completed&type=email")
	require.Len(t, c.Items, 3)
	require.JSONEq(t, `{"sentTo":"a@x"}`, string(c.Items[0].Result))
}

func TestListPagesAcrossQueues(t *testing.T) {
	e := setup(t, nil)
	var all []string
	for i := 0; i < 7; i++ {
		all = append(all, e.put(t, "email", i%4, `{"to":"p@x"}`))
	}
	for _, id := range all {
		e.await(t, id, contracts.BufferCompleted)
	}
	var seen []string
	cursor, pages := "", 0
	for {
		l := e.list(t, "state=completed&limit=3&cursor="+url.QueryEscape(cursor))
		require.LessOrEqual(t, len(l.Items), 3)
		seen = append(seen, ids(l)...)
		pages++
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
		require.Less(t, pages, 10)
	}
	require.ElementsMatch(t, all, seen, "every message once across the pages")
	require.GreaterOrEqual(t, pages, 3)
	// Priorities come CRITICAL first.
	first := e.list(t, "state=completed&limit=2")
	require.Equal(t, contracts.BufferPriority(0), first.Items[0].Priority)
}

func TestListRefusesBadParameters(t *testing.T) {
	e := setup(t, nil)
	other := e.list(t, "state=completed&limit=1") // no messages: no cursor; make one by hand below
	require.Empty(t, other.NextCursor)
	for _, c := range []struct{ query, field string }{
		{"", "state"},
		{"state=bogus", "state"},
		{"state=dead&limit=0", "limit"},
		{"state=dead&limit=abc", "limit"},
		{"state=dead&limit=501", "limit"},
		{"state=dead&priority=9", "priority"},
		{"state=dead&priority=urgent", "priority"},
		{"state=dead&cursor=%21%21", "cursor"},
		{"state=dead&cursor=" + url.QueryEscape(pagesCursor("completed")), "cursor"}, // another state's cursor
		// Forged scores ParseFloat takes and Redis refuses (they read 503
		// PERSISTENCE_FAILURE before), or that List never writes.
		{"state=completed&cursor=" + base64URL(`{"s":"completed","q":0,"sc":"NaN","id":"x"}`), "cursor"},
		{"state=completed&cursor=" + base64URL(`{"s":"completed","q":0,"sc":"Inf","id":"x"}`), "cursor"},
		{"state=completed&cursor=" + base64URL(`{"s":"completed","q":0,"sc":"0x1p-2","id":"x"}`), "cursor"},
		{"state=completed&cursor=" + base64URL(`{"s":"completed","q":0,"sc":"1.50","id":"x"}`), "cursor"},
	} {
		st, _, raw := e.do(t, "GET", "/api/buffer/messages?"+c.query, "")
		require.Equal(t, 400, st, "%s: %s", c.query, raw)
		code, det := errCode(t, raw)
		require.Equal(t, string(contracts.CodeInvalid), code, c.query)
		require.Equal(t, c.field, det["field"], "%s: %s", c.query, raw)
	}
	// A filter the listing does not know is refused, never ignored.
	for _, q := range []string{"/api/buffer/messages?state=pending&companyId=c-1", "/api/buffer/dlq?companyId=c-1&limit=5"} {
		st, _, raw := e.do(t, "GET", q, "")
		require.Equal(t, 400, st, "%s: %s", q, raw)
		code, det := errCode(t, raw)
		require.Equal(t, string(contracts.CodeInvalid), code, q)
		require.Equal(t, "companyId", det["field"], q)
		require.Equal(t, "unknown_parameter", det["reason"], q)
	}
	st, _, _ := e.do(t, "GET", "/api/buffer/messages?state=dead", "", "Bearer wrong-token-0123456789")
	require.Equal(t, 401, st)
}

// pagesCursor is a cursor of state (the format is opaque to clients; the
// test builds one to check a cursor is bound to its state).
func pagesCursor(state string) string {
	return base64URL(`{"s":"` + state + `","q":0}`)
}

func TestErrorHistoryKeptAcrossReplay(t *testing.T) {
	e := setup(t, nil)
	id := e.put(t, "email", 2, `{"to":"h@x","fail":500}`) // Retries 1: two attempts, then dead
	m := e.await(t, id, contracts.BufferDLQ)
	require.Len(t, m.Errors, 2)
	require.Equal(t, []int{1, 2}, []int{m.Errors[0].AttemptNumber, m.Errors[1].AttemptNumber})

	st, _, raw := e.do(t, "POST", "/api/buffer/dlq/"+id+"/replay", "")
	require.Equal(t, 200, st, string(raw))
	require.Eventually(t, func() bool {
		m, _ = e.buf.Get(context.Background(), id)
		return m != nil && m.State == contracts.BufferDLQ && len(m.Errors) > 2
	}, 10*time.Second, 20*time.Millisecond, "the replayed message did not fail again")
	l := e.list(t, "state=dead")
	require.Equal(t, []string{id}, ids(l))
	hist := l.Items[0].Errors
	require.Greater(t, len(hist), 2, "the history before the replay is kept")
	require.Equal(t, 1, hist[0].AttemptNumber)
	for _, h := range hist {
		require.Contains(t, h.Message, "500")
		require.False(t, h.Timestamp.IsZero())
	}
}

func base64URL(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
