package tasks

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// CreateMany creates any number of tasks for fixtures: chunks of
// MaxBatchCreate, pipelined perPipe chunks at a time.
func (l *Ledger) CreateMany(ctx context.Context, reqs []contracts.CreateTaskRequest, perPipe int) error {
	const op = "tasks.CreateMany"
	var chunks [][]newTask
	for len(reqs) > 0 {
		n := min(len(reqs), contracts.MaxBatchCreate)
		items, err := l.prepare(op, reqs[:n])
		if err != nil {
			return err
		}
		chunks = append(chunks, items)
		reqs = reqs[n:]
	}
	for len(chunks) > 0 {
		n := min(len(chunks), perPipe)
		group := chunks[:n]
		if len(group) == 1 { // force the pipelined path
			group = [][]newTask{group[0], nil}
		}
		if _, err := l.createChunks(ctx, op, l.cfg.Now(), group); err != nil {
			return err
		}
		chunks = chunks[n:]
	}
	return nil
}

// Keys exposes key names to tests.
func (l *Ledger) KeyBase() string { return l.k.base }

// ForgetDoneIndex makes the ledger look as an older flowgate left it: no
// retention index, no backfill progress.
func (l *Ledger) ForgetDoneIndex(ctx context.Context) error {
	return l.rdb.Del(ctx, l.k.done(), l.k.doneBackfill()).Err()
}

// CheckIndexes verifies that every index agrees with the task hashes: each
// task is in exactly the indexes its state calls for, with the right
// scores, and no index holds anything else.
func (l *Ledger) CheckIndexes(ctx context.Context) error {
	ids, err := l.rdb.ZRange(ctx, l.k.all(), 0, -1).Result()
	if err != nil {
		return err
	}
	want := map[string]map[string]float64{} // index key → member → score
	add := func(key, id string, score string) {
		if want[key] == nil {
			want[key] = map[string]float64{}
		}
		var f float64
		_, _ = fmt.Sscan(score, &f)
		want[key][id] = f
	}
	openWant := map[string]string{}
	for _, id := range ids {
		f, err := l.rdb.HGetAll(ctx, l.k.task(id)).Result()
		if err != nil {
			return err
		}
		if len(f) == 0 {
			return fmt.Errorf("task %s in all but has no hash", id)
		}
		st := contracts.Status(f["status"])
		add(l.k.status(st), id, f["seq"])
		switch st {
		case contracts.StatusPending:
			add(l.k.pending(contracts.Priority(f["priority"])), id, f["pseq"])
			if f["priority"] != string(contracts.PriorityHigh) {
				add(l.k.sla(), id, f["created_at"])
			}
			if f["worker_id"] != "" || f["claimed_at"] != "" {
				return fmt.Errorf("pending task %s has a claim: %v", id, f)
			}
		case contracts.StatusProcessing:
			add(l.k.active(), id, f["updated_at"])
			add(l.k.claimed(), id, f["heartbeat_at"])
		case contracts.StatusError:
			if f["dlq"] != "1" {
				add(l.k.retry(), id, f["updated_at"])
			}
		case contracts.StatusDone:
			add(l.k.done(), id, f["updated_at"])
		}
		if f["dlq"] == "1" {
			if st != contracts.StatusError {
				return fmt.Errorf("dlq task %s is %s", id, st)
			}
			add(l.k.dlq(), id, f["seq"])
		}
		if f["encounter_id"] != "" {
			add(l.k.encounter(f["encounter_id"]), id, f["seq"])
			open := st == contracts.StatusPending || st == contracts.StatusProcessing || (st == contracts.StatusError && f["dlq"] != "1")
			if open {
				if prev, dup := openWant[f["encounter_id"]]; dup {
					return fmt.Errorf("encounter %s has two open tasks %s and %s", f["encounter_id"], prev, id)
				}
				openWant[f["encounter_id"]] = id
			}
		}
	}
	keys := []string{l.k.active(), l.k.claimed(), l.k.sla(), l.k.dlq(), l.k.retry(), l.k.done()}
	for _, s := range contracts.AllStatuses() {
		keys = append(keys, l.k.status(s))
	}
	for _, p := range contracts.AllPriorities() {
		keys = append(keys, l.k.pending(p))
	}
	for key := range want {
		if !contains(keys, key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		got, err := l.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return err
		}
		if len(got) != len(want[key]) {
			return fmt.Errorf("index %s has %d members, want %d", key, len(got), len(want[key]))
		}
		for _, z := range got {
			id := z.Member.(string)
			score, ok := want[key][id]
			if !ok {
				return fmt.Errorf("index %s holds %s, which does not belong there", key, id)
			}
			if score != z.Score {
				return fmt.Errorf("index %s: %s has score %v, want %v", key, id, z.Score, score)
			}
		}
	}
	open, err := l.rdb.HGetAll(ctx, l.k.open()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if len(open) != len(openWant) {
		return fmt.Errorf("open hash has %d entries, want %d: %v vs %v", len(open), len(openWant), open, openWant)
	}
	for enc, id := range openWant {
		if open[enc] != id {
			return fmt.Errorf("open[%s] = %q, want %q", enc, open[enc], id)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ClaimWithToken runs one claim script with a chosen token (a claim that
// Redis runs only after its cancellation).
func (l *Ledger) ClaimWithToken(ctx context.Context, worker string, limit int, token string) ([]contracts.Task, error) {
	return l.claimWith(ctx, "tasks.Claim", worker, limit, token)
}
