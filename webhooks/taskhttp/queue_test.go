package taskhttp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

func TestCreateSingle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"queue_id":"0D6A3C4E-1B2F-4A5C-8D9E-0F1A2B3C4D5E","encounter_id":"enc-1","payload":{"patient":{"id":7},"codes":[]}}`)

	r := b.srv.Do("POST", "/queue", body)
	require.Equal(t, 201, r.Status, string(r.Body))
	taskhttptest.Golden(t, "create_response", r.Body)
	var created contracts.CreateResponse
	r.Decode(t, &created)
	require.Equal(t, "0d6a3c4e-1b2f-4a5c-8d9e-0f1a2b3c4d5e", created.Task.QueueID, "queue_id is canonical")
	require.JSONEq(t, `{"patient":{"id":7},"codes":[]}`, string(created.Task.Payload))

	// The same request again (a new signature, same content) is a duplicate: 200.
	r = b.srv.Do("POST", "/queue", body)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "create_response_duplicate", r.Body)

	// Another queue_id for the open encounter answers the open task.
	r = b.srv.Do("POST", "/queue", []byte(`{"encounter_id":"enc-1","payload":{}}`))
	require.Equal(t, 200, r.Status, string(r.Body))
	var dup contracts.CreateResponse
	r.Decode(t, &dup)
	require.True(t, dup.Duplicate)
	require.Equal(t, created.Task.QueueID, dup.Task.QueueID)

	st, err := b.ledger.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Total)
}

func TestCreateBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.create(t, "enc-0", "")

	batch := []byte(`{"tasks":[{"encounter_id":"enc-0","payload":{}},{"encounter_id":"enc-1","priority":"high","payload":{"n":1}},{"encounter_id":"enc-2","max_attempts":5,"payload":null}]}`)
	r := b.srv.Do("POST", "/queue", batch)
	require.Equal(t, 201, r.Status, string(r.Body))
	taskhttptest.Golden(t, "batch_create_response", r.Body)
	var resp contracts.BatchCreateResponse
	r.Decode(t, &resp)
	require.Equal(t, 2, resp.Created)
	require.Equal(t, 1, resp.Duplicates)
	require.Equal(t, first.QueueID, resp.Results[0].Task.QueueID)
	require.Equal(t, contracts.PriorityHigh, resp.Results[1].Task.Priority)

	// All duplicates: 200.
	r = b.srv.Do("POST", "/queue", batch)
	require.Equal(t, 200, r.Status, string(r.Body))
	r.Decode(t, &resp)
	require.Equal(t, 0, resp.Created)
	require.Equal(t, 3, resp.Duplicates)
}

func TestCreateRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "enc-0", "")
	before := b.snapshot(t)

	tooMany := make([]string, contracts.MaxBatchCreate+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"encounter_id":"e%d"}`, i)
	}
	cases := []struct {
		name  string
		body  string
		field string
	}{
		{"batch of 501", `{"tasks":[` + strings.Join(tooMany, ",") + `]}`, "tasks"},
		{"empty batch", `{"tasks":[]}`, "tasks"},
		{"null batch", `{"tasks":null}`, "tasks"},
		{"batch not an array", `{"tasks":{"encounter_id":"x"}}`, "tasks"},
		{"bad task in batch", `{"tasks":[{"encounter_id":"ok"},{"priority":"URGENT"}]}`, "priority"},
		{"array body", `[{"encounter_id":"x"}]`, "(body)"},
		{"queue_id a number", `{"queue_id":5,"encounter_id":"x"}`, "queue_id"},
		{"queue_id not a uuid", `{"queue_id":"abc","encounter_id":"x"}`, "queue_id"},
		{"max_attempts out of range", `{"encounter_id":"x","max_attempts":101}`, "max_attempts"},
		{"encounter_id too long", `{"encounter_id":"` + strings.Repeat("e", 257) + `"}`, "encounter_id"},
		{"malformed", `{"encounter_id":`, ""},
		{"empty", ``, ""},
		// a task with neither encounter_id nor payload
		{"empty object", `{}`, "encounter_id"},
		{"null payload only", `{"payload":null,"priority":"HIGH"}`, "encounter_id"},
		{"null task in batch", `{"tasks":[null]}`, "encounter_id"},
		{"empty task in batch", `{"tasks":[{"encounter_id":"ok"},{}]}`, "encounter_id"},
	}
	for _, tc := range cases {
		r := b.srv.Do("POST", "/queue", []byte(tc.body))
		env := r.Error(t, 400, contracts.CodeInvalid)
		if tc.field != "" {
			require.Equal(t, tc.field, env.Error.Details["field"], "%s: %s", tc.name, r.Body)
		}
	}
	// 400 answers give the byte offset, never Go's parser text.
	r0 := b.srv.Do("POST", "/queue", []byte(`{ba}`))
	env := r0.Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, "malformed JSON at byte 2", env.Error.Message)
	require.EqualValues(t, 2, env.Error.Details["offset"])
	require.NotContains(t, string(r0.Body), "invalid character")
	r0 = b.srv.Do("POST", "/queue", []byte(`{"encounter_id":"x","priority":["HIGH"]}`))
	env = r0.Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, `field "priority" must be string, got array`, env.Error.Message)
	require.NotContains(t, string(r0.Body), "contracts.")
	r := b.srv.Do("POST", "/queue", []byte(`{"encounter_id":"gz"}`), taskhttptest.Header("Content-Encoding", "gzip"))
	r.Error(t, 400, contracts.CodeInvalid)
	require.Equal(t, before, b.snapshot(t))
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.create(t, "enc-a", contracts.PriorityLow)
	c := b.create(t, "enc-b", "")
	b.create(t, "enc-c", contracts.PriorityHigh)

	r := b.srv.Do("GET", "/queue?status=pending&limit=2", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "list_response", r.Body)
	var page contracts.ListResponse
	r.Decode(t, &page)
	require.Len(t, page.Tasks, 2)
	require.NotEmpty(t, page.NextCursor)
	require.Nil(t, page.Tasks[0].History, "no history unless asked")

	r = b.srv.Do("GET", "/queue?status=PENDING&limit=2&cursor="+page.NextCursor, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	r.Decode(t, &page)
	require.Len(t, page.Tasks, 1)
	require.Empty(t, page.NextCursor)

	r = b.srv.Do("GET", "/queue?queue_id="+strings.ToUpper(c.QueueID)+"&history=true", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "list_response_history", r.Body)
	r.Decode(t, &page)
	require.Len(t, page.Tasks, 1)
	require.Len(t, page.Tasks[0].History, 1)

	r = b.srv.Do("GET", "/queue?encounter_id=enc-a&priority=low", nil)
	r.Decode(t, &page)
	require.Len(t, page.Tasks, 1)
	require.Equal(t, a.QueueID, page.Tasks[0].QueueID)

	r = b.srv.Do("GET", "/queue?dlq=true", nil)
	r.Decode(t, &page)
	require.Empty(t, page.Tasks)
	require.Equal(t, "[]", string(mustRaw(t, r.Body, "tasks")), "an empty page is [], not null")
}

func TestListBadQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for query, field := range map[string]string{
		"status=QUEUED":        "status",
		"status=%20":           "status",
		"priority=URGENT":      "priority",
		"limit=abc":            "limit",
		"limit=0":              "limit",
		"limit=-1":             "limit",
		"limit=1001":           "limit",
		"limit=99999999999999": "limit",
		"dlq=maybe":            "dlq",
		"history=2":            "history",
		"cursor=%%%":           "cursor",
		"cursor=eyJpIjoic3RhdHVzOkRPTkUiLCJhIjoxfQ": "cursor", // another index's cursor
		"queue_id=123":                             "queue_id",
		"queue_id=" + strings.Repeat("a", 500):     "queue_id",
		"encounter_id=" + strings.Repeat("e", 300): "encounter_id",
	} {
		r := b.srv.Do("GET", "/queue?"+query, nil)
		require.Equal(t, 400, r.Status, "%s: %s", query, r.Body)
		env := r.Error(t, 400, contracts.CodeInvalid)
		require.Equal(t, field, env.Error.Details["field"], "%s: %s", query, r.Body)
		require.Contains(t, env.Error.Message, field, query)
	}
}

func TestGetAndStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1", "")
	b.create(t, "enc-2", contracts.PriorityHigh)

	r := b.srv.Do("GET", "/queue/stats", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "stats_response", r.Body)

	r = b.srv.Do("GET", "/queue/"+task.QueueID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	taskhttptest.Golden(t, "task_response_get", r.Body)
	var resp contracts.TaskResponse
	r.Decode(t, &resp)
	require.Len(t, resp.Task.History, 1)

	r = b.srv.Do("GET", "/queue/6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", nil)
	env := r.Error(t, 404, contracts.CodeNotFound)
	taskhttptest.Golden(t, "error_not_found", r.Body)
	require.Equal(t, "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", env.Error.Details["queue_id"])

	for _, id := range []string{"not-a-uuid", strings.Repeat("a", 500), "claim", "%00", task.QueueID + "x"} {
		r := b.srv.Do("GET", "/queue/"+id, nil)
		env := r.Error(t, 400, contracts.CodeInvalid)
		require.Equal(t, "queue_id", env.Error.Details["field"], id)
	}
	r = b.srv.Do("GET", "/queue/"+strings.Repeat("a", 500), nil)
	taskhttptest.Golden(t, "error_invalid_queue_id", r.Body)

	// Refused ids never became Redis keys.
	keys, err := b.rdb.Keys(b.ctx, "*aaaaaaaa*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
}

func mustRaw(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return m[key]
}
