package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks"
)

// FuzzAckBody posts arbitrary bodies to /ack and /fail on a real ledger
// (without authentication: the signature covers the body, it does not
// parse it). Whatever the body, the answer is a JSON envelope with a 2xx or
// 4xx status — never a 500 — and nothing panics.
func FuzzAckBody(f *testing.F) {
	db := redistest.New(f)
	ledger, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "fuzz"})
	require.NoError(f, err)
	ctx := context.Background()
	res, err := ledger.Create(ctx, contracts.CreateTaskRequest{QueueID: "3f0c1d2e-0000-4000-8000-000000000001", EncounterID: "e1"})
	require.NoError(f, err)
	_, err = ledger.Claim(ctx, contracts.ClaimRequest{WorkerID: "vm-1"})
	require.NoError(f, err)
	id := res.Task.QueueID

	app, err := web.New(web.Options{BodyLimit: 1 << 16})
	require.NoError(f, err)
	follower := webhooks.FailFollowerFunc(func(context.Context, tasks.FailResult) (webhooks.FollowUp, error) {
		return webhooks.FollowUp{Requeued: true}, nil
	})
	h, err := webhooks.New(ledger, follower, webhooks.Config{DisableAliases: true})
	require.NoError(f, err)
	webhooks.Register(app, h)

	for _, seed := range []string{
		`{"queue_id":"` + id + `","encounter_id":"e1","experityActions":{"a":[1,2,{"b":null}]}}`,
		`{"queue_id":"` + id + `","encounter_id":"e1","error_message":"boom"}`,
		`{"queue_id":"` + id + `","experityActions":1e999}`,
		`{"queue_id":"` + id + `","experityActions":"\ud800"}`,
		`{"queue_id":"` + id + `","worker_id":"vm\u0000"}`,
		`{"queue_id":"` + id + `","encounter_id":"` + string(bytes.Repeat([]byte("é"), 200)) + `"}`,
		`{"queue_id":"{` + id + `}"}`,
		`{"queue_id":"urn:uuid:` + id + `"}`,
		`{"queue_id":5}`,
		`{"queue_id":null,"experityActions":}`,
		`[]`, `null`, `""`, `{}`, ``, "\xff\xfe", `{"queue_id":"` + id + `"}{}`,
		`{"experityActions":` + string(bytes.Repeat([]byte("["), 5000)) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/ack", "/fail"} {
			resp, err := app.Test(httptest.NewRequest("POST", path, bytes.NewReader(body)), -1)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode >= 500 || resp.StatusCode < 200 {
				t.Fatalf("%s answered %d for %q:\n%s", path, resp.StatusCode, body, raw)
			}
			var env struct {
				Success *bool `json:"success"`
			}
			if err := json.Unmarshal(raw, &env); err != nil || env.Success == nil {
				t.Fatalf("%s answered %d without a JSON envelope for %q:\n%s", path, resp.StatusCode, body, raw)
			}
		}
	})
}
