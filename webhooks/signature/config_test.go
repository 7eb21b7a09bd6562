package signature_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/stretchr/testify/require"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]signature.Mode{
		"":        signature.ModeHMAC,
		"hmac":    signature.ModeHMAC,
		" HMAC ":  signature.ModeHMAC,
		"token":   signature.ModeToken,
		"Token":   signature.ModeToken,
		"none":    signature.ModeNone,
		"NONE\n":  signature.ModeNone,
		"bearer":  "",
		"off":     "",
		"hmac256": "",
	} {
		got, err := signature.ParseMode(in)
		if want == "" {
			require.Error(t, err, "%q", in)
			continue
		}
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	require.True(t, signature.ModeNone.Insecure())
	require.False(t, signature.ModeHMAC.Insecure())
	require.False(t, signature.ModeToken.Insecure())
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	guard := &memGuard{}
	tests := []struct {
		name string
		cfg  signature.Config
		ok   bool
	}{
		{"hmac defaults", signature.Config{Secret: testSecret, Replay: guard}, true},
		{"hmac 16-byte secret", signature.Config{Secret: []byte("0123456789abcdef"), Replay: guard}, true},
		{"hmac 15-byte secret", signature.Config{Secret: []byte("0123456789abcde"), Replay: guard}, false},
		{"hmac no secret", signature.Config{Replay: guard}, false},
		{"hmac no replay guard", signature.Config{Secret: testSecret}, false},
		{"negative tolerance", signature.Config{Secret: testSecret, Replay: guard, Tolerance: -time.Second}, false},
		{"sub-second tolerance", signature.Config{Secret: testSecret, Replay: guard, Tolerance: 500 * time.Millisecond}, false},
		{"token", signature.Config{Mode: signature.ModeToken, Token: testToken}, true},
		{"token missing", signature.Config{Mode: signature.ModeToken, Secret: testSecret}, false},
		{"none", signature.Config{Mode: signature.ModeNone}, true},
		{"unknown mode", signature.Config{Mode: "basic", Secret: testSecret, Replay: guard}, false},
	}
	for _, tt := range tests {
		v, err := signature.New(tt.cfg)
		if tt.ok {
			require.NoError(t, err, tt.name)
			require.NotNil(t, v, tt.name)
			continue
		}
		require.Error(t, err, tt.name)
		require.NotContains(t, err.Error(), string(testSecret), tt.name)
	}

	v, err := signature.New(signature.Config{Secret: testSecret, Replay: guard})
	require.NoError(t, err)
	require.Equal(t, signature.ModeHMAC, v.Mode(), "zero Mode is hmac, never none")
}

func TestNewCopiesSecret(t *testing.T) {
	t.Parallel()
	secret := append([]byte(nil), testSecret...)
	v, err := signature.New(signature.Config{Secret: secret, Replay: &memGuard{}, Now: fixedClock})
	require.NoError(t, err)
	secret[0] ^= 0xff
	require.NoError(t, v.Verify(context.Background(), signed(testSecret, testNow, ackBody).Get, ackBody))
}

func TestSecretsAreNotPrinted(t *testing.T) {
	t.Parallel()
	cfg := signature.Config{Secret: testSecret, Replay: &memGuard{}}
	tok := signature.Config{Mode: signature.ModeToken, Token: testToken}
	vh, err := signature.New(cfg)
	require.NoError(t, err)
	vt, err := signature.New(tok)
	require.NoError(t, err)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, x := range []any{cfg, &cfg, tok, vh, vt} {
			out := fmt.Sprintf(verb, x)
			require.NotContains(t, out, string(testSecret), verb)
			require.NotContains(t, out, testToken, verb)
			require.NotContains(t, out, fmt.Sprintf("%v", testSecret), verb) // as a byte list
		}
	}
}
