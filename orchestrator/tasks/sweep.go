package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// SweepResult is what one sweep did, for the caller's logs and metrics.
type SweepResult struct {
	Batches      int      // script calls (each handles at most Config.SweepBatch tasks)
	Recovered    []string // PROCESSING → PENDING (RecoverStale, RecoverExpired)
	DeadLettered []string // PROCESSING → dead letter: the recovery was the task's Config.MaxRecoveries-th
	Promoted     []string // NORMAL/LOW → HIGH (PromoteOverdue)
	Requeued     []string // ERROR → PENDING (RetryOverdue)
	Purged       []string // DONE tasks deleted (PurgeDone)
	// FailedShards is how many shards the sweep could not finish (the
	// error says why); the others were swept all the same.
	FailedShards int
}

// add merges o, one shard's result, into r.
func (r *SweepResult) add(o SweepResult) {
	r.Batches += o.Batches
	r.Recovered = append(r.Recovered, o.Recovered...)
	r.DeadLettered = append(r.DeadLettered, o.DeadLettered...)
	r.Promoted = append(r.Promoted, o.Promoted...)
	r.Requeued = append(r.Requeued, o.Requeued...)
	r.Purged = append(r.Purged, o.Purged...)
}

// RecoverStale is the heartbeat monitor's sweep: every PROCESSING task with
// no activity (claim, heartbeat or other update) since before
// now−olderThan goes back to PENDING with HIGH priority (it has waited
// already), recoveries+1, error_message = reason, and worker_id,
// claimed_at, heartbeat_at cleared; the reason, the worker and the
// recovery's number are recorded in history. A recovery is not an attempt:
// attempts counts FAILs only, so a task whose worker vanished is not
// closer to max_attempts. Recoveries have their own limit,
// Config.MaxRecoveries (MAX_RECOVERIES): the recovery that brings
// recoveries to it makes the task a dead letter instead (error_message =
// contracts.DLQRecoveriesErrorMessage), so a task that keeps killing its
// workers does not go round for ever. It costs O(affected): it reads only
// the expired part of the last-activity index, in batches.
func (l *Ledger) RecoverStale(ctx context.Context, now time.Time, olderThan time.Duration, reason string) (SweepResult, error) {
	if reason == "" {
		reason = "no heartbeat for more than " + olderThan.String()
	}
	return l.recover(ctx, "tasks.RecoverStale", keys.active, "heartbeat-monitor", now, olderThan, reason)
}

// RecoverExpired is the visibility-timeout sweep, with SQS's semantics: a
// claim makes the task invisible for olderThan and every heartbeat extends
// that (ChangeMessageVisibility), so it recovers, like RecoverStale, only a
// PROCESSING task whose last heartbeat — or its claim, if it never had one —
// is older than now−olderThan. A worker that keeps sending heartbeats
// holds its task however long the work takes; a worker that vanished loses
// it after olderThan. O(affected): it reads only the expired part of the
// last-activity index, in batches: a PROCESSING task's last activity is its
// last heartbeat or its claim (nothing else updates a PROCESSING task).
//
// It also sweeps the claimed index (by last heartbeat), which an instance
// of before 2026-11-26 may still write during a rolling upgrade
// (CHANGELOG.md); heartbeats here keep its entries current. An entry is
// dropped once it is past the cutoff and its task is not PROCESSING, so
// the index empties itself as the tasks it names finish.
func (l *Ledger) RecoverExpired(ctx context.Context, now time.Time, olderThan time.Duration, reason string) (SweepResult, error) {
	const op = "tasks.RecoverExpired"
	if reason == "" {
		reason = "visibility timeout: no heartbeat for more than " + olderThan.String()
	}
	res, err := l.recover(ctx, op, keys.active, "vt-sweep", now, olderThan, reason)
	legacy, lerr := l.recover(ctx, op, keys.claimed, "vt-sweep", now, olderThan, reason)
	res.Batches += legacy.Batches
	res.Recovered = append(res.Recovered, legacy.Recovered...)
	res.DeadLettered = append(res.DeadLettered, legacy.DeadLettered...)
	res.FailedShards = max(res.FailedShards, legacy.FailedShards)
	return res, errors.Join(err, lerr)
}

func (l *Ledger) recover(ctx context.Context, op string, index func(keys) string, by string, now time.Time, olderThan time.Duration, reason string) (SweepResult, error) {
	reason = message(reason)
	return l.sweep(ctx, op, lua.recover, index, now, olderThan, 3, func(res *SweepResult, arr []any) {
		res.Recovered = append(res.Recovered, stringList(arr[1])...)
		res.DeadLettered = append(res.DeadLettered, stringList(arr[2])...)
	}, reason, contracts.DLQRecoveriesErrorMessage, by, l.cfg.MaxRecoveries)
}

// PromoteOverdue is the SLA sweep: every PENDING NORMAL or LOW task created
// before now−olderThan becomes HIGH. It keeps its place in order of
// becoming pending, so it is served ahead of HIGH tasks queued after it.
// O(affected): it reads only the overdue part of the SLA index, in batches.
func (l *Ledger) PromoteOverdue(ctx context.Context, now time.Time, olderThan time.Duration) (SweepResult, error) {
	return l.sweep(ctx, "tasks.PromoteOverdue", lua.promote, keys.sla, now, olderThan, 2, func(res *SweepResult, arr []any) {
		res.Promoted = append(res.Promoted, stringList(arr[1])...)
	})
}

// RetryOverdue is the safety net under Fail's retry path: an ERROR task
// awaiting a retry whose last update is older than now−olderThan — its
// scheduled Requeue was lost, e.g. the caller died between Fail and
// enqueueing it — goes back to PENDING with HIGH priority, attempts
// unchanged, reason in history. olderThan should exceed the longest retry
// backoff. Dead letters are never touched. O(affected), in batches.
func (l *Ledger) RetryOverdue(ctx context.Context, now time.Time, olderThan time.Duration) (SweepResult, error) {
	reason := "retry overdue: ERROR for more than " + olderThan.String() + " without a requeue"
	return l.sweep(ctx, "tasks.RetryOverdue", lua.retry, keys.retry, now, olderThan, 2, func(res *SweepResult, arr []any) {
		res.Requeued = append(res.Requeued, stringList(arr[1])...)
	}, reason)
}

// PurgeDone is the retention sweep: every DONE task whose last update (the
// ACK, or the PATCH that made it DONE) is older than now−olderThan is
// deleted — its hash and history — and removed from every index: the
// unfiltered listing, status:DONE, its encounter's set and the retention
// index. Get then answers not found, List and Stats no longer count it, and
// a create with its queue_id makes a new task, so olderThan must exceed any
// window in which a create or an ACK of the task may still be retried.
// Nothing else is purged: dead letters wait for manual review, and open
// tasks are live. O(affected): it reads only the expired part of the
// retention index (DONE tasks by updated_at), in batches. Running it again
// purges nothing more.
//
// Tasks that became DONE under a flowgate that kept no retention index are
// indexed by the first calls (status:DONE in batches, once; the progress is
// kept in Redis), then purged like the others.
func (l *Ledger) PurgeDone(ctx context.Context, now time.Time, olderThan time.Duration) (SweepResult, error) {
	const op = "tasks.PurgeDone"
	if olderThan < 0 {
		return SweepResult{}, invalid(op, "olderThan", "olderThan must not be negative")
	}
	return l.everyShard(ctx, op, func(sh int) (SweepResult, error) {
		if err := l.backfillDone(ctx, op, sh, now); err != nil {
			return SweepResult{}, err
		}
		res, err := l.sweepShard(ctx, op, lua.purge, sh, l.ks[sh].done(), now, olderThan, 2, func(res *SweepResult, arr []any) {
			res.Purged = append(res.Purged, stringList(arr[1])...)
		})
		if err != nil {
			return res, err
		}
		return res, l.dropLocators(ctx, op, sh, res.Purged, now.Add(-olderThan).UnixMilli())
	})
}

// backfillDone runs lua/backfill_done.lua in shard sh until it reports the
// walk complete (one GET once it is).
func (l *Ledger) backfillDone(ctx context.Context, op string, sh int, now time.Time) error {
	for {
		v, err := l.run(ctx, op, lua.backfillDone, sh, now, l.ks[sh].scriptKeys(l.ks[sh].doneBackfill()), l.cfg.SweepBatch)
		if err != nil {
			return err
		}
		arr, ok := v.([]any)
		if !ok || len(arr) != 3 {
			return badReply(op, v)
		}
		if complete, _ := arr[2].(int64); complete == backfillComplete {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "task store unavailable", Err: err}
		}
	}
}

// sweep runs a sweep script in every shard (everyShard) over the part of
// the shard's index older than now−olderThan.
func (l *Ledger) sweep(ctx context.Context, op string, s *proc, index func(keys) string, now time.Time, olderThan time.Duration,
	replyLen int, collect func(*SweepResult, []any), args ...any) (SweepResult, error) {
	if olderThan < 0 {
		return SweepResult{}, invalid(op, "olderThan", "olderThan must not be negative")
	}
	return l.everyShard(ctx, op, func(sh int) (SweepResult, error) {
		return l.sweepShard(ctx, op, s, sh, index(l.ks[sh]), now, olderThan, replyLen, collect, args...)
	})
}

// sweepShard runs a sweep script in shard sh over the part of index older
// than now−olderThan, one batch of Config.SweepBatch per call, until a
// batch comes back short. Every sweep script answers an array of replyLen
// items whose first is the number of index entries scanned; collect takes
// the rest into the result.
func (l *Ledger) sweepShard(ctx context.Context, op string, s *proc, sh int, index string, now time.Time, olderThan time.Duration,
	replyLen int, collect func(*SweepResult, []any), args ...any) (SweepResult, error) {
	var res SweepResult
	argv := append([]any{now.Add(-olderThan).UnixMilli(), l.cfg.SweepBatch}, args...)
	for {
		v, err := l.run(ctx, op, s, sh, now, l.ks[sh].scriptKeys(index), argv...)
		if err != nil {
			return res, err
		}
		arr, ok := v.([]any)
		if !ok || len(arr) != replyLen {
			return res, badReply(op, v)
		}
		res.Batches++
		collect(&res, arr)
		if scanned, _ := arr[0].(int64); scanned < int64(l.cfg.SweepBatch) || ctx.Err() != nil {
			return res, nil
		}
	}
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		out = append(out, str(x))
	}
	return out
}

// everyShard runs one shard's part of a sweep in each shard, starting at a
// rotating shard, and merges the results. A shard that fails does not stop
// the others: the error names how many failed (and wraps their errors),
// and the result holds what every shard did. The scheduler's lock runs a
// tick on one instance, so each tick sweeps each shard once.
func (l *Ledger) everyShard(ctx context.Context, op string, one func(sh int) (SweepResult, error)) (SweepResult, error) {
	if l.set.N() == 1 {
		return one(0)
	}
	var res SweepResult
	var errs []error
	for _, sh := range l.rot.Order(l.set.N()) {
		if ctx.Err() != nil {
			break
		}
		r, err := one(sh)
		res.add(r)
		if err != nil {
			res.FailedShards++
			errs = append(errs, fmt.Errorf("shard %d: %w", sh, err))
		}
	}
	if len(errs) == 0 {
		return res, nil
	}
	code := contracts.CodeUnavailable
	var first *contracts.Error
	if errors.As(errs[0], &first) {
		code = first.Code
	}
	return res, &contracts.Error{Code: code, Op: op, Err: errors.Join(errs...),
		Message: fmt.Sprintf("sweep failed in %d of %d shards (the others were swept)", len(errs), l.set.N())}
}
