package bufferhttp_test

import (
	"encoding/json"
	"testing"
)

// FuzzEnqueueBody: whatever the body, the answer is a 2xx or a 4xx/503
// with the flowgate envelope — never a 500 or a panic.
func FuzzEnqueueBody(f *testing.F) {
	for _, s := range []string{
		`{"type":"email","payload":{"to":"a"}}`, `{"messages":[{"type":"email","payload":{"to":"a"}},5,null]}`,
		`{"messages":{}}`, `{"messages":null,"type":"email"}`, `[]`, `"x"`, `{"type":"email","priority":-1}`,
		`{"type":"email","payload":{"to":"a"},"maxRetries":1e9}`, `{"type":"email","messageId":"../x"}`, `{`, ``,
	} {
		f.Add(s)
	}
	e := setup(f, nil)
	f.Fuzz(func(t *testing.T, body string) {
		st, _, raw := e.do(t, "POST", "/api/buffer/enqueue", body)
		if st >= 500 && st != 503 {
			t.Fatalf("status %d for %q: %s", st, body, raw)
		}
		if !json.Valid(raw) {
			t.Fatalf("answer is not JSON for %q: %s", body, raw)
		}
	})
}
