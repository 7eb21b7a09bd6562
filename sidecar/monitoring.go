package main

import (
	"log/slog"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// monitoringQueues is the prefix of Asynqmon's queue routes
// (/monitoring/api/queues/{qname}, …/{qname}:pause, …/{qname}/…_tasks…).
const monitoringQueues = "/monitoring/api/queues/"

// asynqmonAnswers classifies the text of Asynqmon's 5xx answers: Asynqmon
// answers 500 for nearly every failure with asynq's error text, the only
// thing that tells a client's mistake from a store that could not answer.
// The first entry whose text the answer contains wins; none is 503.
var asynqmonAnswers = []struct {
	text    string
	code    contracts.Code
	message string
}{
	{"not found", contracts.CodeNotFound, "no such queue or task"},      // asynq.ErrQueueNotFound, ErrTaskNotFound
	{"does not exist", contracts.CodeNotFound, "no such queue or task"}, // rdb's QueueNotFoundError
	{"is already paused", contracts.CodeConflict, "the queue is already paused"},
	{"is not paused", contracts.CodeConflict, "the queue is not paused"},
	// rdb's FailedPrecondition: run a pending or active task, archive an
	// archived or active one, delete an active one.
	{"FAILED_PRECONDITION", contracts.CodeConflict, "the task's state does not allow this"},
}

// monitorErrors guards Asynqmon and turns its 5xx answers into flowgate's
// error envelope. A queue name in the path that cannot be a queue
// (asynqrt.ValidQueueName: "..", "{low}", blanks) is refused 400
// before Asynqmon sees it — asynq would create keys for it. Of the 5xx
// answers, a client's mistake (unknown queue or task: 404; a queue already
// paused or not paused, a task whose state forbids the action: 409) is
// logged at info; anything else is 503 unavailable with a warning. The
// text goes to the log only.
func (m *Main) monitorErrors(next fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := checkMonitoredQueue(c); err != nil {
			return err
		}
		if err := next(c); err != nil {
			return err
		}
		status := c.Response().StatusCode()
		if status < fiber.StatusInternalServerError {
			return nil
		}
		cause := strings.TrimSpace(string(c.Response().Body()))
		c.Response().ResetBody()
		code, message := contracts.CodeUnavailable, "the queue store could not answer"
		for _, a := range asynqmonAnswers {
			if strings.Contains(cause, a.text) {
				code, message = a.code, a.message
				break
			}
		}
		level := slog.LevelInfo
		if code == contracts.CodeUnavailable {
			level = slog.LevelWarn
		}
		m.Logger.Log(c.UserContext(), level, "monitoring api error", "status", status, "answered", code.HTTPStatus(),
			"path", strings.Clone(c.Path()), "cause", cause, "request_id", web.RequestID(c))
		return contracts.Errorf(code, "%s", message)
	}
}

// checkMonitoredQueue refuses a request to Asynqmon's queue routes whose
// queue name is not valid. The name is read as Asynqmon's router reads
// it: from the request URI as the client sent it (fasthttp's header copy,
// which the adaptor hands on; not Fiber's normalised path, where "/.."
// is gone), decoded; the ":pause" or ":resume" of the queue's own actions
// is not part of it.
// (Request.RequestURI would not do: once the URI is parsed it rewrites the
// header's copy with the normalised one.)
func checkMonitoredQueue(c *fiber.Ctx) error {
	u, err := url.ParseRequestURI(string(c.Context().RequestURI()))
	if err != nil {
		return contracts.Errorf(contracts.CodeInvalid, "malformed request URI")
	}
	rest, ok := strings.CutPrefix(u.Path, monitoringQueues)
	if !ok || rest == "" {
		return nil
	}
	name := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		name = rest[:i]
	} else if n, ok := strings.CutSuffix(name, ":pause"); ok {
		name = n
	} else if n, ok := strings.CutSuffix(name, ":resume"); ok {
		name = n
	}
	if !asynqrt.ValidQueueName(name) {
		return contracts.Errorf(contracts.CodeInvalid,
			"not a queue name: a queue name is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return nil
}
