package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsBuffer are the work buffer API (orchestrator/buffer/bufferhttp).
func opsBuffer() []Op {
	const tag, base = "buffer", "/api/buffer"
	unauth := Resp{Status: s401, Desc: "missing or wrong token", Body: errBody}
	missing := Resp{Status: s404, Desc: "unknown id", Body: errBody}
	notDead := Resp{Status: s409, Desc: "CONFLICT: the message is not, or no longer, a dead letter (details.reason not_dead_letter, details.state)", Body: errBody}
	down := Resp{Status: s503, Desc: "PERSISTENCE_FAILURE, SHUTDOWN_IN_PROGRESS", Body: errBody}
	ok := func(desc string, body any) Resp { return Resp{Status: s200, Desc: desc, Body: []any{body}} }
	return []Op{
		{Method: http.MethodPost, Path: base + "/enqueue", Tag: tag, Summary: "Enqueue one message, or a batch ({\"messages\":[…]})", Auth: AuthBuffer,
			Request: []any{contracts.BufferEnqueueRequest{}, contracts.BufferBatchRequest{}}, Responses: []Resp{
				{Status: s202, Desc: "one message accepted", Body: []any{contracts.BufferEnqueueResponse{}}},
				ok("a batch: per-item results", contracts.BufferBatchResponse{}),
				{Status: s400, Desc: "INVALID_MESSAGE, HANDLER_NOT_FOUND", Body: errBody}, unauth,
				{Status: s409, Desc: "DUPLICATE_MESSAGE", Body: errBody}, {Status: s429, Desc: "QUEUE_FULL", Body: errBody}, down}},
		{Method: http.MethodGet, Path: base + "/stats", Tag: tag, Summary: "Depth, level, queues, DLQ, handlers, circuits", Auth: AuthBuffer,
			Responses: []Resp{ok("stats", contracts.BufferStats{}), unauth, down}},
		{Method: http.MethodGet, Path: base + "/messages", Tag: tag, Summary: "Messages of one state (pending, scheduled, retry, active, completed, dead) by type and priority, each with its error history; paged by an opaque cursor", Auth: AuthBuffer,
			Query:     []string{"state", "type", "priority", "limit", "cursor"},
			Responses: []Resp{ok("a page", contracts.BufferMessageList{}), {Status: s400, Desc: "bad state, type, priority, limit or cursor, or a parameter the listing does not know, e.g. companyId (details.field; details.reason unknown_parameter)", Body: errBody}, unauth, down}},
		{Method: http.MethodGet, Path: base + "/messages/:id", Tag: tag, Summary: "One message", Auth: AuthBuffer,
			Responses: []Resp{ok("the message", contracts.BufferMessage{}), unauth, missing, down}},
		{Method: http.MethodGet, Path: base + "/dlq", Tag: tag, Summary: "Dead letters, newest first", Auth: AuthBuffer, Query: []string{"limit", "cursor"},
			Responses: []Resp{ok("a page", contracts.BufferDLQList{}), {Status: s400, Desc: "bad limit or cursor, or an unknown parameter (details.field)", Body: errBody}, unauth, down}},
		{Method: http.MethodGet, Path: base + "/dlq/count", Tag: tag, Summary: "Dead letters counted", Auth: AuthBuffer,
			Responses: []Resp{ok("count", contracts.BufferDLQCount{}), unauth, down}},
		{Method: http.MethodGet, Path: base + "/dlq/stats", Tag: tag, Summary: "Dead letters by queue and type", Auth: AuthBuffer,
			Responses: []Resp{ok("stats", contracts.BufferDLQStats{}), unauth, down}},
		{Method: http.MethodPost, Path: base + "/dlq/:id/replay", Tag: tag, Summary: "Run a dead letter again", Auth: AuthBuffer,
			Responses: []Resp{ok("replayed", contracts.BufferActionResponse{}), unauth, missing, notDead, down}},
		{Method: http.MethodDelete, Path: base + "/dlq/:id", Tag: tag, Summary: "Remove a dead letter", Auth: AuthBuffer,
			Responses: []Resp{ok("deleted", contracts.BufferActionResponse{}), unauth, missing, notDead, down}},
		{Method: http.MethodGet, Path: base + "/circuits", Tag: tag, Summary: "Circuit breakers", Auth: AuthBuffer,
			Responses: []Resp{ok("breakers", contracts.BufferCircuitsResponse{}), unauth}},
		{Method: http.MethodPost, Path: base + "/circuits/:type/reset", Tag: tag, Summary: "Close one breaker", Auth: AuthBuffer,
			Responses: []Resp{ok("reset", contracts.BufferActionResponse{}), unauth, missing}},
		{Method: http.MethodGet, Path: base + "/events", Tag: tag, Summary: "Server-Sent Events (enqueued, completed, failed, dlq, circuit)", Auth: AuthBuffer,
			Query: []string{"event", "channel"}, Responses: []Resp{{Status: s200, Desc: "an event stream of BufferEvent", ContentType: "text/event-stream"},
				{Status: s400, Desc: "a stream needs a keep-alive HTTP/1.1 connection (Connection: close or HTTP/1.0 is refused)", Body: errBody}, unauth}},
	}
}
