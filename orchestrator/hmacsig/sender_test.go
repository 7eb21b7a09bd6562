package hmacsig_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// Sender posts the body as JSON with a version-1 signature the receiver
// can check, keeps the caller's headers, and reports the answer.
func TestSenderPostsSigned(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret-0123456789")
	at := time.Unix(1_700_000_123, 0)
	type seen struct {
		ts, sig, ct, extra, delivery string
		body                         []byte
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Get(hmacsig.HeaderTimestamp), r.Header.Get(hmacsig.HeaderSignature), r.Header.Get("Content-Type"), r.Header.Get("X-Extra"), r.Header.Get(hmacsig.HeaderDeliverySignature), b}
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
	}))
	t.Cleanup(srv.Close)

	s := hmacsig.Sender{Secret: secret, Now: func() time.Time { return at }}
	ans, err := s.Post(context.Background(), srv.URL, []byte(`{"a":1}`), http.Header{"X-Extra": {"v"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusTeapot, ans.StatusCode)
	require.False(t, ans.OK())
	require.Len(t, ans.Body, 512, "the answer is kept bounded")
	r := <-got
	require.Equal(t, "1700000123", r.ts)
	require.Equal(t, hexMAC(string(secret), `1700000123.{"a":1}`), r.sig)
	require.Equal(t, "application/json", r.ct)
	require.Equal(t, "v", r.extra)
	require.JSONEq(t, `{"a":1}`, string(r.body))
	require.Empty(t, r.delivery, "no delivery signature without a message id")

	// A delivery of the work buffer (a message id) is signed as one too.
	_, err = s.Post(context.Background(), srv.URL, []byte(`{"a":1}`),
		http.Header{hmacsig.HeaderMessageID: {"m-1"}, hmacsig.HeaderAttempt: {"2"}})
	require.NoError(t, err)
	r = <-got
	require.Equal(t, hexMAC(string(secret), "1700000123\nm-1\n2\n{\"a\":1}"), r.delivery)
}

// A transport failure is an error that still says what failed (a refused
// connection stays classifiable); a sender without a secret refuses.
func TestSenderErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = hmacsig.Sender{Secret: []byte("k")}.Post(context.Background(), "http://"+addr, []byte(`{}`), nil)
	require.ErrorContains(t, err, "connection refused")
	_, err = hmacsig.Sender{}.Post(context.Background(), "http://"+addr, []byte(`{}`), nil)
	require.ErrorContains(t, err, "secret")
}
