package hmacsig

import (
	"net/http"
	"strings"
)

// NoRedirect returns a copy of c (a new client when c is nil) that never
// follows a redirect: a 3xx comes back as the answer, its body unread.
// Every client that sends a signature or a secret header goes through it,
// so none reaches a host the operator did not write: Go's client follows
// 301/302/303 as a body-less GET (whose 2xx would read as "delivered") and
// 307/308 with the body and every header but Authorization and Cookie, to
// whatever host Location names. c itself is left as it was (a caller may
// share it).
func NoRedirect(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		cp := *c
		out = &cp
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return out
}

// IsRedirect reports a 3xx status: an answer a client of NoRedirect hands
// back instead of following.
func IsRedirect(status int) bool { return status >= 300 && status <= 399 }

// maxLocation bounds the Location kept from a redirect.
const maxLocation = 256

// Location is a redirect's Location header, cut at 256 bytes, for an
// error that says where the target wanted to send the request.
func Location(h http.Header) string {
	l := strings.TrimSpace(h.Get("Location"))
	if len(l) > maxLocation {
		l = l[:maxLocation] + "…"
	}
	return l
}
