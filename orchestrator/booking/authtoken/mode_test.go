package authtoken_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/test/clocktest"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]authtoken.Mode{
		"": authtoken.ModeSession, "session": authtoken.ModeSession, " Token ": authtoken.ModeToken,
		"LEGACY": authtoken.ModeLegacy,
	} {
		got, err := authtoken.ParseMode(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := authtoken.ParseMode("session_match")
	require.Error(t, err)
}

func TestIsGUID(t *testing.T) {
	t.Parallel()
	require.True(t, authtoken.IsGUID(guid))
	require.True(t, authtoken.IsGUID(strings.ToLower(guid)))
	for _, bad := range []string{"", "not-a-guid", guid + "0", "{" + guid + "}", strings.ReplaceAll(guid, "-", ""),
		"877F0034-7E09-4E35-BE0D-397E309DF2EG"} {
		require.False(t, authtoken.IsGUID(bad), bad)
	}
}

func TestDecideTheSeedsThreeMethods(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	s := newSigner(t, clk)
	token, _, err := s.Issue(session, guid)
	require.NoError(t, err)
	const other = "11111111-2222-3333-4444-555555555555"
	lower := strings.ToLower(guid)

	type want struct {
		method authtoken.Method
		code   authtoken.Code
	}
	cases := []struct {
		name                       string
		mode                       authtoken.Mode
		token, request, sessionGID string
		want                       want
	}{
		// A valid token passes in every mode.
		{"token/token", authtoken.ModeToken, token, guid, "", want{method: authtoken.MethodToken}},
		{"session/token", authtoken.ModeSession, token, lower, "", want{method: authtoken.MethodToken}},
		{"legacy/token", authtoken.ModeLegacy, token, guid, other, want{method: authtoken.MethodToken}},
		// A bad token is refused in every mode, even where no token would pass.
		{"token/bad", authtoken.ModeToken, token + "x", guid, guid, want{code: authtoken.CodeSignatureInvalid}},
		{"session/bad", authtoken.ModeSession, token + "x", guid, guid, want{code: authtoken.CodeSignatureInvalid}},
		{"legacy/bad", authtoken.ModeLegacy, "garbage", guid, guid, want{code: authtoken.CodeMalformed}},
		{"session/token for other", authtoken.ModeSession, token, other, other, want{code: authtoken.CodeGUIDMismatch}},
		// No token.
		{"token/none", authtoken.ModeToken, "", guid, guid, want{code: authtoken.CodeMissing}},
		{"session/match", authtoken.ModeSession, "", guid, lower, want{method: authtoken.MethodSessionMatch}},
		{"session/no session", authtoken.ModeSession, "", guid, "", want{code: authtoken.CodeMissing}},
		{"session/other session", authtoken.ModeSession, "", guid, other, want{code: authtoken.CodeMissing}},
		{"session/empty both", authtoken.ModeSession, "", "", "", want{code: authtoken.CodeMissing}},
		{"legacy/match", authtoken.ModeLegacy, "", guid, guid, want{method: authtoken.MethodSessionMatch}},
		{"legacy/any GUID", authtoken.ModeLegacy, "", guid, "", want{method: authtoken.MethodLegacy}},
		{"legacy/any GUID, other session", authtoken.ModeLegacy, "", guid, other, want{method: authtoken.MethodLegacy}},
		{"legacy/not a GUID", authtoken.ModeLegacy, "", "12345", "", want{code: authtoken.CodeMissing}},
		{"unknown mode fails closed", authtoken.Mode("open"), "", guid, guid, want{code: authtoken.CodeMissing}},
	}
	for _, c := range cases {
		d, err := s.Decide(c.mode, c.token, c.request, c.sessionGID)
		if c.want.code != "" {
			requireCode(t, err, c.want.code)
			require.Zero(t, d, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.want.method, d.Method, c.name)
		require.True(t, strings.EqualFold(c.request, d.PatientGUID), c.name)
		if d.Method == authtoken.MethodToken {
			require.NotNil(t, d.Payload, c.name)
			require.Equal(t, guid, d.PatientGUID, "the token's GUID is authorised")
		} else {
			require.Nil(t, d.Payload, c.name)
		}
	}
}

func TestDecideExpiredTokenIsRefusedEvenWithASession(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	s := newSigner(t, clk)
	token, p, err := s.Issue(session, guid)
	require.NoError(t, err)
	clk.Set(p.Expires().Add(time.Millisecond))
	_, err = s.Decide(authtoken.ModeLegacy, token, guid, guid)
	requireCode(t, err, authtoken.CodeExpired)
}
