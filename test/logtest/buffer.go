// Package logtest captures the logs of code under test: Buffer is an
// io.Writer that many goroutines (or a child process' stdout and stderr)
// may write at once while the test reads it.
package logtest

import (
	"bufio"
	"bytes"
	"strings"
	"sync"
)

// Buffer is a concurrency-safe log sink.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the lines containing sub.
func (s *Buffer) Lines(sub string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			out = append(out, sc.Text())
		}
	}
	return out
}
