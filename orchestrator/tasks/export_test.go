package tasks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// CreateMany creates any number of tasks for fixtures: chunks of
// MaxBatchCreate, pipelined perPipe chunks at a time.
func (l *Ledger) CreateMany(ctx context.Context, reqs []contracts.CreateTaskRequest, perPipe int) error {
	const op = "tasks.CreateMany"
	if l.set.N() > 1 {
		for len(reqs) > 0 {
			n := min(len(reqs), contracts.MaxBatchCreate)
			if _, err := l.CreateBatch(ctx, reqs[:n]); err != nil {
				return err
			}
			reqs = reqs[n:]
		}
		return nil
	}
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
		if _, err := l.createChunks(ctx, op, l.cfg.Now(), 0, group); err != nil {
			return err
		}
		chunks = chunks[n:]
	}
	return nil
}

// Keys exposes key names to tests (shard 0's).
func (l *Ledger) KeyBase() string { return l.ks[0].base }

// ShardBase is shard sh's key base.
func (l *Ledger) ShardBase(sh int) string { return l.ks[sh].base }

// Shards is the number of shards.
func (l *Ledger) Shards() int { return l.set.N() }

// ShardOf is the shard of key (an encounter or a queue_id).
func (l *Ledger) ShardOf(key string) int { return l.set.Of(key) }

// ForgetDoneIndex deletes the retention index and the backfill progress:
// DONE tasks without the done index (CHANGELOG.md, 2026-11-21).
func (l *Ledger) ForgetDoneIndex(ctx context.Context) error {
	for _, k := range l.ks {
		if err := l.rdb.Del(ctx, k.done(), k.doneBackfill()).Err(); err != nil {
			return err
		}
	}
	return nil
}

// CheckIndexes verifies, in every shard, that every index agrees with the
// task hashes: each task is in exactly the indexes its state calls for,
// with the right scores, and no index holds anything else; that each task
// lives in its home shard, found by its id (directly or by its locator);
// and that no queue_id names tasks in two shards.
func (l *Ledger) CheckIndexes(ctx context.Context) error {
	where := map[string]int{}
	for sh := range l.ks {
		ids, err := l.checkShard(ctx, sh)
		if err != nil {
			return fmt.Errorf("shard %d: %w", sh, err)
		}
		for _, id := range ids {
			if prev, dup := where[id]; dup {
				return fmt.Errorf("task %s is in shards %d and %d", id, prev, sh)
			}
			where[id] = sh
			if own := l.set.Of(id); own != sh {
				loc, ok, err := l.readLocator(ctx, "check", id)
				if err != nil {
					return err
				}
				if !ok || loc.home != sh {
					return fmt.Errorf("task %s in shard %d (its id's shard %d) has no locator to it", id, sh, own)
				}
			}
		}
	}
	return nil
}

func (l *Ledger) checkShard(ctx context.Context, sh int) ([]string, error) {
	k := l.ks[sh]
	ids, err := k.check(ctx, l.rdb)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		enc, err := l.rdb.HGet(ctx, k.task(id), "encounter_id").Result()
		if err != nil {
			return nil, err
		}
		if h := l.home(id, enc); h != sh {
			return nil, fmt.Errorf("task %s (encounter %q) lives in shard %d, not its home %d", id, enc, sh, h)
		}
	}
	return ids, nil
}

// check is CheckIndexes for one shard; it returns the shard's task ids.
func (l keys) check(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	ids, err := rdb.ZRange(ctx, l.all(), 0, -1).Result()
	if err != nil {
		return nil, err
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
		f, err := rdb.HGetAll(ctx, l.task(id)).Result()
		if err != nil {
			return nil, err
		}
		if len(f) == 0 {
			return nil, fmt.Errorf("task %s in all but has no hash", id)
		}
		st := contracts.Status(f["status"])
		add(l.status(st), id, f["seq"])
		switch st {
		case contracts.StatusPending:
			add(l.pending(contracts.Priority(f["priority"])), id, f["pseq"])
			if f["priority"] != string(contracts.PriorityHigh) {
				add(l.sla(), id, f["created_at"])
			}
			if f["worker_id"] != "" || f["claimed_at"] != "" {
				return nil, fmt.Errorf("pending task %s has a claim: %v", id, f)
			}
		case contracts.StatusProcessing:
			add(l.active(), id, f["updated_at"])
		case contracts.StatusError:
			if f["dlq"] != "1" {
				add(l.retry(), id, f["updated_at"])
			}
		case contracts.StatusDone:
			add(l.done(), id, f["updated_at"])
		}
		if f["dlq"] == "1" {
			if st != contracts.StatusError {
				return nil, fmt.Errorf("dlq task %s is %s", id, st)
			}
			add(l.dlq(), id, f["seq"])
		}
		if f["encounter_id"] != "" {
			add(l.encounter(f["encounter_id"]), id, f["seq"])
			open := st == contracts.StatusPending || st == contracts.StatusProcessing || (st == contracts.StatusError && f["dlq"] != "1")
			if open {
				if prev, dup := openWant[f["encounter_id"]]; dup {
					return nil, fmt.Errorf("encounter %s has two open tasks %s and %s", f["encounter_id"], prev, id)
				}
				openWant[f["encounter_id"]] = id
			}
		}
	}
	// claimed: written by no instance here (CHANGELOG.md), so empty.
	keys := []string{l.active(), l.claimed(), l.sla(), l.dlq(), l.retry(), l.done()}
	for _, s := range contracts.AllStatuses() {
		keys = append(keys, l.status(s))
	}
	for _, p := range contracts.AllPriorities() {
		keys = append(keys, l.pending(p))
	}
	for key := range want {
		if !contains(keys, key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		got, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		if len(got) != len(want[key]) {
			return nil, fmt.Errorf("index %s has %d members, want %d", key, len(got), len(want[key]))
		}
		for _, z := range got {
			id := z.Member.(string)
			score, ok := want[key][id]
			if !ok {
				return nil, fmt.Errorf("index %s holds %s, which does not belong there", key, id)
			}
			if score != z.Score {
				return nil, fmt.Errorf("index %s: %s has score %v, want %v", key, id, z.Score, score)
			}
		}
	}
	open, err := rdb.HGetAll(ctx, l.open()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if len(open) != len(openWant) {
		return nil, fmt.Errorf("open hash has %d entries, want %d: %v vs %v", len(open), len(openWant), open, openWant)
	}
	for enc, id := range openWant {
		if open[enc] != id {
			return nil, fmt.Errorf("open[%s] = %q, want %q", enc, open[enc], id)
		}
	}
	return ids, nil
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
	return l.claimToken(ctx, "tasks.Claim", worker, limit, token)
}

// pipelinedIDs numbers the tasks ScriptsPipelined creates.
var pipelinedIDs atomic.Int64

// ScriptsPipelined runs the create (one task each), claim (limit 1) or ACK
// script once per item, pipelined 100 calls at a time on shard 0, so that
// Redis runs them back to back as under load: the script cost test
// measures Redis's time per call without the idle gaps of one call at a
// time. Items are encounter ids (create) or queue ids (ACK: "ack" answers
// briefly as for the webhook, "ack-full" the whole task); claim takes
// len(items) tasks and returns their ids.
func (l *Ledger) ScriptsPipelined(ctx context.Context, script string, items []string) ([]string, error) {
	const op = "tasks.ScriptsPipelined"
	s := map[string]*proc{"create": lua.create, "claim": lua.claim, "ack": lua.ack, "ack-full": lua.ack}[script]
	if err := s.eval.Load(ctx, l.rdb).Err(); err != nil {
		return nil, err
	}
	if err := l.sc.decide(ctx); err != nil {
		return nil, err
	}
	k := l.ks[0]
	var out []string
	for lo := 0; lo < len(items); lo += 100 {
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, 100)
		for _, it := range items[lo:min(lo+100, len(items))] {
			base := []any{k.base, l.cfg.Now().UnixMilli(), l.cfg.HistoryLimit}
			switch script {
			case "create":
				id := fmt.Sprintf("00000000-0000-4000-9000-%012d", pipelinedIDs.Add(1))
				cmds = append(cmds, l.sc.inPipe(ctx, pipe, s, k.scriptKeys(k.itemKeys(id, it, l.set.N() > 1)...),
					append(base, 1, id, it, "NORMAL", 3, `{"n":1}`, "fp")...))
			case "claim":
				token := fmt.Sprintf("tok-%s", it)
				cmds = append(cmds, l.sc.inPipe(ctx, pipe, s, k.scriptKeys(k.claim(token)),
					append(base, "vm-1", 1, token, ClaimTokenTTL.Milliseconds())...))
			case "ack", "ack-full": // the webhook's brief answer, or Ack's whole task
				cmds = append(cmds, l.sc.inPipe(ctx, pipe, s, k.taskKeys(it),
					append(base, it, "", "vm-1", `{"ok":true}`, "afp", flag(script == "ack"))...))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, storeError(op, err)
		}
		for _, c := range cmds {
			if script != "claim" {
				out = append(out, "")
				continue
			}
			arr, _ := c.Val().([]any)
			if len(arr) != 2 {
				return nil, badReply(op, c.Val())
			}
			task, ok := claimedTask(arr[1], "vm-1", 0)
			if !ok {
				return nil, badReply(op, c.Val())
			}
			out = append(out, task.QueueID)
		}
	}
	return out, nil
}

// inPipe adds a call of p to pipe, as the ledger calls it (FCALL or EVALSHA:
// the mode must be decided and the script loaded).
func (s *scripts) inPipe(ctx context.Context, pipe redis.Pipeliner, p *proc, keys []string, args ...any) *redis.Cmd {
	if s.mode.Load() == modeFunction {
		return pipe.FCall(ctx, ledgerLibrary().fn[p], keys, args...)
	}
	return p.eval.EvalSha(ctx, pipe, keys, args...)
}

// UseEval makes the ledger call its scripts with EVALSHA, as on a Redis
// without FUNCTION.
func (l *Ledger) UseEval() { l.sc.mode.Store(modeEval) }
