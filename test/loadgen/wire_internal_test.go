//go:build linux

package loadgen

import (
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	full := "HTTP/1.1 202 Accepted\r\nServer: x\r\nContent-Length: 5\r\n\r\nhello"
	for _, c := range []struct {
		in     string
		status int
		body   string
		used   int
		err    string
	}{
		{in: full, status: 202, body: "hello", used: len(full)},
		{in: full[:len(full)-2]}, // body incomplete
		{in: full[:20]},          // head incomplete
		{in: "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", status: 200, used: 38}, // another spelling
		{in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", err: "without Content-Length"},
		{in: "SSH-2.0-OpenSSH\r\n\r\n", err: "not an HTTP answer"},
		{in: "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", err: "status line"},
		{in: "HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n", err: "Content-Length"},
	} {
		status, body, used, err := parseAnswer([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || status != c.status || string(body) != c.body || used != c.used {
			t.Errorf("%q: got %d %q %d %v", c.in, status, body, used, err)
		}
	}
}

// FuzzParseAnswer: no input panics, and a complete answer's parts lie
// inside the input.
func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\ncontent-length: -3\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, body, used, err := parseAnswer(in)
		if err == nil && (used < 0 || used > len(in) || len(body) > used) {
			t.Fatalf("used %d body %d of %d", used, len(body), len(in))
		}
	})
}
