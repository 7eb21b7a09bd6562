package webhooks_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// Every refused request is answered with its 4xx and code, and changes
// nothing in the ledger.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1")
	b.claim(t, "vm-1", task.QueueID)
	fail := []byte(`{"queue_id":"` + task.QueueID + `","encounter_id":"enc-1","error_message":"boom"}`)
	before := b.snapshot(t)

	tooMany := make([]string, contracts.MaxBatchCreate+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"encounter_id":"batch-%d"}`, i)
	}
	huge := []byte(`{"queue_id":"` + task.QueueID + `","error_message":"` + strings.Repeat("x", taskhttptest.DefaultBodyLimit) + `"}`)

	cases := []struct {
		name   string
		path   string
		body   []byte
		opts   []taskhttptest.Option
		status int
		code   contracts.Code
		detail string // Details["reason"] of a 401, Details["field"] of a 400
		golden string
	}{
		{"forged signature", "/fail", fail, []taskhttptest.Option{taskhttptest.SigningBody([]byte(`{"queue_id":"x"}`))}, 401, contracts.CodeUnauthorized, "bad_signature", "error_unauthorized"},
		{"wrong secret", "/fail", fail, []taskhttptest.Option{taskhttptest.SignedWith([]byte("not-the-secret-0123456789"))}, 401, contracts.CodeUnauthorized, "bad_signature", ""},
		{"timestamp 301 s old", "/fail", fail, []taskhttptest.Option{taskhttptest.SignedAt(time.Now().Add(-301 * time.Second))}, 401, contracts.CodeUnauthorized, "expired", ""},
		{"timestamp 301 s ahead", "/webhook/fail", fail, []taskhttptest.Option{taskhttptest.SignedAt(time.Now().Add(301 * time.Second))}, 401, contracts.CodeUnauthorized, "expired", ""},
		{"missing headers", "/fail", fail, []taskhttptest.Option{taskhttptest.Unsigned()}, 401, contracts.CodeUnauthorized, "missing_headers", ""},
		{"missing signature", "/ack", fail, []taskhttptest.Option{taskhttptest.Header("X-Signature", "")}, 401, contracts.CodeUnauthorized, "missing_headers", ""},
		{"malformed JSON", "/fail", []byte(`{"queue_id":"` + task.QueueID + `",`), nil, 400, contracts.CodeInvalid, "", "error_malformed_json"},
		{"trailing data", "/ack", []byte(`{"queue_id":"` + task.QueueID + `"} {}`), nil, 400, contracts.CodeInvalid, "", ""},
		{"empty body", "/ack", []byte(` `), nil, 400, contracts.CodeInvalid, "", ""},
		{"no body", "/fail", nil, nil, 400, contracts.CodeInvalid, "", ""},
		{"queue_id a number", "/fail", []byte(`{"queue_id":5,"error_message":"boom"}`), nil, 400, contracts.CodeInvalid, "queue_id", "error_wrong_type"},
		{"error_message an object", "/fail", []byte(`{"queue_id":"` + task.QueueID + `","error_message":{"m":1}}`), nil, 400, contracts.CodeInvalid, "error_message", ""},
		{"body an array", "/ack", []byte(`["` + task.QueueID + `"]`), nil, 400, contracts.CodeInvalid, "(body)", ""},
		{"queue_id missing", "/ack", []byte(`{"encounter_id":"enc-1","experityActions":{}}`), nil, 400, contracts.CodeInvalid, "queue_id", ""},
		{"queue_id not a UUID", "/ack", []byte(`{"queue_id":"` + strings.Repeat("q", 500) + `"}`), nil, 400, contracts.CodeInvalid, "queue_id", ""},
		{"worker_id too long", "/fail", []byte(`{"queue_id":"` + task.QueueID + `","worker_id":"` + strings.Repeat("w", 300) + `"}`), nil, 400, contracts.CodeInvalid, "worker_id", ""},
		{"compressed body", "/fail", fail, []taskhttptest.Option{taskhttptest.Header("Content-Encoding", "gzip")}, 400, contracts.CodeInvalid, "Content-Encoding", ""},
		{"unknown queue_id", "/fail", []byte(`{"queue_id":"6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10","error_message":"boom"}`), nil, 404, contracts.CodeNotFound, "", ""},
		{"unknown queue_id ack", "/webhook/ack", []byte(`{"queue_id":"6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10"}`), nil, 404, contracts.CodeNotFound, "", ""},
		{"oversized body", "/fail", huge, nil, 413, contracts.CodeTooLarge, "", "error_too_large"},
		{"batch of 501", "/queue", []byte(`{"tasks":[` + strings.Join(tooMany, ",") + `]}`), nil, 400, contracts.CodeInvalid, "tasks", ""},
	}
	for _, tc := range cases {
		do := b.srv.Do
		if tc.status == 413 {
			do = b.srv.DoRaw // see DoRaw
		}
		r := do("POST", tc.path, tc.body, tc.opts...)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		env := r.Error(t, tc.status, tc.code)
		switch {
		case tc.status == 401:
			require.Equal(t, tc.detail, env.Error.Details["reason"], tc.name)
		case tc.detail != "":
			require.Equal(t, tc.detail, env.Error.Details["field"], "%s: %s", tc.name, r.Body)
		}
		if tc.golden != "" {
			taskhttptest.Golden(t, tc.golden, r.Body)
		}
		require.Equal(t, before, b.snapshot(t), "%s changed the ledger", tc.name)
	}
	require.Empty(t, b.follower.Calls(), "no FAIL reached the follower")

	// A replayed request: the first copy is processed, the second refused
	// before the ledger sees it (not a 409 from the ledger).
	at := time.Now()
	r := b.srv.Do("POST", "/fail", fail, taskhttptest.SignedAt(at))
	require.Equal(t, 200, r.Status, string(r.Body))
	after := b.snapshot(t)
	require.NotEqual(t, before, after)
	r = b.srv.Do("POST", "/fail", fail, taskhttptest.SignedAt(at))
	env := r.Error(t, 401, contracts.CodeUnauthorized)
	require.Equal(t, "replayed", env.Error.Details["reason"])
	require.Equal(t, after, b.snapshot(t))
	require.Len(t, b.follower.Calls(), 1)
}
