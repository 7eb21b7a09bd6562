// Package declared holds the work buffer's HTTP handlers declared in a
// YAML file (BUFFER_HANDLERS_FILE): each message type → an HTTP target
// (URL, method, headers with ${ENV} expansion, timeout, retries, backoff,
// breaker settings, optional HMAC signing). A handler POSTs a message to
// its target and classifies the answer: 2xx completes (the answer's JSON is
// the result, other text is kept as a string), 408, 429 (honouring
// Retry-After), 5xx, timeouts and connection errors are retried with the
// type's backoff, any other 4xx and every 3xx (redirects are never
// followed) send the message to the dead-letter queue.
// A Set swaps a reloaded file in atomically: each attempt reads its
// target once, so attempts in flight finish with the one they started with.
//
// A signing handler's secret is its own (secret: ${NAME}) or
// Options.DefaultSecret (flowgate's OUTBOUND_HMAC_SECRET), never one of
// Options.Inbound: a target sees the body and headers of every delivery,
// and the enqueuer chose the body, so a delivery signed with a secret
// flowgate verifies could be replayed at flowgate.
package declared

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// Body shapes a handler POSTs.
const (
	BodyPayload = "payload" // the payload alone; id, attempt and type in X-Buffer-* headers
	BodyMessage = "message" // the whole message {messageId, type, payload, …}
)

// Bounds of a declared handler.
const (
	DefaultMethod  = "POST"
	DefaultTimeout = 10 * time.Second
	MaxRetries     = 100
	MaxTimeout     = 10 * time.Minute
	// DefaultVisibility is a type's visibility timeout unless it says
	// otherwise (then at least its timeout + VisibilityMargin).
	DefaultVisibility = 30 * time.Second
	VisibilityMargin  = 10 * time.Second
	// MaxVisibility bounds visibilityTimeout (SQS's 12 h).
	MaxVisibility = 12 * time.Hour
	// MaxConcurrency bounds a type's concurrency:.
	MaxConcurrency = 64_000
)

// Bounds of a handlers file, checked before it is parsed: a file over them
// is refused at start (and on reload) with the figure, never read whole.
const (
	MaxFileBytes = 1 << 20 // 1 MiB
	MaxTypes     = 1000
)

// Spec is one declared type's target, its ${ENV} references expanded.
type Spec struct {
	Type    string
	URL     string
	Method  string
	Headers map[string]string
	Timeout time.Duration
	// Retries after the first attempt; buffer.Unset: the buffer's default.
	Retries int
	Backoff buffer.Backoff       // zero: the buffer's
	Circuit buffer.CircuitConfig // zero fields: the buffer's
	Secret  []byte               // non-nil: requests are signed with it
	Version int                  // signature version, 1 or 2
	Body    string               // BodyPayload or BodyMessage
	Line    int                  // where the type is declared
	// Visibility is how long one attempt may hold a message before it is
	// taken as stuck (cut, and retried as MESSAGE_TIMEOUT would be): the
	// Asynq task's timeout, fixed at enqueue. Default DefaultVisibility,
	// at least Timeout + VisibilityMargin.
	Visibility time.Duration
	// Concurrency caps the type's messages in flight on one instance (the
	// bulkhead); 0: BUFFER_TYPE_CONCURRENCY.
	Concurrency int
}

// File is a loaded handlers file.
type File struct {
	Path  string
	Specs []*Spec // in file order
}

// Types lists the declared types in file order.
func (f *File) Types() []string {
	out := make([]string, len(f.Specs))
	for i, s := range f.Specs {
		out[i] = s.Type
	}
	return out
}

// defaultSecretName is the setting Options.DefaultSecret comes from, for
// problems.
const defaultSecretName = "OUTBOUND_HMAC_SECRET"

// Options tell Load what it cannot read from the file.
type Options struct {
	// Reserved are types a declared handler may not take (the built-ins).
	Reserved []string
	// Getenv looks ${NAME} up; nil: os.LookupEnv.
	Getenv func(string) (string, bool)
	// DefaultSecret signs a handler with `sign: true` and no secret of its
	// own (OUTBOUND_HMAC_SECRET); "": such a handler is a problem.
	DefaultSecret string
	// Inbound are the secrets flowgate accepts signatures or tokens made
	// with (HMAC_SECRET, BOOKING_AUTH_SECRET), by name: a handler that
	// would sign with one of them is a problem. Empty values are ignored.
	Inbound map[string]string
}

// Problem is one thing wrong with the file.
type Problem struct {
	Line int
	Msg  string
}

// LoadError lists every problem of a file, one a line ("path:line: msg").
type LoadError struct {
	Path     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Line > 0 {
			lines[i] = fmt.Sprintf("%s:%d: %s", e.Path, p.Line, p.Msg)
		} else {
			lines[i] = fmt.Sprintf("%s: %s", e.Path, p.Msg)
		}
	}
	return strings.Join(lines, "\n")
}

// Load reads and validates a handlers file, reporting every problem at
// once (a *LoadError).
func Load(path string, opt Options) (*File, error) {
	raw, err := readBounded(path)
	if err != nil {
		return nil, &LoadError{Path: path, Problems: []Problem{{Msg: err.Error()}}}
	}
	return Parse(path, raw, opt)
}

// readBounded reads at most MaxFileBytes of path, refusing a larger file
// by its size before reading it (and one that grows past it while read).
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxFileBytes {
		return nil, tooBig(st.Size())
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if len(raw) > MaxFileBytes {
		return nil, tooBig(-1)
	}
	return raw, nil
}

func tooBig(size int64) error {
	if size < 0 {
		return fmt.Errorf("the file is over %d bytes (1 MiB), the most a handlers file may be", MaxFileBytes)
	}
	return fmt.Errorf("the file is %d bytes, over %d (1 MiB), the most a handlers file may be", size, MaxFileBytes)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

var methods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "GET": true}

// parser collects problems while reading one file.
type parser struct {
	opt      Options
	problems []Problem
}

func (p *parser) addf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// expand replaces ${NAME}; an unset NAME is a problem.
func (p *parser) expand(n *yaml.Node, s string) string {
	get := p.opt.Getenv
	if get == nil {
		get = os.LookupEnv
	}
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := get(name)
		if !ok {
			p.addf(n, "environment variable %s is not set", name)
		}
		return v
	})
}

func (p *parser) str(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.addf(n, "%s must be a string", key)
		return "", false
	}
	return n.Value, true
}

func (p *parser) dur(n *yaml.Node, key string) time.Duration {
	s, ok := p.str(n, key)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.addf(n, "%s must be a positive duration like 5s, got %q", key, s)
		return 0
	}
	return d
}

func (p *parser) integer(n *yaml.Node, key string, min, max int) (int, bool) {
	s, ok := p.str(n, key)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < min || v > max {
		p.addf(n, "%s must be an integer %d..%d, got %q", key, min, max, s)
		return 0, false
	}
	return v, true
}

// fields walks a mapping, refusing unknown keys.
func (p *parser) fields(n *yaml.Node, what string, known []string, each func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.addf(n, "%s must be a mapping", what)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !contains(known, k.Value):
			p.addf(k, "%s: unknown key %q (known: %s)", what, k.Value, strings.Join(known, ", "))
		case seen[k.Value]:
			p.addf(k, "%s: key %q given twice", what, k.Value)
		default:
			seen[k.Value] = true
			each(k.Value, k, v)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

var handlerKeys = []string{"type", "url", "method", "headers", "timeout", "visibilityTimeout", "concurrency", "maxRetries", "backoff", "circuitBreaker",
	"sign", "secret", "signatureVersion", "body"}

// Parse validates a handlers file's bytes (path names it in problems).
func Parse(path string, raw []byte, opt Options) (*File, error) {
	if len(raw) > MaxFileBytes {
		return nil, &LoadError{Path: path, Problems: []Problem{{Msg: tooBig(int64(len(raw))).Error()}}}
	}
	p := &parser{opt: opt}
	f := &File{Path: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		p.problems = append(p.problems, Problem{Msg: "not YAML: " + err.Error()})
		return nil, &LoadError{Path: path, Problems: p.problems}
	}
	if len(doc.Content) == 0 {
		return nil, &LoadError{Path: path, Problems: []Problem{{Msg: "empty file: want handlers: [ … ]"}}}
	}
	var list *yaml.Node
	p.fields(doc.Content[0], "top level", []string{"handlers"}, func(_ string, _, v *yaml.Node) { list = v })
	switch {
	case list == nil && len(p.problems) == 0:
		p.addf(doc.Content[0], "missing handlers: [ … ]")
	case list != nil && list.Kind != yaml.SequenceNode:
		p.addf(list, "handlers must be a list")
		list = nil
	}
	if list != nil && len(list.Content) > MaxTypes {
		p.addf(list, "handlers declares %d types, over %d, the most a handlers file may declare", len(list.Content), MaxTypes)
		return nil, &LoadError{Path: path, Problems: p.problems}
	}
	first := map[string]int{}
	if list != nil {
		for _, n := range list.Content {
			s := p.handler(n)
			if s == nil {
				continue
			}
			if s.Type != "" {
				if l, dup := first[s.Type]; dup {
					p.addf(n, "type %q is declared twice (first at line %d)", s.Type, l)
					continue
				}
				first[s.Type] = s.Line
			}
			f.Specs = append(f.Specs, s)
		}
	}
	if len(p.problems) > 0 {
		return nil, &LoadError{Path: path, Problems: p.problems}
	}
	return f, nil
}

// handlerState is what reading one entry collects besides its Spec.
type handlerState struct {
	s                       *Spec
	sign                    *bool
	secret                  string
	secretNode, versionNode *yaml.Node
	secretBad               bool // not a string, or a ${NAME} not set: reported already
	hasType, hasURL         bool
	visibilityNode          *yaml.Node // visibilityTimeout: given
}

// handler reads one entry of handlers.
func (p *parser) handler(n *yaml.Node) *Spec {
	st := &handlerState{s: &Spec{Method: DefaultMethod, Timeout: DefaultTimeout, Retries: buffer.Unset, Version: 1, Body: BodyPayload, Line: n.Line}}
	p.fields(n, "handler", handlerKeys, func(key string, _, v *yaml.Node) { p.handlerField(st, key, v) })
	if n.Kind != yaml.MappingNode {
		return nil
	}
	p.finishHandler(n, st)
	return st.s
}

// handlerField reads one key of an entry.
func (p *parser) handlerField(st *handlerState, key string, v *yaml.Node) {
	s := st.s
	switch key {
	case "type":
		st.hasType = true
		if t, ok := p.str(v, key); ok {
			s.Type = t
			p.checkType(v, t)
		}
	case "url":
		st.hasURL = true
		p.url(v, s)
	case "method":
		p.method(v, s)
	case "headers":
		p.headers(v, s)
	case "timeout":
		if d := p.dur(v, key); d > MaxTimeout {
			p.addf(v, "timeout must be at most %s", MaxTimeout)
		} else if d > 0 {
			s.Timeout = d
		}
	case "visibilityTimeout":
		st.visibilityNode = v
		if d := p.dur(v, key); d > MaxVisibility {
			p.addf(v, "visibilityTimeout must be at most %s", MaxVisibility)
		} else {
			s.Visibility = d
		}
	case "concurrency":
		if c, ok := p.integer(v, key, 1, MaxConcurrency); ok {
			s.Concurrency = c
		}
	case "maxRetries":
		if r, ok := p.integer(v, key, 0, MaxRetries); ok {
			s.Retries = r
		}
	case "backoff":
		p.backoff(v, s)
	case "circuitBreaker":
		p.circuit(v, s)
	case "sign":
		if b, ok := p.str(v, key); ok {
			on, err := strconv.ParseBool(b)
			if err != nil {
				p.addf(v, "sign must be true or false, got %q", b)
			}
			st.sign = &on
		}
	case "secret":
		st.secretNode = v
		before := len(p.problems)
		if sv, ok := p.str(v, key); ok {
			st.secret = p.expand(v, sv)
		}
		st.secretBad = len(p.problems) > before
	case "signatureVersion":
		st.versionNode = v
		if ver, ok := p.integer(v, key, 1, 2); ok {
			s.Version = ver
		}
	case "body":
		p.body(v, s)
	}
}

// finishHandler checks what an entry must have and settles its signing.
func (p *parser) finishHandler(n *yaml.Node, st *handlerState) {
	if !st.hasType {
		p.addf(n, "handler: type is required")
	}
	if !st.hasURL {
		p.addf(n, "handler %q: url is required", st.s.Type)
	}
	p.finishVisibility(st)
	signing := st.secretNode != nil || st.versionNode != nil
	if st.sign != nil {
		signing = *st.sign
	}
	if !signing {
		return
	}
	secret, from := st.secret, "its secret"
	switch {
	case st.secretBad:
		return // reported where it was read
	case st.secretNode != nil && secret == "":
		// secret: ${VAR} with VAR set but empty: never a quiet fallback.
		p.addf(st.secretNode, "handler %q: secret is empty (a ${NAME} set to \"\"?); give it a value, or drop secret: to sign with %s", st.s.Type, defaultSecretName)
		return
	case st.secretNode == nil:
		secret, from = p.opt.DefaultSecret, defaultSecretName
		if secret == "" {
			p.addf(n, "handler %q: signing needs a secret (secret: ${NAME}, or set %s)", st.s.Type, defaultSecretName)
			return
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.opt.Inbound)) {
		if v := p.opt.Inbound[name]; v != "" && v == secret {
			p.addf(n, "handler %q: %s is %s's value: flowgate accepts signatures made with it, so a delivery could be replayed at flowgate; sign with a secret of the handler's own", st.s.Type, from, name)
			return
		}
	}
	st.s.Secret = []byte(secret)
}

// finishVisibility defaults a type's visibility timeout and refuses one
// that would cut an attempt before its own timeout does.
func (p *parser) finishVisibility(st *handlerState) {
	s := st.s
	least := s.Timeout + VisibilityMargin
	switch {
	case st.visibilityNode == nil:
		s.Visibility = max(DefaultVisibility, least)
	case s.Visibility > 0 && s.Visibility < least:
		p.addf(st.visibilityNode, "handler %q: visibilityTimeout %s must be at least timeout + %s (%s): an attempt is never cut before its own timeout",
			s.Type, s.Visibility, VisibilityMargin, least)
	}
}

func (p *parser) url(v *yaml.Node, s *Spec) {
	u, ok := p.str(v, "url")
	if !ok {
		return
	}
	s.URL = p.expand(v, u)
	if pu, err := url.Parse(s.URL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		p.addf(v, "url must be an http(s) URL, got %q", s.URL)
	}
}

func (p *parser) method(v *yaml.Node, s *Spec) {
	if m, ok := p.str(v, "method"); ok {
		s.Method = strings.ToUpper(m)
		if !methods[s.Method] {
			p.addf(v, "method must be one of POST, PUT, PATCH, DELETE, GET, got %q", m)
		}
	}
}

func (p *parser) headers(v *yaml.Node, s *Spec) {
	s.Headers = map[string]string{}
	if v.Kind != yaml.MappingNode {
		p.addf(v, "headers must be a mapping of name: value")
		return
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		hk, hv := v.Content[i], v.Content[i+1]
		if !buffer.ValidHeaderName(hk.Value) {
			p.addf(hk, "header name %q is not valid: an HTTP header name is letters, digits and !#$%%&'*+-.^_`|~ only", hk.Value)
			continue
		}
		if val, ok := p.str(hv, "header "+hk.Value); ok {
			before := len(p.problems)
			v := p.expand(hv, val)
			if len(p.problems) == before && !buffer.ValidHeaderValue(v) {
				// Checked after ${ENV} expansion, value not echoed: it may be a secret.
				p.addf(hv, "header %s: the value (after ${NAME} expansion) holds CR, LF or another control character: not a valid HTTP header value", hk.Value)
				continue
			}
			s.Headers[hk.Value] = v
		}
	}
}

func (p *parser) circuit(n *yaml.Node, s *Spec) {
	p.fields(n, "circuitBreaker", []string{"threshold", "timeout"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "threshold":
			if t, ok := p.integer(v, "circuitBreaker.threshold", 1, 1000); ok {
				s.Circuit.Threshold = uint32(t)
			}
		case "timeout":
			s.Circuit.Timeout = p.dur(v, "circuitBreaker.timeout")
		}
	})
}

func (p *parser) body(v *yaml.Node, s *Spec) {
	if b, ok := p.str(v, "body"); ok {
		if b != BodyPayload && b != BodyMessage {
			p.addf(v, "body must be %q or %q, got %q", BodyPayload, BodyMessage, b)
		}
		s.Body = b
	}
}

// checkType refuses an unusable or reserved type.
func (p *parser) checkType(n *yaml.Node, t string) {
	switch {
	case t == "" || len(t) > 128:
		p.addf(n, "type must be 1..128 characters")
	case contains(p.opt.Reserved, t):
		p.addf(n, "type %q is a built-in handler's; pick another name", t)
	}
}

func (p *parser) backoff(n *yaml.Node, s *Spec) {
	var b buffer.Backoff
	var bad bool
	p.fields(n, "backoff", []string{"base", "multiplier", "max"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "base":
			b.Base = p.dur(v, "backoff.base")
		case "max":
			b.Max = p.dur(v, "backoff.max")
		case "multiplier":
			if m, ok := p.str(v, "backoff.multiplier"); ok {
				f, err := strconv.ParseFloat(m, 64)
				if err != nil || f < 1 || f > 100 {
					p.addf(v, "backoff.multiplier must be a number 1..100, got %q", m)
					bad = true
				}
				b.Multiplier = f
			}
		}
	})
	if bad || n.Kind != yaml.MappingNode {
		return
	}
	if b.Base == 0 {
		b.Base = buffer.DefaultBackoffBase
	}
	if b.Multiplier == 0 {
		b.Multiplier = buffer.DefaultBackoffMultiplier
	}
	if b.Max == 0 {
		b.Max = buffer.DefaultBackoffMax
	}
	if b.Max < b.Base {
		p.addf(n, "backoff.max must not be below backoff.base")
	}
	s.Backoff = b
}

// ErrRemoved is an attempt of a type a reloaded file no longer declares.
var ErrRemoved = errors.New("the handlers file no longer declares this type")
