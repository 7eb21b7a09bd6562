package authtoken_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/test/clocktest"
)

// nodeIssue is createPatient's token code, run by Node.js with inputs from
// the environment (no quoting games).
const nodeIssue = `
const crypto = require('crypto');
const e = process.env;
const createdAt = Number(e.CREATED_AT);
const tokenData = {
  sessionId: e.SESSION_ID,
  patientGUID: e.PATIENT_GUID,
  createdAt: createdAt,
  expiresAt: createdAt + 15 * 60 * 1000,
  nonce: e.NONCE || crypto.randomBytes(6).toString('hex'),
};
const payloadB64 = Buffer.from(JSON.stringify(tokenData)).toString('base64url');
const sig = crypto.createHmac('sha256', e.SECRET).update(payloadB64).digest('base64url');
process.stdout.write(payloadB64 + '.' + sig);
`

func runNode(t *testing.T, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	cmd := exec.Command(node, "-e", nodeIssue)
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func TestNodeREDTokensAreByteCompatible(t *testing.T) {
	t.Parallel()
	for _, sessionID := range []string{session, "call-<é>&\"quoted\"\\x"} {
		nodeToken := runNode(t, "SECRET="+secret, "SESSION_ID="+sessionID, "PATIENT_GUID="+guid,
			"CREATED_AT=1768822558209", "NONCE=5b0b1d22ff73")
		goToken, _, err := newSigner(t, clocktest.New(t0)).Issue(sessionID, guid)
		require.NoError(t, err)
		require.Equal(t, nodeToken, goToken, "same inputs, same bytes (session %q)", sessionID)
	}
}

func TestNodeREDTokensValidate(t *testing.T) {
	t.Parallel()
	created := t0.Add(-time.Minute)
	nodeToken := runNode(t, "SECRET="+secret, "SESSION_ID=call-session-123", "PATIENT_GUID="+guid,
		"CREATED_AT="+itoa(created.UnixMilli()))

	clk := clocktest.New(t0)
	s := newSigner(t, clk)
	p, err := s.Validate(nodeToken, guid)
	require.NoError(t, err)
	require.Equal(t, "call-session-123", p.SessionID)
	require.Equal(t, created.UnixMilli()+15*60*1000, p.ExpiresAt)
	require.Regexp(t, `^[0-9a-f]{12}$`, p.Nonce)

	clk.Set(created.Add(15*time.Minute + time.Millisecond))
	_, err = s.Validate(nodeToken, guid)
	requireCode(t, err, authtoken.CodeExpired)

	other := runNode(t, "SECRET=CDH-Ortho-BookingAuth-2026", "SESSION_ID=x", "PATIENT_GUID="+guid,
		"CREATED_AT="+itoa(created.UnixMilli()))
	clk.Set(t0)
	_, err = s.Validate(other, guid)
	requireCode(t, err, authtoken.CodeSignatureInvalid)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
