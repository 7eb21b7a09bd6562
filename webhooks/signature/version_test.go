package signature_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// routeApp serves body-less GET /queue and PATCH /queue/:id/requeue behind v.
func routeApp(v *signature.Verifier) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: errorHandler})
	ok := func(c *fiber.Ctx) error { return c.SendString("ok") }
	app.Get("/queue", v.Middleware(), ok)
	app.Patch("/queue/:id/requeue", v.Middleware(), ok)
	return app
}

func send(t *testing.T, app *fiber.App, method, target string, sign func(*http.Request)) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	sign(req)
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env contracts.ErrorResponse
	if resp.StatusCode != 200 {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		return resp.StatusCode, env.Error.Details["reason"].(string)
	}
	return 200, ""
}

// Version 1 (the seed's scheme) signs only timestamp.body: two body-less
// requests in the same second carry the same signature, and a captured
// request is valid on any route. A signature is accepted once across all
// routes: the second use is a replay whatever its method, path or query.
// Version 2 signs the route, so the same second serves several routes.
func TestV1ReplayIsOncePerSignature(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	app := routeApp(newHMAC(t, signature.NewRedisReplayGuard(db.Client, testPrefix)))
	v1 := func(r *http.Request) { signature.SignRequest(r, testSecret, testNow, nil) }
	status, _ := send(t, app, http.MethodGet, "/queue?status=PENDING", v1)
	require.Equal(t, 200, status)
	for _, rt := range []struct{ method, target string }{
		{http.MethodGet, "/queue?status=DONE"},
		{http.MethodPatch, "/queue/abc/requeue"},
		{http.MethodGet, "/queue?status=PENDING"},
	} {
		status, reason := send(t, app, rt.method, rt.target, v1)
		require.Equal(t, 401, status, rt.target)
		require.Equal(t, signature.ReasonReplayed, reason, rt.target)
	}

	v2 := func(r *http.Request) { signature.SignRequestV2(r, testSecret, testNow, nil) }
	for _, rt := range []struct{ method, target string }{
		{http.MethodGet, "/queue?status=DONE"},
		{http.MethodPatch, "/queue/abc/requeue"},
	} {
		status, _ := send(t, app, rt.method, rt.target, v2)
		require.Equal(t, 200, status, "version 2, %s %s: another route is another request", rt.method, rt.target)
	}
}

// A state-changing request replayed under another spelling of its route
// (a made-up query, upper case, a trailing slash, an escaped character) or
// on another task is still a replay: the v1 signature does not cover the
// URL.
func TestV1ReplayIgnoresRouteSpelling(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	app := routeApp(newHMAC(t, signature.NewRedisReplayGuard(db.Client, testPrefix)))
	v1 := func(r *http.Request) { signature.SignRequest(r, testSecret, testNow, nil) }
	status, _ := send(t, app, http.MethodPatch, "/queue/abc/requeue", v1)
	require.Equal(t, 200, status)
	for _, target := range []string{"/queue/abc/requeue?x=1", "/Queue/ABC/requeue", "/queue/abc/requeue/", "/queue/%61bc/requeue"} {
		status, reason := send(t, app, http.MethodPatch, target, v1)
		require.Equal(t, 401, status, target)
		require.Equal(t, signature.ReasonReplayed, reason, target)
	}
	status, reason := send(t, app, http.MethodPatch, "/queue/other/requeue", v1)
	require.Equal(t, 401, status, "another task's requeue with the same signature")
	require.Equal(t, signature.ReasonReplayed, reason)
	status, _ = send(t, app, http.MethodPatch, "/queue/other/requeue", func(r *http.Request) {
		signature.SignRequest(r, testSecret, testNow.Add(-time.Second), nil)
	})
	require.Equal(t, 200, status, "signed at another second: another request")
}

// Version 2 signs method and target: a captured signature is worthless on
// any other route, and MinVersion 2 refuses version 1.
func TestV2BindsMethodAndTarget(t *testing.T) {
	t.Parallel()
	guard := &memGuard{}
	v, err := signature.New(signature.Config{Secret: testSecret, Replay: guard, Now: fixedClock, MinVersion: 2})
	require.NoError(t, err)
	app := routeApp(v)
	v2 := func(r *http.Request) { signature.SignRequestV2(r, testSecret, testNow, nil) }
	status, _ := send(t, app, http.MethodPatch, "/queue/abc/requeue", v2)
	require.Equal(t, 200, status)

	stolen := httptest.NewRequest(http.MethodGet, "/queue?status=PENDING", nil)
	signature.SignRequestV2(stolen, testSecret, testNow.Add(-1), nil)
	status, reason := send(t, app, http.MethodPatch, "/queue/other/requeue", func(r *http.Request) { r.Header = stolen.Header.Clone() })
	require.Equal(t, 401, status)
	require.Equal(t, signature.ReasonBadSignature, reason)

	status, reason = send(t, app, http.MethodGet, "/queue", func(r *http.Request) { signature.SignRequest(r, testSecret, testNow, nil) })
	require.Equal(t, 401, status)
	require.Equal(t, signature.ReasonOldVersion, reason)

	status, reason = send(t, app, http.MethodGet, "/queue", func(r *http.Request) {
		signature.SignRequestV2(r, testSecret, testNow, nil)
		r.Header.Set(signature.HeaderSignatureVersion, "3")
	})
	require.Equal(t, 401, status)
	require.Equal(t, signature.ReasonBadVersion, reason)

	_, err = signature.New(signature.Config{Secret: testSecret, Replay: guard, MinVersion: 3})
	require.Error(t, err)
}
