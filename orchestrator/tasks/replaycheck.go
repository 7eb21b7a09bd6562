package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// ErrReplayed is wrapped by the error of an ACK or FAIL whose ReplayCheck
// found its key: the request was received before, and nothing changed.
var ErrReplayed = errors.New("tasks: request replayed")

// ReplayCheck is the replay guard of a signed ACK or FAIL, made by the
// transition's script itself so that the request costs one round trip
// (docs/tasks.md, "Authentication"): the script sets the key (SET NX PX
// TTL) before it acts, and when the key was there already it changes
// nothing and the call fails with ErrReplayed. The key is set whatever the
// transition answers (a conflict, a task not found), as a guard run first
// would.
//
// Where the key lives follows from what the signature binds:
//
//   - Global empty (a version-2 signature: method, target and body signed,
//     so a replay can only be the same transition of the same task): the
//     key is <base>replay:<Sig> in the shard the task is first looked for
//     in, the hash tag of the task's keys — one round trip on a single
//     Redis and on Redis Cluster alike.
//   - Global set (a version-1 signature, valid on every route that takes
//     its body): the key must stay the one every route checks. Where the
//     ledger is one shard on one server (no Cluster client) it is passed to
//     the script as one more key; elsewhere its slot is not the task's, and
//     Immediate checks it before the script runs (two round trips).
type ReplayCheck struct {
	Sig    string        // the signature, lowercase hex
	Global string        // the key every route checks, for a signature that does not bind the route
	TTL    time.Duration // how long the key is kept
	// Immediate makes the check apart from the script, with the error to
	// answer (a replay, or a replay store that cannot be asked). Required
	// when Global is set.
	Immediate func(ctx context.Context) error

	made bool
}

// Made reports whether the check was made: the script that carried it was
// sent, or Immediate ran. A call that failed before (an invalid request)
// did not make it, and its caller still must.
func (rc *ReplayCheck) Made() bool { return rc != nil && rc.made }

// replayKey returns the key rc is checked under inside a script of shard
// sh, or "" when the check must be made apart (Immediate).
func (l *Ledger) replayKey(rc *ReplayCheck, sh int) string {
	if rc.Global == "" {
		return l.ks[sh].replay(rc.Sig)
	}
	if _, cluster := l.rdb.(*redis.ClusterClient); cluster || l.set.N() > 1 {
		return ""
	}
	return rc.Global
}

// replayed is the error of a call whose ReplayCheck found its key.
func replayed(op string) error {
	return &contracts.Error{Code: contracts.CodeUnauthorized, Op: op, Message: "request was already received",
		Details: map[string]any{"reason": "replayed"}, Err: ErrReplayed}
}
