package taskhttp

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// Why a long poll stopped early (context.Cause of its context).
var (
	errClientGone = errors.New("client hung up")
	errShutdown   = errors.New("server shutting down")
)

// releaseTimeout bounds putting back the tasks of a claim nobody received.
const releaseTimeout = 5 * time.Second

// claimBudget is a claim's whole budget from the request's start
// (web.LongPollContext): RequestTimeout + wait_ms, capped at
// contracts.MaxClaimWaitMS (the ledger refuses more).
func (h *Handlers) claimBudget(waitMS int) time.Duration {
	return time.Duration(min(max(waitMS, 0), contracts.MaxClaimWaitMS))*time.Millisecond + h.cfg.RequestTimeout
}

// claim serves POST /queue/claim: 200 with the claimed tasks, 204 when none
// was pending (at once, or after wait_ms, or when the wait was cut short).
func (h *Handlers) claim(c *fiber.Ctx) error {
	var req contracts.ClaimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	budget, cancel := web.LongPollContext(c, h.claimBudget(req.WaitMS))
	defer cancel()
	ctx, conn, stop := h.pollContext(c, budget, req.WaitMS > 0)
	claimed, err := h.ledger.ClaimPolling(budget, ctx, req) // ctx ends the wait, not a try under way
	stop()
	var uncertain *tasks.UncertainClaimError
	if errors.As(err, &uncertain) {
		h.cancelClaim(uncertain.Token, req.WorkerID)
	}
	if err != nil {
		return err
	}
	if len(claimed) > 0 && (errors.Is(context.Cause(ctx), errClientGone) || peerGone(conn)) {
		h.release(c, req.WorkerID, claimed, "client hung up")
		return c.SendStatus(fiber.StatusNoContent) // written to nobody
	}
	if len(claimed) == 0 {
		return c.SendStatus(fiber.StatusNoContent)
	}
	// With REDIS_MIN_REPLICAS_ACK, an answer the replicas did not
	// acknowledge becomes 503: a retried claim gets other tasks, so these
	// go back to PENDING.
	web.OnNotReplicated(c, func() { h.release(c, req.WorkerID, claimed, "answered 503: not on enough replicas") })
	return c.JSON(contracts.ClaimResponse{Success: true, Tasks: claimed})
}

// pollContext returns the context of a claim: parent, ended early
// by Config.Shutdown, by the HTTP server shutting down and — when watch —
// by the client hanging up. stop must be called before the handler returns:
// it waits for the watcher, which must not touch the connection afterwards.
func (h *Handlers) pollContext(c *fiber.Ctx, parent context.Context, watch bool) (ctx context.Context, conn net.Conn, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	if !watch {
		return ctx, nil, func() { cancel(nil) }
	}
	conn = c.Context().Conn()
	serverDone := c.Context().Done() // fasthttp closes it on Shutdown
	shutdown := h.cfg.Shutdown.Done()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(h.cfg.DisconnectCheck)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-shutdown:
				cancel(errShutdown)
				return
			case <-serverDone:
				cancel(errShutdown)
				return
			case <-tick.C:
				if peerGone(conn) {
					cancel(errClientGone)
					return
				}
			}
		}
	}()
	return ctx, conn, func() {
		close(done)
		wg.Wait()
	}
}

// release puts back to PENDING the tasks of a claim whose client hung up
// before it could be answered (or whose answer became 503, why says), so they need not wait for a sweep (which
// would also count an attempt). Ledger.Unclaim acts only while a task is
// still held by this very claim (worker and claimed_at): one that has moved
// on meanwhile — recovered by a sweep and claimed by another worker — is
// left to its new holder.
func (h *Handlers) release(c *fiber.Ctx, worker string, claimed []contracts.Task, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), releaseTimeout)
	defer cancel()
	for _, t := range claimed {
		var at time.Time
		if t.ClaimedAt != nil {
			at = *t.ClaimedAt
		}
		out, err := h.ledger.Unclaim(ctx, t.QueueID, worker, at)
		switch {
		case err != nil:
			h.cfg.Logger.Warn("claim not delivered; task not put back (a sweep will recover it)",
				"why", why, "queue_id", t.QueueID, "worker_id", worker, "err", err)
		case out.Noop:
			h.cfg.Logger.Warn("claim not delivered; task has moved on meanwhile, left as it is",
				"why", why, "queue_id", t.QueueID, "worker_id", worker, "status", out.Task.Status, "holder", out.Task.WorkerID)
		default:
			h.cfg.Logger.Warn("claim not delivered; task put back to PENDING",
				"why", why, "queue_id", t.QueueID, "worker_id", worker)
		}
	}
}

// Retry bounds of cancelClaim.
const (
	cancelRetryFirst = 250 * time.Millisecond
	cancelRetryMax   = 5 * time.Second
)

// cancelClaim takes back, in the background, a claim answered 503 whose
// script Redis may still run (tasks.UncertainClaimError): the worker was
// told the claim failed, so it must not keep a task. It retries with
// backoff while Redis stays unreachable, for at most
// Config.CancelWindow (well inside tasks.ClaimTokenTTL); once the server
// shuts down it tries once more and leaves the rest to the heartbeat
// monitor. Wait waits for every cancellation under way.
func (h *Handlers) cancelClaim(token, worker string) {
	h.cancels.Add(1)
	go func() {
		defer h.cancels.Done()
		deadline := time.Now().Add(h.cfg.CancelWindow)
		wait := cancelRetryFirst
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), h.cfg.RequestTimeout)
			out, err := h.ledger.CancelClaim(ctx, token)
			cancel()
			if err == nil {
				h.cfg.Logger.Warn("claim answered 503 cancelled: its tasks are back to PENDING",
					"worker_id", worker, "claim", token, "released", out.Released, "kept", out.Kept, "attempts", attempt)
				return
			}
			if h.cfg.Shutdown.Err() != nil || time.Now().Add(wait).After(deadline) {
				h.cfg.Logger.Error("claim answered 503 could not be cancelled; the heartbeat monitor will recover its tasks",
					"worker_id", worker, "claim", token, "attempts", attempt, "err", err)
				return
			}
			_ = timeutil.Sleep(h.cfg.Shutdown, wait) // a shutdown ends the wait: one more try
			wait = min(2*wait, cancelRetryMax)
		}
	}()
}

// Wait blocks until the background cancellations of uncertain claims have
// finished (they stop retrying once Config.Shutdown is done).
func (h *Handlers) Wait() { h.cancels.Wait() }
