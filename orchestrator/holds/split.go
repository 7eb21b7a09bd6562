package holds

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// reserve is a split claim's step (1). The order of the split steps, and
// why it keeps every count an upper bound, is in the package doc (doc.go,
// "Several shards"). A nil error means the id holds a
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
