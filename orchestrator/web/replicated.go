package web

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

// Syncer is what Replicated needs of a durable.Barrier.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Observer is told how each wait went (metrics); nil observes nothing.
type Observer func(took time.Duration, err error)

// Replicated (REDIS_MIN_REPLICAS_ACK, orchestrator/durable) holds back every successful answer to a write (a method other
// than GET, HEAD or OPTIONS answered 2xx) until s.Sync returns: the answer
// goes out only once what the request wrote is on the replicas. When Sync
// fails the answer becomes 503 unavailable (reason "not_replicated"): the
// caller retries, and every write flowgate acknowledges is idempotent on
// retry (idempotency keys, ACK/FAIL of a task already in that state,
// queue_id), so the retry answers what the first would have. Refusals and
// reads pass untouched.
func Replicated(s Syncer, observe Observer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := c.Next(); err != nil {
			return err
		}
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
			return nil
		}
		if st := c.Response().StatusCode(); st < 200 || st > 299 {
			return nil
		}
		began := time.Now()
		// Not the handler's own context: a handler may cancel it on return
		// (a claim's long poll does). A round is bounded by its timeout.
		err := s.Sync(context.WithoutCancel(c.UserContext()))
		if observe != nil {
			observe(time.Since(began), err)
		}
		if err == nil {
			return nil
		}
		if undo, ok := c.Locals(undoKey{}).(func()); ok {
			undo()
		}
		reason := "replication_check_failed"
		var nr interface{ NotReplicated() bool } // durable.ErrNotReplicated
		if errors.As(err, &nr) && nr.NotReplicated() {
			reason = "not_replicated"
		}
		c.Response().ResetBody()
		c.Response().Header.Del(fiber.HeaderLocation)
		return &contracts.Error{
			Code:    contracts.CodeUnavailable,
			Op:      "durable.Sync",
			Message: "the write was made but is not yet on enough Redis replicas; retry the request (it is idempotent)",
			Details: map[string]any{"reason": reason},
			Err:     err,
		}
	}
}

type undoKey struct{}

// OnNotReplicated registers undo, run when Replicated turns this
// request's success into 503: for a write that is not idempotent on
// retry (a claim hands out other tasks the second time), undo takes back
// what the caller will never learn it got. One per request; the last wins.
func OnNotReplicated(c *fiber.Ctx, undo func()) { c.Locals(undoKey{}, undo) }
