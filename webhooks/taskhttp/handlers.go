package taskhttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// Replayer brings a dead letter back to PENDING. The sidecar gives the
// Asynq dispatcher, which also removes the archived Asynq copy of the dead
// letter; (*tasks.Ledger).Replay satisfies it too.
type Replayer interface {
	Replay(ctx context.Context, queueID string, req contracts.RequeueRequest) (contracts.Task, error)
}

// ReplayerFunc adapts a function to Replayer.
type ReplayerFunc func(ctx context.Context, queueID string, req contracts.RequeueRequest) (contracts.Task, error)

// Replay calls f.
func (f ReplayerFunc) Replay(ctx context.Context, queueID string, req contracts.RequeueRequest) (contracts.Task, error) {
	return f(ctx, queueID, req)
}

// DefaultDisconnectCheck is how often a long poll looks whether its client
// has hung up.
const DefaultDisconnectCheck = 100 * time.Millisecond

// DefaultRequestTimeout bounds each queue API request's work: the
// signature's replay check, the ledger script(s) and the answer. With Redis
// hung, the request answers 503 unavailable after this long instead of
// waiting for TCP. A claim's long poll adds its wait_ms (the replay check
// still gets only this).
const DefaultRequestTimeout = 2 * time.Second

// Config configures the queue API.
type Config struct {
	// Replayer serves POST /queue/:queue_id/replay. Required.
	Replayer Replayer
	// Auth, when set, authenticates POST /queue, the seed's route (the
	// seed's version-1 signatures stay valid there).
	Auth fiber.Handler
	// RouteAuth, when set, authenticates every other queue route — those
	// flowgate added and those the seed left bodiless (GET /queue, PATCH
	// …/requeue): normally the verifier's middleware with
	// signature.RequireVersion(2), so a captured signature of an empty body
	// is valid on no other route. Nil means Auth.
	RouteAuth fiber.Handler
	// Shutdown is done when the server starts shutting down: long polls
	// then stop waiting and answer 204. Default: never done.
	Shutdown context.Context
	// DisconnectCheck is how often a long poll peeks at its connection
	// for a client that hung up. Default DefaultDisconnectCheck; at least
	// 1ms.
	DisconnectCheck time.Duration
	// Logger logs claims put back after their client hung up. Default
	// slog.Default().
	Logger *slog.Logger
	// RequestTimeout is the deadline of each request's context, from its
	// start (set before Auth runs, so the signature's replay check is
	// inside it); a claim's handler gets wait_ms more, still counted from
	// the request's start. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// CancelWindow is how long a claim answered 503 whose outcome is
	// unknown is retried to be cancelled while Redis stays unreachable.
	// Default DefaultCancelWindow; at most tasks.ClaimTokenTTL.
	CancelWindow time.Duration
}

// DefaultCancelWindow bounds the retries of cancelling an uncertain claim.
// It is below the heartbeat monitor's default 2 min, so a cancelled claim
// is back before a sweep would count an attempt for it.
const DefaultCancelWindow = 90 * time.Second

func (c Config) withDefaults() Config {
	c.Shutdown = valutil.ValOrDefault(c.Shutdown, context.Background())
	c.DisconnectCheck = valutil.ValOrDefault(c.DisconnectCheck, DefaultDisconnectCheck)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.RequestTimeout = valutil.ValOrDefault(c.RequestTimeout, DefaultRequestTimeout)
	c.CancelWindow = valutil.ValOrDefault(c.CancelWindow, DefaultCancelWindow)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Replayer == nil:
		return errors.New("taskhttp: Config.Replayer is required")
	case c.DisconnectCheck < time.Millisecond:
		return fmt.Errorf("taskhttp: DisconnectCheck %s must be at least 1ms", c.DisconnectCheck)
	case c.CancelWindow < 0 || c.CancelWindow > tasks.ClaimTokenTTL:
		return fmt.Errorf("taskhttp: CancelWindow %s must be 0..%s", c.CancelWindow, tasks.ClaimTokenTTL)
	case c.RequestTimeout < 10*time.Millisecond:
		return fmt.Errorf("taskhttp: RequestTimeout %s must be at least 10ms", c.RequestTimeout)
	}
	return nil
}

// Handlers serve the queue API on a Ledger.
type Handlers struct {
	ledger  *tasks.Ledger
	cfg     Config
	cancels sync.WaitGroup // background cancellations of uncertain claims
}

// New validates cfg and returns the handlers of the queue API.
func New(ledger *tasks.Ledger, cfg Config) (*Handlers, error) {
	if ledger == nil {
		return nil, errors.New("taskhttp: nil Ledger")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Handlers{ledger: ledger, cfg: cfg}, nil
}

// Register mounts the queue API on r (see the package documentation for
// the route table). Fixed paths come before /queue/:queue_id.
func Register(r fiber.Router, h *Handlers) {
	strict := h.cfg.RouteAuth
	if strict == nil {
		strict = h.cfg.Auth
	}
	route := func(add func(string, ...fiber.Handler) fiber.Router, path string, auth, handler fiber.Handler) {
		deadline := web.Deadline(h.cfg.RequestTimeout)
		if path == "/queue/claim" { // Auth within RequestTimeout, the long poll up to wait_ms more
			deadline = web.LongPollDeadline(h.cfg.RequestTimeout)
		}
		chain := []fiber.Handler{deadline}
		if auth != nil {
			chain = append(chain, auth)
		}
		add(path, append(chain, handler)...)
	}
	route(r.Post, "/queue", h.cfg.Auth, h.create)
	route(r.Get, "/queue", strict, h.list)
	route(r.Get, "/queue/stats", strict, h.stats)
	route(r.Post, "/queue/claim", strict, h.claim)
	route(r.Get, "/queue/:queue_id", strict, h.get)
	route(r.Patch, "/queue/:queue_id/status", strict, h.updateStatus)
	route(r.Patch, "/queue/:queue_id/requeue", strict, h.requeue)
	route(r.Post, "/queue/:queue_id/replay", strict, h.replay)
	route(r.Post, "/queue/:queue_id/heartbeat", strict, h.heartbeat)
}
