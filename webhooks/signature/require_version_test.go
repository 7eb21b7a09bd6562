package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/webhooks/signature"
)

// TestRequireVersionPerRoute: RequireVersion(2) refuses version-1
// signatures on the routes it guards while the verifier's own minimum (1)
// still accepts them elsewhere.
func TestRequireVersionPerRoute(t *testing.T) {
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: &memGuard{}, Now: fixedClock})
	require.NoError(t, err)
	app := fiber.New(fiber.Config{ErrorHandler: errorHandler})
	ok := func(c *fiber.Ctx) error { return c.SendString("ok") }
	app.Post("/ack", v.Middleware(), ok)
	app.Get("/queue/stats", v.Middleware(signature.RequireVersion(2)), ok)
	ts := strconv.FormatInt(fixedClock().Unix(), 10)
	sign := func(s string) string {
		h := hmac.New(sha256.New, testSecret)
		h.Write([]byte(s))
		return hex.EncodeToString(h.Sum(nil))
	}
	send := func(method, target, body, sig, version string) int {
		req := httptest.NewRequest(method, target, nil)
		req.Header.Set(signature.HeaderTimestamp, ts)
		req.Header.Set(signature.HeaderSignature, sig)
		if version != "" {
			req.Header.Set(signature.HeaderSignatureVersion, version)
		}
		resp, err := app.Test(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, send("GET", "/queue/stats", "", sign(ts+"."), ""), "version 1 refused on a strict route")
	require.Equal(t, http.StatusOK, send("GET", "/queue/stats", "", sign(ts+".GET /queue/stats."), "2"))
	require.Equal(t, http.StatusOK, send("POST", "/ack", "", sign(ts+"."), "1"), "version 1 still accepted on /ack")
}
