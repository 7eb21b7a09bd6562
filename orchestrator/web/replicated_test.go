package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/web"
)

// notReplicated says what durable.ErrNotReplicated says (the shell
// imports no domain package, its tests neither).
type notReplicated struct{}

func (notReplicated) Error() string       { return "not replicated" }
func (notReplicated) NotReplicated() bool { return true }

type fakeSyncer struct {
	calls atomic.Int32
	err   error
}

func (f *fakeSyncer) Sync(context.Context) error { f.calls.Add(1); return f.err }

func appWith(t *testing.T, s web.Syncer, observed *atomic.Int32) *fiber.App {
	t.Helper()
	app, err := web.New(web.Options{})
	require.NoError(t, err)
	app.Use(web.Replicated(s, func(time.Duration, error) { observed.Add(1) }))
	app.Post("/ok", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderLocation, "/things/1")
		return c.Status(http.StatusCreated).JSON(fiber.Map{"id": "1"})
	})
	app.Post("/refused", func(c *fiber.Ctx) error { return fiber.NewError(http.StatusConflict, "no") })
	app.Get("/read", func(c *fiber.Ctx) error { return c.SendString("r") })
	return app
}

func doReq(t *testing.T, app *fiber.App, method, path string) (int, string, http.Header) {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest(method, path, nil), -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Only a write answered 2xx waits; reads and refusals pass untouched.
func TestMiddlewareWaitsOnlyForSuccessfulWrites(t *testing.T) {
	s := &fakeSyncer{}
	var observed atomic.Int32
	app := appWith(t, s, &observed)

	st, body, _ := doReq(t, app, http.MethodPost, "/ok")
	require.Equal(t, http.StatusCreated, st)
	require.JSONEq(t, `{"id":"1"}`, body)
	require.Equal(t, int32(1), s.calls.Load())

	st, _, _ = doReq(t, app, http.MethodPost, "/refused")
	require.Equal(t, http.StatusConflict, st)
	st, _, _ = doReq(t, app, http.MethodGet, "/read")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, int32(1), s.calls.Load(), "a refusal or a read waited for replicas")
	require.Equal(t, int32(1), observed.Load())
}

// A write whose replicas did not acknowledge is answered 503 with a reason
// (its success body and Location dropped), so the caller retries.
func TestMiddlewareAnswers503WhenNotReplicated(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{fmt.Errorf("wrapped: %w", notReplicated{}), "not_replicated"},
		{errors.New("connection refused"), "replication_check_failed"},
	} {
		s := &fakeSyncer{err: tc.err}
		var observed atomic.Int32
		app := appWith(t, s, &observed)
		st, body, h := doReq(t, app, http.MethodPost, "/ok")
		require.Equal(t, http.StatusServiceUnavailable, st, body)
		require.Contains(t, body, `"code":"unavailable"`)
		require.Contains(t, body, `"reason":"`+tc.reason+`"`)
		require.False(t, strings.Contains(body, `"id":"1"`), "the success body leaked: %s", body)
		require.Empty(t, h.Get(fiber.HeaderLocation))
	}
}
