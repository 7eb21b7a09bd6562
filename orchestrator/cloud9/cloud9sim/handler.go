package cloud9sim

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/flowgate/flowgate/orchestrator/timeutil"
)

// maxBody bounds a request body; a larger one is error 4.
const maxBody = 1 << 20

// outcome is what one call answers.
type outcome struct {
	records []record
	err     *apiError
	drop    bool // close the connection instead of answering
	latency time.Duration
}

func (s *Sim) serveProtocol(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "405 method not allowed: POST a GetDataRequest", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var out outcome
	if err != nil {
		out = outcome{err: errInput(), latency: s.unscopedLatency()}
	} else if req, aerr := decodeRequest(body); aerr != nil {
		out = outcome{err: aerr, latency: s.unscopedLatency()}
	} else {
		out = s.call(req)
	}
	// The call has committed; the answer waits for the injected latency, so
	// a client that gives up earlier meets an uncertain outcome too.
	if out.latency > 0 && timeutil.Sleep(r.Context(), out.latency) != nil {
		return
	}
	if out.drop {
		dropConnection(w)
		return
	}
	var payload []byte
	if out.err != nil {
		payload = encodeError(out.err)
	} else {
		payload = encodeSuccess(out.records)
	}
	s.write(w, payload)
}

// unscopedLatency is the latency of a request naming no procedure: the
// injected one unless Faults.Procedures scopes it.
func (s *Sim) unscopedLatency() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults.only) > 0 {
		return 0
	}
	return s.faults.f.Latency
}

// call runs one decoded request: count, authenticate, route, rate-limit,
// inject faults, run.
func (s *Sim) call(req *request) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.procedure
	s.calls[name]++
	if s.cfg.RecordRequests {
		s.requests = append(s.requests, Request{Procedure: name, Params: req.order, At: s.Now()})
	}
	fs := &s.faults
	var out outcome
	if fs.applies(name) {
		out.latency = fs.f.Latency
	}
	if !s.authenticated(req) {
		out.err = errCredentials()
		return out
	}
	if name == "" {
		out.err = errRequired()
		return out
	}
	proc, ok := procedures[name]
	if !ok {
		out.err = errNotAuthorized(name)
		return out
	}
	now := s.Now()
	if !s.limiter.allow(name, s.rateFor(name, proc.write), now) {
		s.limited[name]++
		out.err = errTooMany(name)
		return out
	}
	if fs.applies(name) && fs.draw(fs.f.ErrorRate) {
		out.err = errUnknown()
		return out
	}
	if !proc.write && fs.applies(name) && fs.draw(fs.f.EmptyRecordsRate) {
		return out // Success, <Records />
	}
	records, err := proc.run(s, req.params, now)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errUnknown()
		}
		out.err = ae
	} else {
		out.records = records
	}
	if n := fs.f.DropAfterCommit[name]; n > 0 {
		fs.f.DropAfterCommit[name] = n - 1
		out.drop = true
	}
	return out
}

// authenticated checks the credentials Config asks for.
func (s *Sim) authenticated(req *request) bool {
	c := s.cfg
	return (c.ClientID == "" || strings.EqualFold(c.ClientID, req.clientID)) &&
		(c.Username == "" || c.Username == req.username) &&
		(c.Password == "" || c.Password == req.password)
}

// write answers as the real service does: 200, text/html, maybe gzip.
func (s *Sim) write(w http.ResponseWriter, payload []byte) {
	h := w.Header()
	charset := "utf-8"
	if s.cfg.Charset != "" {
		charset = s.cfg.Charset
		payload = encodeCharset(payload, charset)
	}
	h.Set("Content-Type", "text/html; charset="+charset)
	h.Set("Cache-Control", "private")
	if s.cfg.Gzip || s.cfg.GzipDeclared {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(payload)
		_ = zw.Close()
		payload = b.Bytes()
		if s.cfg.GzipDeclared {
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
}

// encodeCharset re-encodes a UTF-8 answer in charset (Validate checked the
// label), its XML declaration included.
func encodeCharset(payload []byte, charset string) []byte {
	enc, err := htmlindex.Get(charset)
	if err != nil {
		return payload
	}
	body, err := encoding.HTMLEscapeUnsupported(enc.NewEncoder()).Bytes(bytes.TrimPrefix(payload, []byte(xmlHeader)))
	if err != nil {
		return payload
	}
	return append([]byte(`<?xml version="1.0" encoding="`+charset+`"?>`), body...)
}

// dropConnection closes the client's connection without a byte of answer.
func dropConnection(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler) // HTTP/2 or a writer that cannot hijack
}

// Start serves Handler on addr (":0" or "127.0.0.1:0" picks a free port)
// and answers the endpoint URL (http://host:port/GetData.ashx; an
// unspecified host becomes 127.0.0.1) and a stop function that shuts the
// server down gracefully, closing it hard when ctx ends first.
func (s *Sim) Start(addr string) (url string, stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("cloud9sim: listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	stop = func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if err != nil {
			_ = srv.Close()
		}
		<-served
		return err
	}
	return endpointURL(ln.Addr()), stop, nil
}

func endpointURL(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/GetData.ashx"
}
