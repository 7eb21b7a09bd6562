package hmacsig_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// redirecting is a target that answers every request with status and a
// Location on elsewhere, which counts what reaches it (and any signature).
func redirecting(t *testing.T, status int) (target *httptest.Server, elsewhere *atomic.Int64, signed *atomic.Int64) {
	t.Helper()
	elsewhere, signed = new(atomic.Int64), new(atomic.Int64)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get(hmacsig.HeaderSignature) != "" {
			signed.Add(1)
		}
	}))
	t.Cleanup(other.Close)
	target = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen", status)
	}))
	t.Cleanup(target.Close)
	return target, elsewhere, signed
}

// A Sender never follows a redirect, with its own client or one passed in
// (whose CheckRedirect would follow): the 3xx is the answer, not OK, and
// names where it pointed; nothing reaches the other host. The client passed
// in is left as it was.
func TestSenderNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, name := range []string{"own client", "client passed in"} {
			t.Run(fmt.Sprintf("%d %s", status, name), func(t *testing.T) {
				t.Parallel()
				target, elsewhere, signed := redirecting(t, status)
				follows := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
				s := hmacsig.Sender{Secret: []byte("s3cret-0123456789"), Now: time.Now}
				if name == "client passed in" {
					s.Client = follows
				}
				ans, err := s.Post(context.Background(), target.URL, []byte(`{"a":1}`), nil)
				require.NoError(t, err)
				require.Equal(t, status, ans.StatusCode)
				require.False(t, ans.OK())
				require.Contains(t, ans.Location, "/stolen")
				require.Contains(t, ans.String(), "not followed")
				require.Zero(t, elsewhere.Load(), "a request reached the host the redirect named")
				require.Zero(t, signed.Load())
				require.NotNil(t, follows.CheckRedirect, "the caller's client is not changed")
				require.NoError(t, follows.CheckRedirect(nil, nil))
			})
		}
	}
}

// NoRedirect copies the client (its timeout and transport kept) and stops
// at the first answer.
func TestNoRedirect(t *testing.T) {
	t.Parallel()
	target, elsewhere, _ := redirecting(t, http.StatusTemporaryRedirect)
	tr := &http.Transport{}
	c := hmacsig.NoRedirect(&http.Client{Timeout: 3 * time.Second, Transport: tr})
	require.Equal(t, 3*time.Second, c.Timeout)
	require.Same(t, tr, c.Transport)
	for _, c := range []*http.Client{c, hmacsig.NoRedirect(nil)} {
		resp, err := c.Post(target.URL, "application/json", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	}
	require.Zero(t, elsewhere.Load())
	require.True(t, hmacsig.IsRedirect(300))
	require.True(t, hmacsig.IsRedirect(399))
	require.False(t, hmacsig.IsRedirect(200))
	require.False(t, hmacsig.IsRedirect(400))
}
