package signature

import (
	"context"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// Deferred is a replay check the Verifier left to the handler: a
// Middleware built with DeferReplay verifies the signature and stores a
// Deferred in the request's context (DeferredFrom) instead of asking the
// ReplayGuard, so that the ACK and FAIL webhooks make the check inside the
// ledger's script, in the same round trip as the transition (docs/tasks.md,
// "Authentication"). The handler must make it, exactly once, before it
// changes anything: in the script, or with Check.
type Deferred struct {
	// Sig is the signature, lowercase hex: the replay guard's key suffix.
	Sig string
	// Version is the signature's version. A version-2 signature binds the
	// method and target, so its replay can only hit the same route with
	// the same body: its key may live beside the task it names. A
	// version-1 signature binds neither, so its key must stay the one every
	// route checks (GlobalKey).
	Version int
	// GlobalKey is the key the ReplayGuard keeps Sig under
	// (RedisReplayGuard.Key), the one every route checks; empty when the
	// guard is no RedisReplayGuard (then only Check can check a version 1).
	GlobalKey string
	// TTL is how long the key is kept: twice the tolerance, the whole
	// window in which the timestamp is accepted.
	TTL time.Duration

	v *Verifier
}

// Check makes the deferred check now, with the Verifier's ReplayGuard, and
// answers what Verify would have: nil, 401 replayed or 503
// replay_unavailable.
func (d *Deferred) Check(ctx context.Context) error { return d.v.checkReplay(ctx, d.Sig) }

// Replayed is the refusal of a request whose signature was seen before,
// the one Verify answers (401, reason replayed).
func (d *Deferred) Replayed() error { return refuse(ReasonReplayed, "request was already received") }

type deferredKey struct{}

// WithDeferred returns ctx carrying d.
func WithDeferred(ctx context.Context, d *Deferred) context.Context {
	return context.WithValue(ctx, deferredKey{}, d)
}

// DeferredFrom returns the check a DeferReplay middleware left in ctx, or
// nil when there is none (token or none mode, or no such middleware).
func DeferredFrom(ctx context.Context) *Deferred {
	d, _ := ctx.Value(deferredKey{}).(*Deferred)
	return d
}

// DeferReplay makes a Middleware leave the replay check of an HMAC request
// to the handler (Deferred): only for handlers that make it, since a
// request passed on this way has not been checked for a replay.
func DeferReplay() MiddlewareOption { return MiddlewareOption{deferReplay: true} }

// checkReplay asks the ReplayGuard whether sig was seen, recording it.
func (v *Verifier) checkReplay(ctx context.Context, sig string) error {
	seen, err := v.replay.Seen(ctx, sig, 2*v.tolerance)
	if err != nil {
		return &contracts.Error{
			Code:    contracts.CodeUnavailable,
			Op:      op,
			Message: "cannot check for replayed requests; try again later",
			Details: map[string]any{"reason": ReasonReplayUnavailable},
			Err:     err,
		}
	}
	if seen {
		return refuse(ReasonReplayed, "request was already received")
	}
	return nil
}
