package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// Ledger is what the webhooks need of the task ledger; *tasks.Ledger has it.
// Each call makes the request's replay check (nil: none) in the
// transition's script (tasks.ReplayCheck).
type Ledger interface {
	// AckBriefChecked is Ack answering the task's status and attempts
	// without its payload (all the ACK answer reports).
	AckBriefChecked(ctx context.Context, req contracts.AckRequest, rc *tasks.ReplayCheck) (tasks.AckResult, error)
	FailChecked(ctx context.Context, req contracts.FailRequest, rc *tasks.ReplayCheck) (tasks.FailResult, error)
}

// FollowUp is what a FailFollower did after a FAIL.
type FollowUp struct {
	Requeued bool      // a retry (Requeue with HIGH priority) is scheduled
	DLQ      bool      // the dead letter was recorded
	RetryAt  time.Time // when the retry is due; zero when unknown or none
}

// FailFollower acts on a recorded FAIL: it schedules the requeue of a task
// to retry (res.Retry) or records a dead letter (res.DLQ). The sidecar
// adapts the Asynq dispatcher with FailFollowerFunc.
type FailFollower interface {
	AfterFail(ctx context.Context, res tasks.FailResult) (FollowUp, error)
}

// FailFollowerFunc adapts a function to FailFollower.
type FailFollowerFunc func(ctx context.Context, res tasks.FailResult) (FollowUp, error)

// AfterFail calls f.
func (f FailFollowerFunc) AfterFail(ctx context.Context, res tasks.FailResult) (FollowUp, error) {
	return f(ctx, res)
}

// The messages of WebhookResponse.
const (
	msgAcked     = "Task acknowledged"
	msgDuplicate = "Task already acknowledged"
)

// Handlers serve the ACK and FAIL webhooks.
type Handlers struct {
	ledger   Ledger
	follower FailFollower
	cfg      Config
	m        *metrics
}

// New validates cfg, registers the metrics and returns the webhooks.
func New(ledger Ledger, follower FailFollower, cfg Config) (*Handlers, error) {
	if ledger == nil {
		return nil, errors.New("webhooks: nil Ledger")
	}
	if follower == nil {
		return nil, errors.New("webhooks: nil FailFollower")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("webhooks: metrics: %w", err)
	}
	return &Handlers{ledger: ledger, follower: follower, cfg: cfg, m: m}, nil
}

// Paths lists the paths served, primary ones first.
func (h *Handlers) Paths() []string {
	rs := h.cfg.routes()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.path
	}
	return out
}

// Register mounts POST on every path of h on r: the metrics first, then
// the request's deadline (web.Deadline of Config.RequestTimeout, so a hung
// Redis answers 503 in time), then Config.Auth when set, then the hook.
func Register(r fiber.Router, h *Handlers) {
	deadline := web.Deadline(h.cfg.RequestTimeout)
	for _, rt := range h.cfg.routes() {
		handler := h.ack
		if rt.hook == hookFail {
			handler = h.fail
		}
		chain := []fiber.Handler{h.instrument(rt.hook), deadline}
		if h.cfg.Auth != nil {
			chain = append(chain, h.cfg.Auth)
		}
		r.Post(rt.path, append(chain, handler)...)
	}
}

type outcomeKey struct{}

// instrument times the rest of the chain and counts its outcome: the one
// the hook stored on success, or the error's.
func (h *Handlers) instrument(hook string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		outcome, _ := c.Locals(outcomeKey{}).(string)
		if err != nil {
			outcome = errorOutcome(err)
		} else if outcome == "" {
			outcome = OutcomeError
		}
		h.m.observe(hook, outcome, time.Since(start))
		return err
	}
}

func setOutcome(c *fiber.Ctx, outcome string) { c.Locals(outcomeKey{}, outcome) }

// ackBody is an ACK body as decoded: contracts.AckRequest and the FAIL
// field an ACK must not carry.
type ackBody struct {
	contracts.AckRequest
	ErrorMessage json.RawMessage `json:"error_message"` // any value, null included, is refused
}

// ack serves the ACK webhook. A body carrying error_message is a FAIL (or
// a FAIL sent to the wrong hook): it is refused with 400 before the ledger
// sees it, so it can never mark the task DONE.
func (h *Handlers) ack(c *fiber.Ctx) error {
	ctx := c.UserContext()
	d, rc, err := replayCheck(ctx)
	if err != nil {
		return err
	}
	var body ackBody
	if err = decode(c, &body); err != nil {
		return settle(ctx, d, rc, err)
	}
	if body.ErrorMessage != nil {
		return settle(ctx, d, rc, &contracts.Error{Code: contracts.CodeInvalid, Op: "webhooks.ack",
			Message: "an ACK carries no error_message; report a failure to the FAIL webhook",
			Details: map[string]any{"field": "error_message"}})
	}
	res, err := h.ledger.AckBriefChecked(ctx, body.AckRequest, rc)
	if err != nil {
		return settle(ctx, d, rc, err)
	}
	resp := contracts.WebhookResponse{Success: true, QueueID: res.Task.QueueID, Status: res.Task.Status,
		Attempts: res.Task.Attempts, Duplicate: res.Duplicate, Message: msgAcked}
	setOutcome(c, OutcomeDone)
	if res.Duplicate {
		resp.Message = msgDuplicate
		setOutcome(c, OutcomeDuplicate)
	}
	return c.JSON(resp)
}

// fail serves the FAIL webhook: the ledger records the attempt, then the
// follower schedules the retry or records the dead letter. A follower
// failure after the ledger's transition is answered 200 (see the package
// documentation).
func (h *Handlers) fail(c *fiber.Ctx) error {
	ctx := c.UserContext()
	d, rc, err := replayCheck(ctx)
	if err != nil {
		return err
	}
	var req contracts.FailRequest
	if err = decode(c, &req); err != nil {
		return settle(ctx, d, rc, err)
	}
	res, err := h.ledger.FailChecked(ctx, req, rc)
	if err != nil {
		return settle(ctx, d, rc, err)
	}
	t := res.Task
	resp := contracts.WebhookResponse{Success: true, QueueID: t.QueueID, Status: t.Status, Attempts: t.Attempts, DLQ: res.DLQ,
		Duplicate: res.Duplicate}
	// A duplicate FAIL still runs the follow-up: it is idempotent, and
	// completes it if the first one's failed.

	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.cfg.Context), h.cfg.FollowUpTimeout)
	fu, ferr := h.follower.AfterFail(ctx, res)
	cancel()
	switch {
	case ferr != nil:
		h.cfg.Logger.Error("webhook FAIL recorded but its follow-up failed",
			"queue_id", t.QueueID, "attempts", t.Attempts, "dlq", res.DLQ, "err", ferr)
		setOutcome(c, OutcomeError)
	case res.DLQ:
		setOutcome(c, OutcomeDLQ)
	case fu.Requeued:
		resp.Requeued = true
		setOutcome(c, OutcomeRequeued)
	default:
		// The follower chose not to schedule a retry; the sweep will.
		setOutcome(c, OutcomeError)
		h.cfg.Logger.Error("webhook FAIL recorded but no retry was scheduled", "queue_id", t.QueueID, "attempts", t.Attempts)
	}
	if res.Duplicate && ferr == nil {
		setOutcome(c, OutcomeDuplicate)
	}
	resp.Message = failMessage(t, res.DLQ, resp.Requeued, fu.RetryAt)
	return c.JSON(resp)
}

// replayCheck is the ledger's form of the replay check the Verifier left in
// ctx (signature.DeferReplay), or nils when it left none (it checked
// already, or the mode has no replay guard). A version-2 signature binds
// the route: its key may live in the task's shard. A version-1 one keeps the
// key every route checks; when the guard keeps it in no Redis key, the
// check is made here, now (its refusal is err).
func replayCheck(ctx context.Context) (*signature.Deferred, *tasks.ReplayCheck, error) {
	d := signature.DeferredFrom(ctx)
	if d == nil {
		return nil, nil, nil
	}
	if d.Version < 2 && d.GlobalKey == "" {
		return nil, nil, d.Check(ctx)
	}
	rc := &tasks.ReplayCheck{Sig: d.Sig, TTL: d.TTL, Immediate: d.Check}
	if d.Version < 2 {
		rc.Global = d.GlobalKey
	}
	return d, rc, nil
}

// settle is the answer to a request with a deferred replay check d that
// failed with err: a replay the ledger's script found is refused as the
// Verifier refuses it (401 replayed). A request refused before the check
// was made (a bad body, an invalid field) makes it now, so that its replay
// is refused as one, as when the Verifier checked first.
func settle(ctx context.Context, d *signature.Deferred, rc *tasks.ReplayCheck, err error) error {
	if d == nil {
		return err
	}
	if errors.Is(err, tasks.ErrReplayed) {
		return d.Replayed()
	}
	if !rc.Made() {
		if cerr := d.Check(ctx); cerr != nil {
			return cerr
		}
	}
	return err
}

func failMessage(t contracts.Task, dlq, requeued bool, retryAt time.Time) string {
	if dlq {
		return contracts.DLQErrorMessage
	}
	attempt := "Attempt " + strconv.Itoa(t.Attempts) + " of " + strconv.Itoa(t.MaxAttempts) + " failed"
	if !requeued {
		return attempt + "; the retry could not be scheduled now and will be scheduled by the recovery sweep"
	}
	if retryAt.IsZero() {
		return attempt + "; requeued with HIGH priority"
	}
	return attempt + "; requeued with HIGH priority, retry at " + retryAt.UTC().Format(time.RFC3339)
}

// decode decodes the JSON body as sent. A compressed body is refused: the
// signature covers the bytes on the wire, and inflating them has no bound.
func decode(c *fiber.Ctx, v any) error {
	body, err := web.PlainBody(c)
	if err != nil {
		return err
	}
	return contracts.DecodeJSON(body, v)
}
