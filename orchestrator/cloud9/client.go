package cloud9

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/orchestrator/timeutil"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// The seed's per-call timeouts.
const (
	DefaultWriteTimeout = 45 * time.Second // SetAppointment, SetPatient, status changes
	DefaultNoteTimeout  = 15 * time.Second // SetPatientComment
	DefaultReadTimeout  = 60 * time.Second // Get*
)

// The forms of GetOnlineReservations' morning/afternoon (Config.DayHalfFormat).
const (
	DayHalfBool = "bool" // True / False: the production flow's form
	DayHalfBit  = "bit"  // 1 / 0: the vendor guide's "bit"
)

// MaxVendorUserName is Cloud9's bound on VendorUserName.
const MaxVendorUserName = 25

// Config configures a Client.
type Config struct {
	Endpoint       string // the GetData.ashx URL
	ClientID       string
	Username       string
	Password       string // sent in every envelope, never logged
	VendorUsername string // VendorUserName of writes; required by SetAppointment and SetPatient

	// DayHalfFormat is how GetOnlineReservations writes morning/afternoon:
	// DayHalfBool ("True"/"False", what production has always sent; the
	// default) or DayHalfBit ("1"/"0", the vendor guide's "bit").
	DayHalfFormat string

	// HTTPClient sends the requests. Nil: a client of its own, whose idle
	// connections Close releases. Do not set http.Client.Timeout shorter
	// than the timeouts below; they are applied per call.
	HTTPClient *http.Client

	WriteTimeout time.Duration // 0: DefaultWriteTimeout
	NoteTimeout  time.Duration // 0: DefaultNoteTimeout
	ReadTimeout  time.Duration // 0: DefaultReadTimeout

	Limiter    Limiter // nil: no limit
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: metrics are kept but not exported

	// Sleep waits in Client.Wait; nil is timeutil.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now times calls; nil is time.Now.
	Now func() time.Time
}

// LogValue keeps the password out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("endpoint", c.Endpoint), slog.String("client_id", c.ClientID),
		slog.String("user", c.Username), slog.String("vendor_user", c.VendorUsername),
		slog.Duration("write_timeout", c.WriteTimeout), slog.Duration("note_timeout", c.NoteTimeout),
		slog.Duration("read_timeout", c.ReadTimeout))
}

// String keeps the password out of %v.
func (c Config) String() string {
	return fmt.Sprintf("cloud9.Config{Endpoint:%s ClientID:%s Username:%s Password:[redacted] VendorUsername:%s}",
		c.Endpoint, c.ClientID, c.Username, c.VendorUsername)
}

// GoString keeps the password out of %#v.
func (c Config) GoString() string { return c.String() }

func (c *Config) withDefaults() {
	c.WriteTimeout = valutil.ValOrDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.NoteTimeout = valutil.ValOrDefault(c.NoteTimeout, DefaultNoteTimeout)
	c.ReadTimeout = valutil.ValOrDefault(c.ReadTimeout, DefaultReadTimeout)
	c.DayHalfFormat = valutil.ValOrDefault(c.DayHalfFormat, DayHalfBool)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Sleep = valutil.FuncOrDefault(c.Sleep, timeutil.Sleep)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
}

func (c *Config) validate() error {
	u, err := url.Parse(c.Endpoint)
	if c.Endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("cloud9: Endpoint must be an http(s) URL, got %q", c.Endpoint)
	}
	if u.User != nil {
		return errors.New("cloud9: Endpoint must not carry credentials")
	}
	for name, v := range map[string]string{"ClientID": c.ClientID, "Username": c.Username, "Password": c.Password} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("cloud9: %s is required", name)
		}
	}
	if n := len([]rune(c.VendorUsername)); n > MaxVendorUserName {
		return fmt.Errorf("cloud9: VendorUsername is %d characters, Cloud9 takes at most %d", n, MaxVendorUserName)
	}
	if c.DayHalfFormat != DayHalfBool && c.DayHalfFormat != DayHalfBit {
		return fmt.Errorf("cloud9: DayHalfFormat must be %s or %s, got %q", DayHalfBool, DayHalfBit, c.DayHalfFormat)
	}
	for name, d := range map[string]time.Duration{"WriteTimeout": c.WriteTimeout, "NoteTimeout": c.NoteTimeout, "ReadTimeout": c.ReadTimeout} {
		if d < 0 {
			return fmt.Errorf("cloud9: %s must not be negative", name)
		}
	}
	return nil
}

// Client calls Cloud9. It is safe for concurrent use.
type Client struct {
	cfg      Config
	http     *http.Client
	ownsHTTP bool
	limiter  Limiter
	log      *slog.Logger
	metrics  *metrics
	sleep    func(context.Context, time.Duration) error
	now      func() time.Time
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("cloud9: metrics: %w", err)
	}
	c := &Client{cfg: cfg, http: cfg.HTTPClient, limiter: cfg.Limiter, log: cfg.Logger, metrics: m,
		sleep: cfg.Sleep, now: cfg.Now}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 16
		c.http = &http.Client{Transport: tr}
		c.ownsHTTP = true
	}
	// A redirect is never followed: a 307/308 would send the XML body,
	// password included, to whatever host the answer names. A copy, so a
	// client passed in is not changed; a 3xx is then an HTTP error.
	hc := *c.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &hc
	return c, nil
}

// Close releases the idle connections of the client's own HTTP client.
func (c *Client) Close() {
	if c.ownsHTTP {
		c.http.CloseIdleConnections()
	}
}

// WithoutLimiter returns a Client sharing c's connections, settings and
// metrics that does not consult the limiter: for a caller that takes the
// limiter's turn itself (the booking service calls Limiter.Allow before each
// write, then the client). Giving both the same limiter would spend two
// turns per call, and with burst 1 the second would always be refused.
func (c *Client) WithoutLimiter() *Client {
	cp := *c
	cp.limiter = nil
	cp.ownsHTTP = false // c's Close releases the connections
	return &cp
}

// IsWrite reports whether procedure writes (Cloud9's writes are Set*).
func IsWrite(procedure string) bool { return strings.HasPrefix(procedure, "Set") }

// Timeout is the per-call timeout of procedure: NoteTimeout for
// SetPatientComment, WriteTimeout for other writes, ReadTimeout for reads.
func (c *Client) Timeout(procedure string) time.Duration {
	switch {
	case procedure == ProcSetPatientComment:
		return c.cfg.NoteTimeout
	case IsWrite(procedure):
		return c.cfg.WriteTimeout
	default:
		return c.cfg.ReadTimeout
	}
}

// Call sends procedure with params and returns the decoded answer.
//
// Errors: *LimitedError when the limiter holds the call back (nothing was
// sent); *Error for a transport failure, a ResponseStatus Error, or a
// Success whose Result begins "Error:" (Error.Response has the answer);
// ErrInvalidInput when the request cannot be built. The call is bounded by
// the procedure's timeout (Timeout) and by ctx.
func (c *Client) Call(ctx context.Context, procedure string, params ...Param) (*Response, error) {
	body, err := EncodeRequest(Request{ClientID: c.cfg.ClientID, UserName: c.cfg.Username,
		Password: c.cfg.Password, Procedure: procedure, Params: params})
	if err != nil { // before the limiter: an unsendable call costs no token
		c.metrics.observe(procedure, outcomeInvalid, 0, false)
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	if err := c.admit(ctx, procedure); err != nil {
		c.metrics.observe(procedure, outcomeOf(err), 0, false)
		return nil, err
	}
	began := c.now()
	resp, err := c.send(ctx, procedure, body)
	took := c.now().Sub(began)
	outcome := outcomeOf(err)
	c.metrics.observe(procedure, outcome, took, true)
	var e *Error
	switch {
	case err == nil:
		c.log.Debug("cloud9 call", "procedure", procedure, "outcome", outcome, "took", took)
	case errors.As(err, &e) && e.Class == ClassRateLimit:
		c.metrics.rateLimited.WithLabelValues(procedure).Inc()
		c.log.Warn("cloud9 answered too many requests: the shared limiter is set faster than Cloud9 allows",
			"procedure", procedure, "code", e.Code, "message", e.Message)
	default: // the caller decides what a failure means and logs that
		c.log.Debug("cloud9 call failed", "procedure", procedure, "outcome", outcome, "took", took, "err", err)
	}
	return resp, err
}

func outcomeOf(err error) string {
	var e *Error
	var l *LimitedError
	if err == nil {
		return outcomeOK
	}
	if errors.As(err, &l) {
		return outcomeLimited
	}
	if !errors.As(err, &e) {
		return outcomeTransport
	}
	switch {
	case e.Kind == KindTransport && e.Class == ClassTimeout:
		return outcomeTimeout
	case e.Kind == KindTransport:
		return outcomeTransport
	case e.Kind == KindStatus:
		return outcomeStatus
	default:
		return outcomeResult
	}
}

// send posts body and turns the answer into a Response or an *Error.
func (c *Client) send(ctx context.Context, procedure string, body []byte) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout(procedure))
	defer cancel()
	var wrote atomic.Bool // the whole request reached the connection
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Procedure: procedure, Kind: KindTransport, Class: ClassUnknown, Code: -1, Message: err.Error(), Err: err}
	}
	req.Header.Set("Content-Type", "application/xml; charset=utf-8")
	// Asked for explicitly so the transport never unzips on its own: the
	// body is decoded by content either way.
	req.Header.Set("Accept-Encoding", "gzip")
	hresp, err := c.http.Do(req)
	if err != nil {
		return nil, transportError(ctx, procedure, err, wrote.Load())
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hresp.Body, MaxResponseBytes+1))
	if err != nil { // the answer was on its way: Cloud9 had the request
		e := transportError(ctx, procedure, err, true)
		e.Uncertain = true
		return nil, e
	}
	if len(raw) > MaxResponseBytes {
		return nil, &Error{Procedure: procedure, Kind: KindTransport, Class: ClassUnknown, Code: -1, Uncertain: true,
			Message: fmt.Sprintf("answer over %d bytes", MaxResponseBytes)}
	}
	r, derr := DecodeResponseLabelled(raw, hresp.Header.Get("Content-Type"))
	if derr != nil {
		return nil, undecodable(procedure, hresp.StatusCode, raw, derr)
	}
	if err := check(procedure, r); err != nil {
		return nil, err
	}
	return r, nil
}

// transportError classes a failure of http.Client.Do or of reading the body.
// sent is whether the whole request had been written.
func transportError(ctx context.Context, procedure string, err error, sent bool) *Error {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	var ne net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
	return &Error{Procedure: procedure, Kind: KindTransport, Class: classifyTransport(timedOut, err), Code: -1,
		Message: cause.Error(), Uncertain: sent, Err: err}
}

// undecodable is an answer that is not the envelope: an HTTP error page,
// an empty body, a proxy's message.
func undecodable(procedure string, status int, raw []byte, derr error) *Error {
	e := &Error{Procedure: procedure, Kind: KindTransport, Class: ClassUnknown, Code: -1, Uncertain: true, Err: derr}
	switch {
	case status/100 != 2:
		e.Message = fmt.Sprintf("HTTP %d without a GetDataResponse", status)
		switch status {
		case http.StatusTooManyRequests:
			e.Class = ClassRateLimit
		case http.StatusRequestTimeout, http.StatusGatewayTimeout:
			e.Class = ClassTimeout
		case http.StatusUnauthorized, http.StatusForbidden:
			e.Class = ClassAuthorization
		default:
			e.Class = ClassCloud9
		}
		// A 4xx other than a timeout was refused before the procedure ran.
		e.Uncertain = status >= 500 || status == http.StatusRequestTimeout
	case len(bytes.TrimSpace(raw)) == 0:
		e.Message = "empty answer"
	default:
		e.Message = "answer is not a GetDataResponse"
	}
	return e
}

// check turns an answer that reports a failure into an *Error.
func check(procedure string, r *Response) error {
	if !r.Success() {
		msg := r.ErrorMessage
		if msg == "" {
			msg = "ResponseStatus " + r.Status
		}
		return &Error{Procedure: procedure, Kind: KindStatus, Class: Classify(r.ErrorCode, msg), Code: r.ErrorCode,
			Message: msg, Response: r,
			// Code 0 is "an unknown error occurred", and a status that is
			// neither Success nor Error says nothing: either may have acted.
			Uncertain: r.ErrorCode == 0 || !strings.EqualFold(r.Status, StatusError)}
	}
	if res := r.Result(); isErrorResult(res) {
		return &Error{Procedure: procedure, Kind: KindResult, Class: Classify(-1, res), Code: -1, Message: res, Response: r}
	}
	return nil
}

// isErrorResult reports whether a Result is a business-rule failure
// ("Error: Appointments cannot be scheduled in the past.").
func isErrorResult(res string) bool {
	res = strings.TrimSpace(res)
	if len(res) < 5 || !strings.EqualFold(res[:5], "error") {
		return false
	}
	rest := res[5:]
	return rest == "" || (rest[0] < 'a' || rest[0] > 'z') && (rest[0] < 'A' || rest[0] > 'Z')
}

// permit is one admission by the limiter, carried in a context from Wait to
// the Call it was waited for. It is used once.
type permit struct {
	procedure string
	used      atomic.Bool
}

type permitKey struct{}

// admit consults the limiter unless ctx carries an unused permit for
// procedure. A limiter that fails (Redis down) lets the call go: Cloud9's
// own code 8 is still handled as a rate limit, and refusing every call
// while Redis is down would stop bookings for nothing.
func (c *Client) admit(ctx context.Context, procedure string) error {
	if p, ok := ctx.Value(permitKey{}).(*permit); ok && p.procedure == procedure && p.used.CompareAndSwap(false, true) {
		return nil
	}
	if c.limiter == nil {
		return nil
	}
	ok, retryAfter, err := c.limiter.Allow(ctx, procedure)
	if err != nil {
		if ctx.Err() != nil {
			return &Error{Procedure: procedure, Kind: KindTransport, Class: classifyTransport(false, ctx.Err()), Code: -1,
				Message: ctx.Err().Error(), Err: ctx.Err()}
		}
		c.log.Warn("cloud9 limiter unavailable, calling without it", "procedure", procedure, "err", err)
		return nil
	}
	if !ok {
		return &LimitedError{Procedure: procedure, RetryAfter: max(retryAfter, minRetryAfter)}
	}
	return nil
}

// minRetryAfter keeps a Limiter that says "no" with no delay from spinning
// Wait.
const minRetryAfter = 10 * time.Millisecond

// Wait waits until the limiter admits one call of procedure, as long as the
// total wait fits budget, and returns a context carrying that admission: the
// next Call of procedure made with it does not ask the limiter again. When
// the next wait would not fit, it returns ctx unchanged and a *LimitedError
// with the limiter's delay, having waited only what fitted before. waited is
// the time spent sleeping (the seed's spacing_wait_ms).
//
// The synchronous booking path uses it with its budget; an Asynq handler
// calls Call directly and turns a *LimitedError into asynqrt.Defer.
func (c *Client) Wait(ctx context.Context, procedure string, budget time.Duration) (context.Context, time.Duration, error) {
	if c.limiter == nil {
		return ctx, 0, nil
	}
	var waited time.Duration
	for {
		ok, retryAfter, err := c.limiter.Allow(ctx, procedure)
		retryAfter = max(retryAfter, minRetryAfter)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx, waited, ctx.Err()
		case err != nil:
			c.log.Warn("cloud9 limiter unavailable, calling without it", "procedure", procedure, "err", err)
			return withPermit(ctx, procedure), waited, nil
		case ok:
			return withPermit(ctx, procedure), waited, nil
		case waited+retryAfter > budget:
			return ctx, waited, &LimitedError{Procedure: procedure, RetryAfter: retryAfter}
		}
		if err := c.sleep(ctx, retryAfter); err != nil {
			return ctx, waited, err
		}
		waited += retryAfter
	}
}

func withPermit(ctx context.Context, procedure string) context.Context {
	return context.WithValue(ctx, permitKey{}, &permit{procedure: procedure})
}
