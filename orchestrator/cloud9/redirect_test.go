package cloud9_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// A Cloud9 endpoint answering a redirect is never followed: the XML body
// carries the password, and a 307/308 would send it to whatever host the
// answer names. Each redirect status is an error, with or without a client
// passed in, and the other host receives nothing.
func TestCallNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		stolen.Add(1)
	}))
	defer thief.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, thief.URL+"/GetData.ashx", status)
		}))
		for _, own := range []bool{false, true} {
			c := newClient(t, srv.URL, func(cfg *cloud9.Config) {
				if own {
					cfg.HTTPClient = &http.Client{}
				}
			})
			_, err := c.Call(context.Background(), "GetLocations")
			require.Error(t, err, "status %d, client passed in %v", status, own)
		}
		srv.Close()
	}
	require.Zero(t, stolen.Load(), "a redirect was followed")
}
