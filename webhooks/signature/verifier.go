package signature

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/gofiber/fiber/v2"
)

// The machine-readable reasons in Details["reason"] of a refusal.
const (
	ReasonMissingHeaders     = "missing_headers"     // X-Timestamp/X-Signature or Authorization absent
	ReasonBadTimestamp       = "bad_timestamp"       // X-Timestamp is not unix seconds
	ReasonExpired            = "expired"             // X-Timestamp outside ±Tolerance
	ReasonMalformedSignature = "malformed_signature" // X-Signature is not 64 hex digits
	ReasonBadSignature       = "bad_signature"       // the signature does not match
	ReasonReplayed           = "replayed"            // the signature was seen before
	ReasonBadToken           = "bad_token"           // not a Bearer token, or the wrong one
	ReasonReplayUnavailable  = "replay_unavailable"  // the replay store failed (503)
	ReasonBadVersion         = "bad_version"         // X-Signature-Version is not 1 or 2
	ReasonOldVersion         = "old_version"         // version 1 sent where MinVersion is 2
)

const op = "signature.Verify"

// Verifier authenticates requests according to a Config. It is safe for
// concurrent use.
type Verifier struct {
	mode       Mode
	secret     []byte
	keyed      *hmacsig.Keyed // the MACs under secret, reusing HMAC states
	tokenSum   [sha256.Size]byte
	tolerance  time.Duration
	replay     ReplayGuard
	now        func() time.Time
	minVersion int
}

// New validates cfg, fills in defaults and returns a Verifier. It copies the
// secret, so later changes to cfg.Secret have no effect.
func New(cfg Config) (*Verifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	v := &Verifier{
		mode:       cfg.Mode,
		secret:     append([]byte(nil), cfg.Secret...),
		tolerance:  cfg.Tolerance,
		replay:     cfg.Replay,
		now:        cfg.Now,
		minVersion: cfg.MinVersion,
	}
	v.keyed = hmacsig.NewKeyed(v.secret)
	if cfg.Mode == ModeToken {
		v.tokenSum = sha256.Sum256([]byte(cfg.Token))
	}
	return v, nil
}

// Mode is the mode v checks.
func (v *Verifier) Mode() Mode { return v.mode }

// String describes v without its secret.
func (v *Verifier) String() string {
	return fmt.Sprintf("signature.Verifier{Mode:%s Tolerance:%s}", v.mode, v.tolerance)
}

// GoString is String, for %#v.
func (v *Verifier) GoString() string { return v.String() }

// Request is what Verify looks at: the method and request target (path
// with query, as sent) are signed in version 2. Replays are detected on
// the signature alone, whatever the route.
type Request struct {
	Method string
	Target string
	Header func(string) string
	Body   []byte
}

// Verify authenticates one request given its header lookup (for example
// http.Header.Get) and raw body, with no method or target (a version-2
// signature then verifies only if it signed none). Servers use
// VerifyRequest (the middleware does).
func (v *Verifier) Verify(ctx context.Context, header func(string) string, body []byte) error {
	return v.VerifyRequest(ctx, Request{Header: header, Body: body})
}

// VerifyRequest authenticates one request. It returns nil or a
// *contracts.Error.
func (v *Verifier) VerifyRequest(ctx context.Context, r Request) error {
	_, err := v.verifyRequest(ctx, r, v.minVersion, false)
	return err
}

// MiddlewareOption tightens a Middleware for the routes it guards, or
// defers its replay check (DeferReplay).
type MiddlewareOption struct {
	minVersion  int
	deferReplay bool
}

// RequireVersion makes a Middleware refuse signatures older than version
// (reason old_version). A version-1 signature covers only the timestamp and
// the body, so a captured body-less one (a GET) is valid on any route that
// takes no body: routes other than the seed's webhooks require version 2.
func RequireVersion(version int) MiddlewareOption { return MiddlewareOption{minVersion: version} }

// verifyRequest authenticates r. With deferReplay an accepted HMAC
// request is not checked for a replay: the check is answered instead.
func (v *Verifier) verifyRequest(ctx context.Context, r Request, minVersion int, deferReplay bool) (*Deferred, error) {
	switch v.mode {
	case ModeHMAC:
		return v.verifyHMAC(ctx, r, minVersion, deferReplay)
	case ModeToken:
		return nil, v.verifyToken(r.Header)
	default:
		return nil, nil
	}
}

// Middleware runs Verify on each request and returns its error for the
// app's ErrorHandler to render; on success it calls c.Next. The signed body
// is c.BodyRaw(), the bytes on the wire, so nothing is decompressed before
// the sender is authenticated.
//
// Options tighten it for the routes it guards: RequireVersion(2) refuses
// version-1 signatures there whatever Config.MinVersion says;
// DeferReplay leaves the replay check to the handler (Deferred).
func (v *Verifier) Middleware(opts ...MiddlewareOption) fiber.Handler {
	min, deferReplay := v.minVersion, false
	for _, o := range opts {
		min = max(min, o.minVersion)
		deferReplay = deferReplay || o.deferReplay
	}
	return func(c *fiber.Ctx) error {
		r := Request{Method: c.Method(), Target: c.OriginalURL(), Header: func(k string) string { return c.Get(k) }, Body: c.BodyRaw()}
		d, err := v.verifyRequest(c.UserContext(), r, min, deferReplay)
		if err != nil {
			return err
		}
		if d != nil {
			c.SetUserContext(WithDeferred(c.UserContext(), d))
		}
		return c.Next()
	}
}

func (v *Verifier) verifyHMAC(ctx context.Context, r Request, minVersion int, deferReplay bool) (*Deferred, error) {
	header := r.Header
	ts := strings.TrimSpace(header(HeaderTimestamp))
	sig := strings.TrimSpace(header(HeaderSignature))
	switch {
	case ts == "" && sig == "":
		return nil, refuse(ReasonMissingHeaders, "missing X-Timestamp and X-Signature headers")
	case ts == "":
		return nil, refuse(ReasonMissingHeaders, "missing X-Timestamp header")
	case sig == "":
		return nil, refuse(ReasonMissingHeaders, "missing X-Signature header")
	}

	sec, ok := parseUnix(ts)
	if !ok {
		return nil, refuse(ReasonBadTimestamp, "X-Timestamp must be unix time in seconds")
	}
	skew := v.now().Sub(time.Unix(sec, 0))
	if skew > v.tolerance {
		return nil, refuse(ReasonExpired, "request timestamp is too old")
	}
	if skew < -v.tolerance {
		return nil, refuse(ReasonExpired, "request timestamp is too far in the future")
	}

	version := strings.TrimSpace(header(HeaderSignatureVersion))
	switch version {
	case "", "1":
		version = "1"
		if minVersion > 1 {
			return nil, refuse(ReasonOldVersion, "this route requires X-Signature-Version: 2 (method and path signed)")
		}
	case "2":
	default:
		return nil, refuse(ReasonBadVersion, "X-Signature-Version must be 1 or 2")
	}

	got, ok := parseSignature(sig)
	if !ok {
		return nil, refuse(ReasonMalformedSignature, "X-Signature must be the hex HMAC-SHA256 of the signed string")
	}
	var want []byte
	if version == "2" {
		want = v.keyed.MACV2(ts, r.Method, r.Target, r.Body)
	} else {
		want = v.keyed.MAC(ts, r.Body)
	}
	if !hmac.Equal(got, want) {
		return nil, refuse(ReasonBadSignature, "signature does not match")
	}

	// Keyed on the decoded bytes alone, so "sha256=" and upper-case
	// variants of one signature are the same replay, and a signature is
	// accepted once across every route: a version-1 signature does not
	// cover the route, so a captured FAIL (or POST /queue) re-sent to /ack
	// is the same request, refused as a replay. Version 2 covers the route
	// already.
	key := hex.EncodeToString(got)
	if deferReplay {
		d := &Deferred{Sig: key, Version: 1, TTL: 2 * v.tolerance, v: v}
		if version == "2" {
			d.Version = 2
		}
		if g, ok := v.replay.(*RedisReplayGuard); ok {
			d.GlobalKey = g.Key(key)
		}
		return d, nil
	}
	return nil, v.checkReplay(ctx, key)
}

func (v *Verifier) verifyToken(header func(string) string) error {
	auth := strings.TrimSpace(header(HeaderAuthorization))
	if auth == "" {
		return refuse(ReasonMissingHeaders, "missing Authorization header")
	}
	scheme, token, ok := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return refuse(ReasonBadToken, `Authorization must be "Bearer <token>"`)
	}
	// Comparing digests keeps the time independent of the token's length.
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], v.tokenSum[:]) != 1 {
		return refuse(ReasonBadToken, "invalid bearer token")
	}
	return nil
}

func refuse(reason, message string) *contracts.Error {
	return &contracts.Error{
		Code:    contracts.CodeUnauthorized,
		Op:      op,
		Message: message,
		Details: map[string]any{"reason": reason},
	}
}

// parseUnix accepts only ASCII digits (no sign), at most 19 of them.
func parseUnix(s string) (int64, bool) {
	if len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseSignature decodes 64 hex digits, after an optional "sha256=".
func parseSignature(s string) ([]byte, bool) {
	if len(s) > len(SignaturePrefix) && strings.EqualFold(s[:len(SignaturePrefix)], SignaturePrefix) {
		s = s[len(SignaturePrefix):]
	}
	if len(s) != hex.EncodedLen(sha256.Size) {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}
