package tasks

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// locatorGrace is how long a locator that locates no task still counts as
// a create under way: longer than a create script can sit unread in a hung
// Redis's socket.
const locatorGrace = ClaimTokenTTL

// locator is a parsed locator value.
//
// A locator finds a task whose queue_id the client chose and whose home
// shard (its encounter's) is not the shard of that id: loc:<id> in the
// shard of the id holds "<home>:<written ms>". It is written before the
// task (lua/locator/claim.lua, then the create script in the home shard), so
// a crash between the two leaves at worst a locator to a shard without the
// task: a lookup reads it as not found, a create of the same id and home
// reuses it, and one with another home may replace it once it is older than
// locatorGrace. A locator younger than that with no task yet is a create
// under way, so a create of the same id for another home is a conflict
// rather than a second task of that id. The purge deletes the task first,
// then its locator; a crash between leaves a locator as above.
//
// The create script in a shard refuses ("located") a queue_id that has a
// locator there, i.e. whose task lives in another shard; lua/locator/claim.lua
// refuses an id whose task lives in the locator's own shard. Both run in the
// shard of the id, so one of the two always sees the other.
type locator struct {
	home int
	at   int64 // written, Unix ms
}

func (l *Ledger) parseLocator(v string) (locator, bool) {
	h, at, ok := strings.Cut(v, ":")
	if !ok {
		return locator{}, false
	}
	home, err1 := strconv.Atoi(h)
	ms, err2 := strconv.ParseInt(at, 10, 64)
	if err1 != nil || err2 != nil || home < 0 || home >= l.set.N() {
		return locator{}, false
	}
	return locator{home: home, at: ms}, true
}

// readLocator reads the locator of id, if any (raw is its value).
func (l *Ledger) readLocatorRaw(ctx context.Context, op, id string) (raw string, ok bool, err error) {
	v, err := l.rdb.Get(ctx, l.ks[l.set.Of(id)].locator(id)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, storeError(op, err)
	}
	return v, true, nil
}

// readLocator is the parsed locator of id; ok is false when there is none
// (or it is not one).
func (l *Ledger) readLocator(ctx context.Context, op, id string) (locator, bool, error) {
	raw, ok, err := l.readLocatorRaw(ctx, op, id)
	if err != nil || !ok {
		return locator{}, false, err
	}
	loc, ok := l.parseLocator(raw)
	return loc, ok, nil
}

// statusIn is the status of task id in shard sh, "" when it is not there.
func (l *Ledger) statusIn(ctx context.Context, op string, sh int, id string) (string, error) {
	st, err := l.rdb.HGet(ctx, l.ks[sh].task(id), "status").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", storeError(op, err)
	}
	return st, nil
}

// claimLocator points the locator of id at home (≠ the shard of id) before
// a create or import writes the task there. It answers queue_id_reused
// when the id names a task of another home, or when another home's create
// of it may be under way.
func (l *Ledger) claimLocator(ctx context.Context, op, id string, home int, now time.Time) error {
	sh := l.set.Of(id)
	expect := ""
	for range 3 {
		v, err := lua.claimLocator.Run(ctx, l.rdb, []string{l.ks[sh].locator(id), l.ks[sh].task(id)},
			l.ks[sh].base, id, home, now.UnixMilli(), expect).Result()
		if err != nil {
			return storeError(op, err)
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return badReply(op, v)
		}
		switch str(arr[0]) {
		case "ok":
			return nil
		case "here":
			return reusedConflict(op, id, str(arr[1]))
		}
		if len(arr) < 2 {
			return badReply(op, v)
		}
		expect = str(arr[1])
		if err := l.replaceable(ctx, op, id, expect, now); err != nil {
			return err
		}
	}
	// Three creates of this id for three homes raced each other.
	return reusedConflict(op, id, string(contracts.StatusPending))
}

// replaceable returns nil when the locator raw of id may be replaced: it
// locates no task and is older than locatorGrace (or is not a locator).
// Otherwise it answers the conflict.
func (l *Ledger) replaceable(ctx context.Context, op, id, raw string, now time.Time) error {
	loc, ok := l.parseLocator(raw)
	if !ok {
		return nil
	}
	st, err := l.statusIn(ctx, op, loc.home, id)
	if err != nil {
		return err
	}
	if st != "" {
		return reusedConflict(op, id, st)
	}
	if now.UnixMilli()-loc.at < locatorGrace.Milliseconds() {
		return reusedConflict(op, id, string(contracts.StatusPending))
	}
	return nil
}

// clearLocated answers a script's "located" (id has a locator in the shard
// the script ran in, its own: its task lives, or is being created, in
// another shard). It returns the conflict, or nil after deleting a stale
// locator: the caller then runs its script again.
func (l *Ledger) clearLocated(ctx context.Context, op, id string, now time.Time) error {
	raw, ok, err := l.readLocatorRaw(ctx, op, id)
	if err != nil || !ok {
		return err
	}
	if err := l.replaceable(ctx, op, id, raw, now); err != nil {
		return err
	}
	key := l.ks[l.set.Of(id)].locator(id)
	if err := lua.dropLocator.Run(ctx, l.rdb, []string{key}, raw, "", 0).Err(); err != nil {
		return storeError(op, err)
	}
	return nil
}

// dropLocators deletes the locators of tasks just purged from shard sh
// (those whose id lives in another shard), unless a create of the same id
// wrote a newer one since cutoff.
func (l *Ledger) dropLocators(ctx context.Context, op string, sh int, ids []string, cutoff int64) error {
	for _, id := range ids {
		if l.set.Of(id) == sh {
			continue
		}
		key := l.ks[l.set.Of(id)].locator(id)
		if err := lua.dropLocator.Run(ctx, l.rdb, []string{key}, "", sh, cutoff).Err(); err != nil {
			return storeError(op, err)
		}
	}
	return nil
}

func reusedConflict(op, id, status string) error {
	return conflict(op, id, reply{code: codeConflict, a: status, b: "queue_id_reused", fields: map[string]string{}})
}

// errLocated is a create or import script's answer that id has a locator
// in the script's shard.
type errLocated struct{ id string }

func (e *errLocated) Error() string { return "queue_id " + e.id + " is located in another shard" }
