package tasks

import (
	"context"

	"github.com/google/uuid"
)

// Which shard holds what (see keys.go): a task lives in its home shard, the
// shard of its encounter_id or, without one, of its queue_id, together with
// its encounter's enc: and open entries, so that one open task per
// encounter stays one script in one shard.

// home is the home shard of a task of encounter enc with id id.
func (l *Ledger) home(id, enc string) int {
	if enc != "" {
		return l.set.Of(enc)
	}
	return l.set.Of(id)
}

// newID draws a queue_id for a task of encounter enc whose own shard is the
// task's home, so that a lookup by id alone goes straight to it (n draws on
// average with n shards).
func (l *Ledger) newID(enc string) string {
	for {
		id := uuid.NewString()
		if enc == "" || l.set.N() == 1 || l.set.Of(id) == l.set.Of(enc) {
			return id
		}
	}
}

// lookup calls try on the shards that may hold task id until one reports
// it found the task: the shard of enc when the request names an encounter,
// then the shard of the id, then the one the id's locator points to. A
// request whose encounter_id does not match the task's thus still reaches
// the task (and its script answers the mismatch). try returns whether the
// task was there; an error stops the walk.
func (l *Ledger) lookup(ctx context.Context, op, id, enc string, try func(sh int) (bool, error)) error {
	first := l.home(id, enc)
	found, err := try(first)
	if err != nil || found || l.set.N() == 1 {
		return err
	}
	byID := l.set.Of(id)
	if byID != first {
		if found, err = try(byID); err != nil || found {
			return err
		}
	}
	loc, ok, err := l.readLocator(ctx, op, id)
	if err != nil || !ok || loc.home == first || loc.home == byID {
		return err
	}
	_, err = try(loc.home)
	return err
}
