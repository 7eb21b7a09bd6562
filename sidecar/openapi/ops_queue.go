package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsQueue are the VM task queue API (orchestrator/tasks/taskhttp), signed.
func opsQueue() []Op {
	const tag = "queue"
	task := []any{contracts.TaskResponse{}}
	bad := Resp{Status: s400, Desc: "bad input (details.field)", Body: errBody}
	unauth := Resp{Status: s401, Desc: "missing or bad signature", Body: errBody}
	missing := Resp{Status: s404, Desc: "unknown queue_id", Body: errBody}
	conflict := Resp{Status: s409, Desc: "illegal transition (details.current_status)", Body: errBody}
	down := Resp{Status: s503, Desc: "Redis did not answer within QUEUE_REQUEST_TIMEOUT", Body: errBody}
	return []Op{
		{Method: http.MethodPost, Path: "/queue", Tag: tag, Summary: "Create a task, or a batch ({\"tasks\":[…]})", Auth: AuthHMAC,
			Request: []any{contracts.CreateTaskRequest{}, contracts.BatchCreateRequest{}},
			Responses: []Resp{{Status: s201, Desc: "created (or the existing task of a repeated queue_id)",
				Body: []any{contracts.CreateResponse{}, contracts.BatchCreateResponse{}}}, bad, unauth, down}},
		{Method: http.MethodGet, Path: "/queue", Tag: tag, Summary: "List tasks", Auth: AuthHMAC,
			Query:     []string{"status", "queue_id", "encounter_id", "priority", "dlq", "history", "limit", "cursor"},
			Responses: []Resp{{Status: s200, Desc: "a page of tasks", Body: []any{contracts.ListResponse{}}}, bad, unauth, down}},
		{Method: http.MethodGet, Path: "/queue/stats", Tag: tag, Summary: "Counts by status and priority", Auth: AuthHMAC,
			Responses: []Resp{{Status: s200, Desc: "stats", Body: []any{contracts.StatsResponse{}}}, unauth, down}},
		{Method: http.MethodPost, Path: "/queue/claim", Tag: tag, Summary: "Claim tasks (long poll up to wait_ms)", Auth: AuthHMAC,
			Request: []any{contracts.ClaimRequest{}}, Responses: []Resp{
				{Status: s200, Desc: "claimed tasks", Body: []any{contracts.ClaimResponse{}}},
				{Status: s204, Desc: "nothing to claim after the long poll"}, bad, unauth, down}},
		{Method: http.MethodGet, Path: "/queue/:queue_id", Tag: tag, Summary: "One task", Auth: AuthHMAC,
			Responses: []Resp{{Status: s200, Desc: "the task", Body: task}, unauth, missing, down}},
		{Method: http.MethodPost, Path: "/queue/:queue_id/heartbeat", Tag: tag, Summary: "Heartbeat of a claimed task", Auth: AuthHMAC,
			Request: []any{contracts.HeartbeatRequest{}}, Responses: []Resp{{Status: s200, Desc: "the task", Body: task}, bad, unauth, missing, conflict, down}},
		{Method: http.MethodPatch, Path: "/queue/:queue_id/status", Tag: tag, Summary: "Generic status transition", Auth: AuthHMAC,
			Request: []any{contracts.StatusUpdateRequest{}}, Responses: []Resp{{Status: s200, Desc: "the task", Body: task}, bad, unauth, missing, conflict, down}},
		{Method: http.MethodPatch, Path: "/queue/:queue_id/requeue", Tag: tag, Summary: "Back to PENDING", Auth: AuthHMAC,
			Request: []any{contracts.RequeueRequest{}}, Responses: []Resp{{Status: s200, Desc: "the task (noop when already pending)", Body: task}, bad, unauth, missing, conflict, down}},
		{Method: http.MethodPost, Path: "/queue/:queue_id/replay", Tag: tag, Summary: "A dead letter back to PENDING", Auth: AuthHMAC,
			Responses: []Resp{{Status: s200, Desc: "the task", Body: task}, unauth, missing, conflict, down}},
	}
}

// opsWebhooks are the ACK/FAIL webhooks (webhooks), each also under
// /webhook.
func opsWebhooks() []Op {
	var out []Op
	for _, h := range []struct {
		path, summary string
		req           any
	}{{AckPath, "ACK: the task is DONE", contracts.AckRequest{}}, {FailPath, "FAIL: requeued with backoff, or dead-lettered", contracts.FailRequest{}}} {
		for _, prefix := range []string{"", "/webhook"} {
			out = append(out, Op{Method: http.MethodPost, Path: prefix + h.path, Tag: "webhooks", Summary: h.summary, Auth: AuthHMAC,
				Request: []any{h.req}, Responses: []Resp{
					{Status: s200, Desc: "applied, or duplicate:true for a repeat", Body: []any{contracts.WebhookResponse{}}},
					{Status: s400, Desc: "bad input", Body: errBody}, {Status: s401, Desc: "bad signature", Body: errBody},
					{Status: s404, Desc: "unknown queue_id", Body: errBody}, {Status: s409, Desc: "illegal transition", Body: errBody},
					{Status: s503, Desc: "Redis unavailable", Body: errBody}}})
		}
	}
	return out
}
