package signature_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

// errorHandler stands in for the app's: one place maps codes to status.
func errorHandler(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		err = contracts.Errorf(contracts.CodeForStatus(fe.Code), "%s", fe.Message)
	}
	code := contracts.ErrorCode(err)
	return c.Status(code.HTTPStatus()).JSON(contracts.NewErrorResponse(err, ""))
}

// newApp serves POST /ack behind v, echoing the body it was handed.
func newApp(v *signature.Verifier) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: errorHandler})
	app.Post("/ack", v.Middleware(), func(c *fiber.Ctx) error {
		return c.Send(c.Body())
	})
	return app
}

type reply struct {
	status int
	body   []byte
	env    contracts.ErrorResponse
}

func do(t *testing.T, app *fiber.App, body []byte, set func(*http.Request)) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/ack", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if set != nil {
		set(req)
	}
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, body: b}
	if resp.StatusCode != http.StatusOK {
		require.NoError(t, json.Unmarshal(b, &r.env), string(b))
		require.False(t, r.env.Success)
		require.NotContains(t, string(b), string(testSecret))
	}
	return r
}

func requireReply(t *testing.T, r reply, status int, code contracts.Code, reason string) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	require.Equal(t, code, r.env.Error.Code, string(r.body))
	require.Equal(t, reason, r.env.Error.Details["reason"], string(r.body))
}

func TestMiddlewareHMAC(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	app := newApp(newHMAC(t, signature.NewRedisReplayGuard(db.Client, testPrefix)))
	sign := func(ts time.Time, body []byte) func(*http.Request) {
		return func(r *http.Request) { signature.SignRequest(r, testSecret, ts, body) }
	}

	r := do(t, app, ackBody, sign(testNow, ackBody))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, ackBody, r.body, "handler sees the body")

	requireReply(t, do(t, app, ackBody, sign(testNow, ackBody)), 401, contracts.CodeUnauthorized, signature.ReasonReplayed)
	requireReply(t, do(t, app, ackBody, sign(testNow, []byte("{}"))), 401, contracts.CodeUnauthorized, signature.ReasonBadSignature)
	requireReply(t, do(t, app, ackBody, sign(testNow.Add(-301*time.Second), ackBody)), 401, contracts.CodeUnauthorized, signature.ReasonExpired)
	requireReply(t, do(t, app, ackBody, nil), 401, contracts.CodeUnauthorized, signature.ReasonMissingHeaders)
	requireReply(t, do(t, app, ackBody, func(r *http.Request) {
		r.Header.Set("X-Timestamp", "now")
		r.Header.Set("X-Signature", "x")
	}), 401, contracts.CodeUnauthorized, signature.ReasonBadTimestamp)

	// The signature covers the bytes on the wire, not a decoded body.
	r = do(t, app, []byte("not really gzip"), func(r *http.Request) {
		r.Header.Set("Content-Encoding", "gzip")
		signature.SignRequest(r, testSecret, testNow, []byte("not really gzip"))
	})
	require.NotEqual(t, http.StatusUnauthorized, r.status, string(r.body))
}

func TestMiddlewareRedisDown(t *testing.T) {
	t.Parallel()
	app := newApp(newHMAC(t, signature.NewRedisReplayGuard(downClient(t), "")))
	r := do(t, app, ackBody, func(r *http.Request) { signature.SignRequest(r, testSecret, testNow, ackBody) })
	requireReply(t, r, 503, contracts.CodeUnavailable, signature.ReasonReplayUnavailable)
	require.NotContains(t, string(r.body), "127.0.0.1")
}

func TestMiddlewareToken(t *testing.T) {
	t.Parallel()
	v, err := signature.New(signature.Config{Mode: signature.ModeToken, Token: testToken})
	require.NoError(t, err)
	app := newApp(v)
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}

	r := do(t, app, ackBody, bearer(testToken))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = do(t, app, ackBody, bearer(testToken)) // no replay protection in token mode
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireReply(t, do(t, app, ackBody, bearer("guess")), 401, contracts.CodeUnauthorized, signature.ReasonBadToken)
	requireReply(t, do(t, app, ackBody, nil), 401, contracts.CodeUnauthorized, signature.ReasonMissingHeaders)
}

func TestMiddlewareNone(t *testing.T) {
	t.Parallel()
	v, err := signature.New(signature.Config{Mode: signature.ModeNone})
	require.NoError(t, err)
	r := do(t, newApp(v), ackBody, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
}
