package hmacsig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// DefaultSendTimeout bounds a Sender's request when it has no Client.
const DefaultSendTimeout = 10 * time.Second

// maxAnswer is how much of an answer's body a Sender keeps.
const maxAnswer = 512

// Sender POSTs JSON bodies signed with version 1 (X-Timestamp,
// X-Signature): flowgate's one way to send a signed webhook (the booking
// completion events, the work buffer's webhook.forward and its DLQ alert).
// It never follows a redirect, whatever Client says (NoRedirect): a 3xx is
// the Answer, not OK.
type Sender struct {
	// Secret signs every POST: flowgate's outbound secret, never the one
	// its own routes verify (a receiver could replay the POST at flowgate).
	Secret []byte
	Client *http.Client     // default: a client with DefaultSendTimeout; used without its CheckRedirect
	Now    func() time.Time // default time.Now
}

// Answer is what the receiver said: its status, the first 512 bytes of
// its body and, for a 3xx, where it wanted the POST to go instead.
type Answer struct {
	StatusCode int
	Body       []byte
	Location   string // a 3xx's Location (cut at 256 bytes); "" otherwise
}

// OK reports a 2xx status.
func (a Answer) OK() bool { return a.StatusCode >= 200 && a.StatusCode <= 299 }

// String is the status ("500"), or for a redirect `302, a redirect to
// "<where>" (not followed)`, for errors ("… answered %s").
func (a Answer) String() string {
	if IsRedirect(a.StatusCode) {
		return fmt.Sprintf("%d, a redirect to %q (not followed)", a.StatusCode, a.Location)
	}
	return strconv.Itoa(a.StatusCode)
}

// Post signs body and POSTs it to url as application/json, with header's
// values added. A transport failure is an error (wrapping the net error,
// so callers can classify it); any HTTP answer, 2xx or not, a 3xx
// included, is an Answer.
func (s Sender) Post(ctx context.Context, url string, body []byte, header http.Header) (Answer, error) {
	if len(s.Secret) == 0 {
		return Answer{}, errors.New("hmacsig: a sender needs a secret")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("hmacsig: request: %w", err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	SignRequest(req, s.Secret, now(), body)
	if req.Header.Get(HeaderMessageID) != "" { // a delivery of the work buffer
		SignDelivery(req.Header, s.Secret, body)
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: DefaultSendTimeout}
	}
	resp, err := NoRedirect(c).Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("hmacsig: post: %w", err)
	}
	defer resp.Body.Close()
	ans, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	a := Answer{StatusCode: resp.StatusCode, Body: ans}
	if IsRedirect(a.StatusCode) {
		a.Location = Location(resp.Header)
	}
	return a, nil
}
