package signature_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/stretchr/testify/require"
)

const testToken = "worker-token-7c1e9b1f5a"

func TestVerifyHMAC(t *testing.T) {
	t.Parallel()
	valid := signed(testSecret, testNow, ackBody)
	ts, sig := valid.Get("X-Timestamp"), valid.Get("X-Signature")

	tests := []struct {
		name   string
		header http.Header
		body   []byte
		reason string // "" means accepted
	}{
		{"valid", valid, ackBody, ""},
		{"sha256= prefix", headers("X-Timestamp", ts, "X-Signature", "sha256="+sig), ackBody, ""},
		{"upper-case hex", headers("X-Timestamp", ts, "X-Signature", strings.ToUpper(sig)), ackBody, ""},
		{"surrounding space", headers("X-Timestamp", " "+ts+" ", "X-Signature", " "+sig), ackBody, ""},
		{"empty body", signed(testSecret, testNow, nil), nil, ""},
		{"exactly 300s old", signed(testSecret, testNow.Add(-300*time.Second), ackBody), ackBody, ""},
		{"exactly 300s ahead", signed(testSecret, testNow.Add(300*time.Second), ackBody), ackBody, ""},

		{"forged signature", headers("X-Timestamp", ts, "X-Signature", strings.Repeat("ab", 32)), ackBody, signature.ReasonBadSignature},
		{"wrong secret", signed([]byte("another-secret-0123456789"), testNow, ackBody), ackBody, signature.ReasonBadSignature},
		{"body tampered", valid, []byte(`{"queue_id":"other"}`), signature.ReasonBadSignature},
		{"timestamp changed", headers("X-Timestamp", fmt.Sprint(testNow.Unix()-1), "X-Signature", sig), ackBody, signature.ReasonBadSignature},
		{"301s old", signed(testSecret, testNow.Add(-301*time.Second), ackBody), ackBody, signature.ReasonExpired},
		{"301s ahead", signed(testSecret, testNow.Add(301*time.Second), ackBody), ackBody, signature.ReasonExpired},
		{"no headers", headers(), ackBody, signature.ReasonMissingHeaders},
		{"no timestamp", headers("X-Signature", sig), ackBody, signature.ReasonMissingHeaders},
		{"no signature", headers("X-Timestamp", ts), ackBody, signature.ReasonMissingHeaders},
		{"blank signature", headers("X-Timestamp", ts, "X-Signature", "  "), ackBody, signature.ReasonMissingHeaders},
		{"non-numeric timestamp", headers("X-Timestamp", "yesterday", "X-Signature", sig), ackBody, signature.ReasonBadTimestamp},
		{"negative timestamp", headers("X-Timestamp", "-1700000000", "X-Signature", sig), ackBody, signature.ReasonBadTimestamp},
		{"signed timestamp", headers("X-Timestamp", "+1700000000", "X-Signature", sig), ackBody, signature.ReasonBadTimestamp},
		{"millisecond timestamp", headers("X-Timestamp", "1700000000000", "X-Signature", sig), ackBody, signature.ReasonExpired},
		{"fractional timestamp", headers("X-Timestamp", "1700000000.5", "X-Signature", sig), ackBody, signature.ReasonBadTimestamp},
		{"overflowing timestamp", headers("X-Timestamp", "99999999999999999999", "X-Signature", sig), ackBody, signature.ReasonBadTimestamp},
		{"bad hex", headers("X-Timestamp", ts, "X-Signature", strings.Repeat("zz", 32)), ackBody, signature.ReasonMalformedSignature},
		{"short hex", headers("X-Timestamp", ts, "X-Signature", sig[:62]), ackBody, signature.ReasonMalformedSignature},
		{"prefix only", headers("X-Timestamp", ts, "X-Signature", "sha256="), ackBody, signature.ReasonMalformedSignature},
		{"base64", headers("X-Timestamp", ts, "X-Signature", "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA="), ackBody, signature.ReasonMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := newHMAC(t, nil).Verify(context.Background(), tt.header.Get, tt.body)
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			requireRefused(t, err, contracts.CodeUnauthorized, tt.reason)
		})
	}
}

func TestVerifyMessagesAreDistinct(t *testing.T) {
	t.Parallel()
	valid := signed(testSecret, testNow, ackBody)
	ts, sig := valid.Get("X-Timestamp"), valid.Get("X-Signature")
	v := newHMAC(t, nil)
	require.NoError(t, v.Verify(context.Background(), valid.Get, ackBody))
	tok, err := signature.New(signature.Config{Mode: signature.ModeToken, Token: testToken})
	require.NoError(t, err)

	errs := []error{
		v.Verify(context.Background(), headers().Get, ackBody),
		v.Verify(context.Background(), headers("X-Signature", sig).Get, ackBody),
		v.Verify(context.Background(), headers("X-Timestamp", ts).Get, ackBody),
		v.Verify(context.Background(), headers("X-Timestamp", "x", "X-Signature", sig).Get, ackBody),
		v.Verify(context.Background(), signed(testSecret, testNow.Add(-time.Hour), ackBody).Get, ackBody),
		v.Verify(context.Background(), signed(testSecret, testNow.Add(time.Hour), ackBody).Get, ackBody),
		v.Verify(context.Background(), headers("X-Timestamp", ts, "X-Signature", "nothex").Get, ackBody),
		v.Verify(context.Background(), valid.Get, []byte("{}")),
		v.Verify(context.Background(), valid.Get, ackBody), // replayed
		tok.Verify(context.Background(), headers().Get, nil),
		tok.Verify(context.Background(), headers("Authorization", "Basic x").Get, nil),
		tok.Verify(context.Background(), headers("Authorization", "Bearer nope").Get, nil),
	}
	seen := map[string]bool{}
	for i, err := range errs {
		var e *contracts.Error
		require.ErrorAs(t, err, &e, "case %d", i)
		require.Equal(t, contracts.CodeUnauthorized, e.Code, "case %d", i)
		require.False(t, seen[e.Message], "case %d repeats message %q", i, e.Message)
		seen[e.Message] = true
	}
}

func TestVerifyToken(t *testing.T) {
	t.Parallel()
	v, err := signature.New(signature.Config{Mode: signature.ModeToken, Token: testToken})
	require.NoError(t, err)
	require.Equal(t, signature.ModeToken, v.Mode())
	require.False(t, v.Mode().Insecure())

	tests := []struct {
		name, auth, reason string
	}{
		{"good", "Bearer " + testToken, ""},
		{"scheme case-insensitive", "bearer " + testToken, ""},
		{"missing", "", signature.ReasonMissingHeaders},
		{"wrong token", "Bearer " + testToken + "x", signature.ReasonBadToken},
		{"prefix of token", "Bearer " + testToken[:5], signature.ReasonBadToken},
		{"basic scheme", "Basic " + testToken, signature.ReasonBadToken},
		{"no scheme", testToken, signature.ReasonBadToken},
		{"empty bearer", "Bearer ", signature.ReasonBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := v.Verify(context.Background(), headers("Authorization", tt.auth).Get, ackBody)
			if tt.reason == "" {
				require.NoError(t, err)
				return
			}
			requireRefused(t, err, contracts.CodeUnauthorized, tt.reason)
		})
	}

	t.Run("HMAC headers do not stand in for the token", func(t *testing.T) {
		t.Parallel()
		err := v.Verify(context.Background(), signed(testSecret, time.Now(), ackBody).Get, ackBody)
		requireRefused(t, err, contracts.CodeUnauthorized, signature.ReasonMissingHeaders)
	})
}

func TestVerifyNone(t *testing.T) {
	t.Parallel()
	v, err := signature.New(signature.Config{Mode: signature.ModeNone})
	require.NoError(t, err)
	require.True(t, v.Mode().Insecure())
	require.NoError(t, v.Verify(context.Background(), headers().Get, ackBody))
	require.NoError(t, v.Verify(context.Background(), headers("X-Signature", "forged").Get, nil))
}

func TestReplayGuardErrorFailsClosed(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("dial tcp: connection refused")
	v := newHMAC(t, signature.ReplayGuardFunc(func(context.Context, string, time.Duration) (bool, error) {
		return false, cause
	}))
	err := v.Verify(context.Background(), signed(testSecret, testNow, ackBody).Get, ackBody)
	e := refusal(t, err, contracts.CodeUnavailable, signature.ReasonReplayUnavailable)
	require.ErrorIs(t, e, cause)
	require.NotContains(t, contracts.NewErrorResponse(err, "").Error.Message, "dial")
}

func TestReplayGuardSeesNormalisedSignatureAndTTL(t *testing.T) {
	t.Parallel()
	type call struct {
		sig string
		ttl time.Duration
	}
	var calls []call
	guard := signature.ReplayGuardFunc(func(_ context.Context, sig string, ttl time.Duration) (bool, error) {
		calls = append(calls, call{sig, ttl})
		return false, nil
	})
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: guard, Now: fixedClock, Tolerance: 90 * time.Second})
	require.NoError(t, err)

	h := signed(testSecret, testNow, ackBody)
	sig := h.Get("X-Signature")
	h.Set("X-Signature", "SHA256="+strings.ToUpper(sig))
	require.NoError(t, v.Verify(context.Background(), h.Get, ackBody))
	require.Equal(t, []call{{sig, 180 * time.Second}}, calls)

	// A forged request never reaches the guard.
	h.Set("X-Signature", strings.Repeat("0", 64))
	require.Error(t, v.Verify(context.Background(), h.Get, ackBody))
	require.Len(t, calls, 1)
}

func TestTolerance(t *testing.T) {
	t.Parallel()
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: &memGuard{}, Now: fixedClock, Tolerance: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, v.Verify(context.Background(), signed(testSecret, testNow.Add(-30*time.Second), ackBody).Get, ackBody))
	err = v.Verify(context.Background(), signed(testSecret, testNow.Add(-31*time.Second), ackBody).Get, ackBody)
	requireRefused(t, err, contracts.CodeUnauthorized, signature.ReasonExpired)
}

func TestClockIsReadPerRequest(t *testing.T) {
	t.Parallel()
	now := testNow
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: &memGuard{}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	h := signed(testSecret, testNow, ackBody)
	now = testNow.Add(301 * time.Second)
	requireRefused(t, v.Verify(context.Background(), h.Get, ackBody), contracts.CodeUnauthorized, signature.ReasonExpired)
	now = testNow.Add(300 * time.Second)
	require.NoError(t, v.Verify(context.Background(), h.Get, ackBody))
}
