package hmacsig_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

func hexMAC(secret, msg string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}

// Both versions sign exactly the documented strings.
func TestSignFormulas(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1_700_000_123, 0)
	gotTS, sig := hmacsig.Sign([]byte("s3cret-0123456789"), ts, []byte(`{"a":1}`))
	require.Equal(t, "1700000123", gotTS)
	require.Equal(t, hexMAC("s3cret-0123456789", `1700000123.{"a":1}`), sig)

	_, sig2 := hmacsig.SignV2([]byte("s3cret-0123456789"), ts, "POST", "/q/x?y=1", []byte("b"))
	require.Equal(t, hexMAC("s3cret-0123456789", "1700000123.POST /q/x?y=1.b"), sig2)
}

func TestSignRequestSetsHeaders(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1_700_000_000, 0)
	req, err := http.NewRequest(http.MethodPost, "http://h/path?q=1", nil)
	require.NoError(t, err)
	hmacsig.SignRequest(req, []byte("k"), ts, []byte("body"))
	require.Equal(t, "1700000000", req.Header.Get(hmacsig.HeaderTimestamp))
	require.Equal(t, hexMAC("k", "1700000000.body"), req.Header.Get(hmacsig.HeaderSignature))
	require.Empty(t, req.Header.Get(hmacsig.HeaderSignatureVersion))

	hmacsig.SignRequestV2(req, []byte("k"), ts, []byte("body"))
	require.Equal(t, "2", req.Header.Get(hmacsig.HeaderSignatureVersion))
	require.Equal(t, hexMAC("k", "1700000000.POST /path?q=1.body"), req.Header.Get(hmacsig.HeaderSignature))
}
