package bufferhttp

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// decodeOne accepts and refuses exactly what contracts.DecodeJSON does,
// with the same request and the same error.
func TestDecodeOneMatchesDecodeJSON(t *testing.T) {
	for _, body := range []string{
		`{"type":"email","payload":{"to":"a"}}`,
		`{"type":"email","priority":1,"payload":[1,2],"metadata":{"source":"s","custom":{"a":1}},"maxRetries":2,"idempotencyKey":"k","messageId":"m"}`,
		` {"type":"email"} `, `{"type":"email"} {"type":"x"}`, `{"type":"email"}x`, `{"type":`, ``, `   `, `null`, `[]`, `"x"`,
		`{"type":5}`, `{"priority":"high"}`, `{"maxRetries":1.5}`, `{"metadata":[]}`, `{"type":"email","TYPE":"other"}`,
		`{"payload":{"a":}}`, "{\"type\":\"\xff\"}",
	} {
		got, gerr := decodeOne([]byte(body))
		var want contracts.BufferEnqueueRequest
		werr := contracts.DecodeJSON([]byte(body), &want)
		require.Equal(t, werr, gerr, "body %q", body)
		if werr == nil {
			require.Equal(t, want, got, "body %q", body)
		}
	}
}

// accepted writes what c.JSON of the BufferEnqueueResponse writes.
func TestAcceptedMatchesJSON(t *testing.T) {
	app := fiber.New()
	cases := []buffer.Enqueued{
		{MessageID: "0b9f0e7c-4a8e-4f51-9d0e-2f1c3f5b6a7d", Priority: 2, Queue: "buffer.default"},
		{MessageID: "a.b:c_d-e", Priority: 0, Queue: "buffer.critical"},
		{MessageID: `odd"<id>&\`, Priority: 3, Queue: "buffer.low"},
	}
	for i, e := range cases {
		app.Post("/"+string(rune('a'+i)), func(c *fiber.Ctx) error { return accepted(c, e) })
	}
	for i, e := range cases {
		resp, err := app.Test(httptest.NewRequest("POST", "/"+string(rune('a'+i)), nil))
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		want, err := json.Marshal(contracts.BufferEnqueueResponse{Success: true, MessageID: e.MessageID, State: contracts.BufferPending, Priority: e.Priority, Queue: e.Queue})
		require.NoError(t, err)
		require.Equal(t, 202, resp.StatusCode)
		require.Equal(t, fiber.MIMEApplicationJSON, resp.Header.Get("Content-Type"))
		require.Equal(t, string(want), string(raw))
	}
}
