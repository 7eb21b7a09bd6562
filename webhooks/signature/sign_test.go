package signature_test

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/stretchr/testify/require"
)

// opensslFormula is the expected signature, computed the way the package
// doc's shell line does: HMAC-SHA256 over "<ts>.<body>", lowercase hex.
func opensslFormula(secret, ts, body string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts + "." + body))
	return hex.EncodeToString(h.Sum(nil))
}

// docSigLine is the "sig=$(…)" line of the package doc, so the test runs
// exactly what the documentation tells people to run.
func docSigLine(t *testing.T) string {
	t.Helper()
	f, err := os.Open("doc.go")
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(strings.TrimPrefix(s.Text(), "//")); strings.HasPrefix(line, "sig=$(") {
			return line
		}
	}
	require.NoError(t, s.Err())
	t.Fatal("doc.go has no sig=$(…) line")
	return ""
}

func TestSignMatchesOpenSSLFormula(t *testing.T) {
	t.Parallel()
	const secret = "n8n-shared-secret-0123456789"
	ts := time.Unix(1_700_000_123, 0)
	bodies := []string{
		string(ackBody),
		"",
		`{"error_message":"100% failed: \"quote\" \\ back\tslash","name":"Zoë"}`,
		"two\nlines",
	}
	for _, body := range bodies {
		gotTS, gotSig := signature.Sign([]byte(secret), ts, []byte(body))
		require.Equal(t, "1700000123", gotTS)
		require.Equal(t, opensslFormula(secret, gotTS, body), gotSig, "body %q", body)
	}

	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not on PATH; formula checked in Go only")
	}
	line := docSigLine(t)
	for _, body := range bodies {
		cmd := exec.Command("sh", "-c", line+`; printf '%s' "$sig"`)
		cmd.Env = append(os.Environ(), "HMAC_SECRET="+secret, "ts=1700000123", "body="+body)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", line)
		require.Equal(t, opensslFormula(secret, "1700000123", body), string(out), "body %q", body)
	}
}

func TestSignRequestSetsHeaders(t *testing.T) {
	t.Parallel()
	req, err := http.NewRequest(http.MethodPost, "http://flowgate/fail", nil)
	require.NoError(t, err)
	signature.SignRequest(req, testSecret, testNow, ackBody)
	require.Equal(t, strconv.FormatInt(testNow.Unix(), 10), req.Header.Get(signature.HeaderTimestamp))
	require.Equal(t, opensslFormula(string(testSecret), req.Header.Get("X-Timestamp"), string(ackBody)), req.Header.Get(signature.HeaderSignature))
	require.Nil(t, req.Body)
}
