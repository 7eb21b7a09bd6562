package authtoken_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/test/clocktest"
)

const (
	secret  = "test-secret-0123456789abcdef"
	guid    = "877F0034-7E09-4E35-BE0D-397E309DF2E8"
	session = "765381306-000000"
)

// t0 is 2026-01-19T11:35:58.209Z, the createdAt of the seed's example.
var t0 = time.UnixMilli(1768822558209)

// nonce is the seed example's nonce as the 6 bytes it is the hex of.
var nonce = []byte{0x5b, 0x0b, 0x1d, 0x22, 0xff, 0x73}

func newSigner(t testing.TB, clk *clocktest.Clock, mod ...func(*authtoken.Config)) *authtoken.Signer {
	t.Helper()
	cfg := authtoken.Config{Secret: []byte(secret), Now: clk.Now, Rand: bytes.NewReader(bytes.Repeat(nonce, 100))}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := authtoken.New(cfg)
	require.NoError(t, err)
	return s
}

// signRaw builds a token around any payload text with an independent HMAC,
// to reach the checks after the signature.
func signRaw(key, payloadJSON string) string {
	p := base64.RawURLEncoding.EncodeToString([]byte(payloadJSON))
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(p))
	return p + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// requireCode asserts err is an *authtoken.Error with code.
func requireCode(t testing.TB, err error, code authtoken.Code) {
	t.Helper()
	require.Error(t, err)
	var e *authtoken.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, code, e.Code, "error: %v", err)
	require.Equal(t, code, authtoken.CodeOf(err))
}

// codeError is requireCode returning the *authtoken.Error, for tests that
// check its fields.
func codeError(t testing.TB, err error, code authtoken.Code) *authtoken.Error {
	t.Helper()
	requireCode(t, err, code)
	var e *authtoken.Error
	require.ErrorAs(t, err, &e)
	return e
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]authtoken.Config{
		"no secret":    {},
		"short secret": {Secret: []byte("fifteen-bytes!!")},
		"tiny TTL":     {Secret: []byte(secret), TTL: time.Millisecond},
		"negative TTL": {Secret: []byte(secret), TTL: -time.Minute},
	} {
		_, err := authtoken.New(cfg)
		require.Error(t, err, name)
	}
	s, err := authtoken.New(authtoken.Config{Secret: []byte("sixteen-bytes!!!")})
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, s.TTL())
}

func TestIssueMatchesTheSeedShape(t *testing.T) {
	t.Parallel()
	s := newSigner(t, clocktest.New(t0))
	token, p, err := s.Issue(session, guid)
	require.NoError(t, err)
	require.Equal(t, authtoken.Payload{SessionID: session, PatientGUID: guid,
		CreatedAt: 1768822558209, ExpiresAt: 1768823458209, Nonce: "5b0b1d22ff73"}, p,
		"the seed's example: expiresAt = createdAt + 15 min")

	parts := strings.Split(token, ".")
	require.Len(t, parts, 2)
	require.NotContains(t, token, "=", "base64url without padding, like Node's 'base64url'")
	require.NotContains(t, token, "+")
	require.NotContains(t, token, "/")
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	// Key order as in the seed; compact like JSON.stringify.
	require.Equal(t, `{"sessionId":"765381306-000000","patientGUID":"877F0034-7E09-4E35-BE0D-397E309DF2E8",`+
		`"createdAt":1768822558209,"expiresAt":1768823458209,"nonce":"5b0b1d22ff73"}`, string(raw))
	require.Equal(t, signRaw(secret, string(raw)), token)
	contractstest.Golden(t, "booking_auth_token_payload", raw)

	got, err := s.Validate(token, guid)
	require.NoError(t, err)
	require.Equal(t, p, got)
}

func TestIssueDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	s := newSigner(t, clocktest.New(t0))
	token, _, err := s.Issue("a<b>&c", guid)
	require.NoError(t, err)
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	require.NoError(t, err)
	require.Contains(t, string(raw), `"sessionId":"a<b>&c"`, "JSON.stringify does not escape <, > and &")
}

func TestIssueNeedsSessionAndGUID(t *testing.T) {
	t.Parallel()
	s := newSigner(t, clocktest.New(t0))
	_, _, err := s.Issue("", guid)
	require.Error(t, err)
	_, _, err = s.Issue(session, "")
	require.Error(t, err)
}

func TestIssueNoncesDiffer(t *testing.T) {
	t.Parallel()
	s, err := authtoken.New(authtoken.Config{Secret: []byte(secret)}) // crypto/rand
	require.NoError(t, err)
	seen := map[string]bool{}
	for range 100 {
		_, p, err := s.Issue(session, guid)
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{12}$`, p.Nonce)
		require.False(t, seen[p.Nonce])
		seen[p.Nonce] = true
	}
}

func TestValidateChecksInTheSeedOrder(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	s := newSigner(t, clk)
	good, _, err := s.Issue(session, guid)
	require.NoError(t, err)
	payloadB64, sig, _ := strings.Cut(good, ".")
	expiredOther := signRaw(secret, `{"sessionId":"s","patientGUID":"11111111-2222-3333-4444-555555555555","createdAt":1,"expiresAt":2,"nonce":"x"}`)

	cases := []struct {
		name, token, guid string
		want              authtoken.Code
	}{
		{"missing", "", guid, authtoken.CodeMissing},
		{"one part", payloadB64, guid, authtoken.CodeMalformed},
		{"empty signature", payloadB64 + ".", guid, authtoken.CodeMalformed},
		{"empty payload", "." + sig, guid, authtoken.CodeMalformed},
		{"three parts", good + ".x", guid, authtoken.CodeMalformed},
		{"too long", strings.Repeat("a", authtoken.MaxTokenLen) + "." + sig, guid, authtoken.CodeMalformed},
		{"signature of another payload", payloadB64 + "x." + sig, guid, authtoken.CodeSignatureInvalid},
		{"another secret", signRaw("another-secret-0123456789", `{"patientGUID":"x","expiresAt":1}`), guid, authtoken.CodeSignatureInvalid},
		{"padded signature", good + "=", guid, authtoken.CodeSignatureInvalid},
		{"standard base64 signature", payloadB64 + "." + strings.NewReplacer("-", "+", "_", "/").Replace(sig) + "+", guid, authtoken.CodeSignatureInvalid},
		// Signed, so the checks after the signature are reached:
		{"payload not base64url", signPayloadText(secret, "!!!"), guid, authtoken.CodeMalformed},
		{"payload not JSON", signRaw(secret, `not json`), guid, authtoken.CodeMalformed},
		{"payload is an array", signRaw(secret, `[1,2]`), guid, authtoken.CodeMalformed},
		{"payload null", signRaw(secret, `null`), guid, authtoken.CodeMalformed},
		{"trailing data", signRaw(secret, `{"patientGUID":"`+guid+`","expiresAt":9999999999999} {}`), guid, authtoken.CodeMalformed},
		{"no patientGUID", signRaw(secret, `{"expiresAt":9999999999999}`), guid, authtoken.CodeMalformed},
		{"no expiresAt", signRaw(secret, `{"patientGUID":"`+guid+`"}`), guid, authtoken.CodeMalformed},
		{"expiresAt a string", signRaw(secret, `{"patientGUID":"`+guid+`","expiresAt":"9999999999999"}`), guid, authtoken.CodeMalformed},
		{"expiresAt a float", signRaw(secret, `{"patientGUID":"`+guid+`","expiresAt":1.5e12}`), guid, authtoken.CodeMalformed},
		{"patientGUID a number", signRaw(secret, `{"patientGUID":7,"expiresAt":9999999999999}`), guid, authtoken.CodeMalformed},
		// Expiry is checked before the GUID.
		{"expired and another GUID", expiredOther, guid, authtoken.CodeExpired},
		{"another GUID", good, "11111111-2222-3333-4444-555555555555", authtoken.CodeGUIDMismatch},
		{"no request GUID", good, "", authtoken.CodeGUIDMismatch},
	}
	for _, c := range cases {
		_, err := s.Validate(c.token, c.guid)
		e := codeError(t, err, c.want)
		require.NotContains(t, e.Error(), secret, c.name)
		require.NotContains(t, e.Error(), sig, c.name)
	}
}

// signPayloadText signs an arbitrary first part verbatim.
func signPayloadText(key, payloadB64 string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(payloadB64))
	return payloadB64 + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestValidateExpiryIsEnforcedToTheMillisecond(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	s := newSigner(t, clk)
	token, p, err := s.Issue(session, guid)
	require.NoError(t, err)

	clk.Set(time.UnixMilli(p.ExpiresAt)) // Node: Date.now() > expiresAt fails; equal passes
	_, err = s.Validate(token, guid)
	require.NoError(t, err)

	clk.Set(time.UnixMilli(p.ExpiresAt + 1))
	_, err = s.Validate(token, guid)
	e := codeError(t, err, authtoken.CodeExpired)
	require.Equal(t, guid, e.TokenPatientGUID)
	require.ErrorIs(t, err, authtoken.ErrExpired)
	require.NotErrorIs(t, err, authtoken.ErrMissing)
}

func TestValidateShortTTL(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	s := newSigner(t, clk, func(c *authtoken.Config) { c.TTL = 2 * time.Second })
	token, p, err := s.Issue(session, guid)
	require.NoError(t, err)
	require.Equal(t, p.CreatedAt+2000, p.ExpiresAt)
	clk.Set(t0.Add(2001 * time.Millisecond))
	_, err = s.Validate(token, guid)
	requireCode(t, err, authtoken.CodeExpired)
}

func TestValidateComparesGUIDsCaseInsensitively(t *testing.T) {
	t.Parallel()
	s := newSigner(t, clocktest.New(t0))
	token, _, err := s.Issue(session, guid)
	require.NoError(t, err)
	for _, g := range []string{guid, strings.ToLower(guid), " " + guid + " "} {
		p, err := s.Validate(token, g)
		require.NoError(t, err, g)
		require.Equal(t, guid, p.PatientGUID, "the token's spelling is returned")
	}
	_, err = s.Validate(token, guid[:len(guid)-1]+"9")
	e := codeError(t, err, authtoken.CodeGUIDMismatch)
	require.Equal(t, guid, e.TokenPatientGUID)
}

func TestValidateUsesTheSignersSecret(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	a := newSigner(t, clk)
	b := newSigner(t, clk, func(c *authtoken.Config) { c.Secret = []byte("another-secret-0123456789") })
	token, _, err := a.Issue(session, guid)
	require.NoError(t, err)
	_, err = b.Validate(token, guid)
	requireCode(t, err, authtoken.CodeSignatureInvalid)
}

func TestConfigSecretIsCopied(t *testing.T) {
	t.Parallel()
	key := []byte(secret)
	clk := clocktest.New(t0)
	s, err := authtoken.New(authtoken.Config{Secret: key, Now: clk.Now})
	require.NoError(t, err)
	token, _, err := s.Issue(session, guid)
	require.NoError(t, err)
	key[0] ^= 0xff
	_, err = s.Validate(token, guid)
	require.NoError(t, err)
}
