package authtoken

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Defaults and limits.
const (
	// DefaultTTL is the token lifetime (docs/reference/nodered-endpoints.md §5).
	DefaultTTL = 15 * time.Minute
	// MinSecretLen is the shortest secret New accepts.
	MinSecretLen = 16
	// MaxTokenLen bounds what Validate will look at; a real token is about
	// 250 bytes.
	MaxTokenLen = 4096
	nonceBytes  = 6 // 12 hex digits
)

// Payload is the signed content of a token, with the seed's JSON keys in
// the seed's order (the order matters only for byte-compatibility of Issue).
type Payload struct {
	SessionID   string `json:"sessionId"`
	PatientGUID string `json:"patientGUID"`
	CreatedAt   int64  `json:"createdAt"` // Unix ms
	ExpiresAt   int64  `json:"expiresAt"` // Unix ms
	Nonce       string `json:"nonce"`
}

// Expires is ExpiresAt as a time.
func (p Payload) Expires() time.Time { return time.UnixMilli(p.ExpiresAt) }

// Config configures a Signer. Secret is required; the rest have defaults.
type Config struct {
	// Secret is the HMAC key (BOOKING_AUTH_SECRET), at least MinSecretLen
	// bytes. There is no default.
	Secret []byte
	// TTL is the lifetime of issued tokens. Default DefaultTTL.
	TTL time.Duration
	// Now is the clock of Issue and of the expiry check. Default time.Now.
	Now func() time.Time
	// Rand is the nonce source. Default crypto/rand.Reader.
	Rand io.Reader
}

func (c Config) withDefaults() Config {
	c.TTL = valutil.ValOrDefault(c.TTL, DefaultTTL)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Rand = valutil.ValOrDefault(c.Rand, rand.Reader)
	return c
}

func (c Config) validate() error {
	switch {
	case len(c.Secret) == 0:
		return errors.New("authtoken: Secret is required (BOOKING_AUTH_SECRET); there is no default")
	case len(c.Secret) < MinSecretLen:
		return fmt.Errorf("authtoken: Secret has %d bytes, want at least %d", len(c.Secret), MinSecretLen)
	case c.TTL < time.Second:
		return fmt.Errorf("authtoken: TTL %s must be at least 1s", c.TTL)
	}
	return nil
}

// Signer issues and validates tokens with one secret. It is safe for
// concurrent use.
type Signer struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	rand   io.Reader
}

// New checks cfg and returns a Signer.
func New(cfg Config) (*Signer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Signer{
		secret: bytes.Clone(cfg.Secret),
		ttl:    cfg.TTL,
		now:    cfg.Now,
		rand:   cfg.Rand,
	}, nil
}

// TTL is the lifetime of the tokens this Signer issues.
func (s *Signer) TTL() time.Duration { return s.ttl }

// Issue makes a token for patientGUID in session sessionID (createPatient's
// uui, else its request id), valid for the TTL from now.
func (s *Signer) Issue(sessionID, patientGUID string) (string, Payload, error) {
	if sessionID == "" || patientGUID == "" {
		return "", Payload{}, errors.New("authtoken: Issue needs a sessionId and a patientGUID")
	}
	var nb [nonceBytes]byte
	if _, err := io.ReadFull(s.rand, nb[:]); err != nil {
		return "", Payload{}, fmt.Errorf("authtoken: nonce: %w", err)
	}
	created := s.now().UnixMilli()
	p := Payload{
		SessionID:   sessionID,
		PatientGUID: patientGUID,
		CreatedAt:   created,
		ExpiresAt:   created + s.ttl.Milliseconds(),
		Nonce:       hex.EncodeToString(nb[:]),
	}
	raw, err := marshalPayload(p)
	if err != nil {
		return "", Payload{}, err
	}
	payloadB64 := base64.RawURLEncoding.EncodeToString(raw)
	return payloadB64 + "." + s.sign(payloadB64), p, nil
}

// marshalPayload encodes like JSON.stringify: no HTML escaping, no newline.
func marshalPayload(p Payload) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("authtoken: payload: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sign is base64url(HMAC-SHA256(secret, payloadB64)), unpadded.
func (s *Signer) sign(payloadB64 string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(payloadB64))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Validate checks token for patientGUID at the Signer's now, in the seed's
// order (see the package doc). The returned error is an *Error.
func (s *Signer) Validate(token, patientGUID string) (Payload, error) {
	// Check 1: present.
	if token == "" {
		return Payload{}, fail(CodeMissing, "no bookingAuthToken")
	}
	// Check 2: two parts, and the HMAC of the first is the second.
	if len(token) > MaxTokenLen {
		return Payload{}, fail(CodeMalformed, fmt.Sprintf("token longer than %d bytes", MaxTokenLen))
	}
	payloadB64, sig, ok := strings.Cut(token, ".")
	if !ok || payloadB64 == "" || sig == "" || strings.Contains(sig, ".") {
		return Payload{}, fail(CodeMalformed, "want <payload>.<signature>")
	}
	// Compare the base64url text, as the original does, but in constant time.
	if !hmac.Equal([]byte(sig), []byte(s.sign(payloadB64))) {
		return Payload{}, fail(CodeSignatureInvalid, "HMAC does not match")
	}
	// Check 3: parse the payload.
	p, err := decodePayload(payloadB64)
	if err != nil {
		return Payload{}, err
	}
	// Check 4: not expired (Node: Date.now() > expiresAt).
	if s.now().UnixMilli() > p.ExpiresAt {
		e := fail(CodeExpired, "expired at "+p.Expires().UTC().Format(time.RFC3339Nano))
		e.TokenPatientGUID = p.PatientGUID
		return Payload{}, e
	}
	// Check 5: the token is for this patient.
	if !strings.EqualFold(strings.TrimSpace(patientGUID), p.PatientGUID) {
		e := fail(CodeGUIDMismatch, "token is for another patientGUID")
		e.TokenPatientGUID = p.PatientGUID
		return Payload{}, e
	}
	return p, nil
}

// wirePayload has pointer fields so that a missing key is told apart from a
// zero value.
type wirePayload struct {
	SessionID   *string `json:"sessionId"`
	PatientGUID *string `json:"patientGUID"`
	CreatedAt   *int64  `json:"createdAt"`
	ExpiresAt   *int64  `json:"expiresAt"`
	Nonce       *string `json:"nonce"`
}

func decodePayload(payloadB64 string) (Payload, error) {
	raw, err := base64.RawURLEncoding.DecodeString(payloadB64)
	if err != nil {
		return Payload{}, fail(CodeMalformed, "payload is not base64url")
	}
	var w wirePayload
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&w); err != nil {
		return Payload{}, fail(CodeMalformed, "payload is not a JSON object of the token's fields")
	}
	if dec.More() {
		return Payload{}, fail(CodeMalformed, "trailing data after the payload JSON")
	}
	switch {
	case w.PatientGUID == nil || *w.PatientGUID == "":
		return Payload{}, fail(CodeMalformed, "payload has no patientGUID")
	case w.ExpiresAt == nil:
		// Without it the original's expiry check is always false: refuse.
		return Payload{}, fail(CodeMalformed, "payload has no expiresAt")
	}
	p := Payload{PatientGUID: *w.PatientGUID, ExpiresAt: *w.ExpiresAt}
	if w.SessionID != nil {
		p.SessionID = *w.SessionID
	}
	if w.CreatedAt != nil {
		p.CreatedAt = *w.CreatedAt
	}
	if w.Nonce != nil {
		p.Nonce = *w.Nonce
	}
	return p, nil
}
