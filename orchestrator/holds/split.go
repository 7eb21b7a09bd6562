package holds

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// With several shards (Config.Shards > 1, keys.go) a hold's resource shard
// — slot key, face keys, record, indexes — may differ from its client's
// shard — the quota index client:<clientId>:holds and the cooldown — and
// from its appointment's — the cooldown's index. The slot claim stays one
// script in the resource shard, so no slot is ever held twice. Where two
// shards change, the order below keeps every count an upper bound, so a
// crash (or a lost reply) between the two steps never lets a client past
// its quota or its cooldown:
//
//   - Claim: (1) lua/reserve.lua in the client's shard — cooldown, prune,
//     exact quota, and the new hold id added with its expiry; (2)
//     lua/claim.lua in the resource shard. A definite refusal of (2) (taken,
//     or held already) removes the entry again; a crash or an error between
//     leaves it to be pruned at its expiry, at most the hold's TTL later:
//     the quota counts a hold that never was, never misses one.
//   - Heartbeat: the quota entry's expiry is raised first (lua/extend.lua),
//     then the hold; a hold that turns out gone has its entry removed. A
//     crash between leaves the entry at most one TTL too long.
//   - Release, Confirm, the expiry sweep: the resource shard first, then
//     the entry goes (ZREM); a crash between leaves it until its expiry.
//   - Cooldown (Confirm, StartCooldown): the index by appointment id first,
//     then the cooldown, both before the hold is confirmed: a crash leaves a
//     cooldown of a booking that was recorded (the web face confirms after
//     recording it, and undoes both through ClearCooldown when the confirm
//     fails), never a booking without its cooldown. ClearCooldown deletes
//     the cooldown first, then the index: a crash leaves an index whose
//     cooldown is gone, which it then ignores.
//   - Adopt, Keep (no quota is checked): the new entry is added before the
//     resource script and removed on its refusal; the web hold's entry goes
//     after it.

// reserve is a split claim's step (1). A nil error means the id holds a
// place in the client's index.
func (e *Engine) reserve(ctx context.Context, op string, r ClaimRequest, holdID string, now time.Time) error {
	k := e.kCli(r.ClientID)
	reply, err := lua.reserve.Run(ctx, e.hot, []string{k.client(r.ClientID), k.cooldown(r.ClientID, r.AppointmentTypeID)},
		holdID, ms(r.TTL), now.UnixMilli(), r.MaxHolds, boolArg(r.Cooldown > 0)).Slice()
	if err != nil {
		return unavailable(op, err)
	}
	code, _, left, err := triple(reply)
	switch {
	case err != nil:
		return err
	case code == claimQuota:
		return &QuotaError{Limit: r.MaxHolds, RetryAfter: max(left, 0)}
	case code == claimCooldown:
		return &CooldownError{Remaining: left}
	}
	return nil
}

// unindex removes holdID's entry from clientID's index (the client's
// shard). Best effort: an entry left behind only overcounts the quota
// until its expiry, so a failure is logged, not returned.
func (e *Engine) unindex(ctx context.Context, clientID, holdID string) {
	if err := e.hot.ZRem(ctx, e.kCli(clientID).client(clientID), holdID).Err(); err != nil {
		e.cfg.Logger.Warn("holds: quota entry left until it expires", "clientId", clientID, "holdRef", Ref(holdID), "err", err)
	}
}

// extend raises holdID's entry in clientID's index to exp (add: also when
// it is missing).
func (e *Engine) extend(ctx context.Context, clientID, holdID string, exp time.Time, ttl time.Duration, add bool) error {
	return lua.extend.Run(ctx, e.hot, []string{e.kCli(clientID).client(clientID)}, holdID, exp.UnixMilli(),
		ms(ttl), boolArg(add)).Err()
}

// setCooldown writes a cooldown and its index by appointment id: one
// script where both live in one shard, else the index first (see above).
func (e *Engine) setCooldown(ctx context.Context, clientID, appointmentTypeID, appointmentID, value string, cooldown time.Duration) error {
	kc, ka := e.kCli(clientID), e.r.ks[e.r.appt(appointmentID)]
	key, idx := kc.cooldown(clientID, appointmentTypeID), ka.cooldownIndex(appointmentID)
	if kc.p == ka.p {
		err := lua.startCooldown.Run(ctx, e.hot, []string{key, idx}, value, ms(cooldown)).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		return err
	}
	if err := e.hot.Set(ctx, idx, key, cooldown).Err(); err != nil {
		return err
	}
	return e.hot.Set(ctx, key, value, cooldown).Err()
}

// clearCooldown is ClearCooldown's work on the index idx and the cooldown
// key it names: one script where both live in one shard, else the
// cooldown first, then the index.
func (e *Engine) clearCooldown(ctx context.Context, appointmentID, idx, key string) (bool, error) {
	if e.r.set.N() == 1 || e.r.keyShard(key) == e.r.appt(appointmentID) {
		n, err := lua.clearCooldown.Run(ctx, e.hot, []string{idx, key}, appointmentID).Int()
		return n == cooldownCleared, err
	}
	n, err := lua.clearCooldownValue.Run(ctx, e.hot, []string{key}, appointmentID).Int()
	if err != nil {
		return false, err
	}
	if err := lua.delIf.Run(ctx, e.hot, []string{idx}, key).Err(); err != nil {
		return false, err
	}
	return n == cooldownCleared, nil
}
