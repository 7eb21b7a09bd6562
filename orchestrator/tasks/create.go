package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// newTask is a validated create request as the create script takes it.
type newTask struct {
	id, encounter string
	priority      contracts.Priority
	maxAttempts   int
	payload, fp   string
}

// Create adds one PENDING task (see CreateBatch for the rules).
func (l *Ledger) Create(ctx context.Context, req contracts.CreateTaskRequest) (contracts.CreateResult, error) {
	res, err := l.CreateBatch(ctx, []contracts.CreateTaskRequest{req})
	if err != nil {
		return contracts.CreateResult{}, err
	}
	return res[0], nil
}

// CreateBatch adds 1..MaxBatchCreate PENDING tasks atomically (all or
// nothing) and returns one result per request, in order.
//
// Idempotency: a request whose queue_id names a stored task answers that
// task (Duplicate) whatever its state, provided encounter_id and payload
// (compared canonically) match — otherwise the whole batch is a conflict. A
// request for an encounter_id that has an open task (PENDING, PROCESSING, or
// ERROR awaiting a retry; not DONE, not a dead letter) answers that open
// task (Duplicate; its queue_id may differ from the one asked for, and its
// payload is not updated). Requests without encounter_id are only
// idempotent on queue_id.
func (l *Ledger) CreateBatch(ctx context.Context, reqs []contracts.CreateTaskRequest) ([]contracts.CreateResult, error) {
	const op = "tasks.Create"
	if len(reqs) == 0 || len(reqs) > contracts.MaxBatchCreate {
		return nil, invalid(op, "tasks", "a create takes 1..%d tasks, got %d", contracts.MaxBatchCreate, len(reqs))
	}
	items, err := l.prepare(op, reqs)
	if err != nil {
		return nil, err
	}
	now := l.cfg.Now()
	if l.set.N() > 1 {
		return l.createSharded(ctx, op, now, items)
	}
	out, err := l.createChunks(ctx, op, now, 0, [][]newTask{items})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (l *Ledger) prepare(op string, reqs []contracts.CreateTaskRequest) ([]newTask, error) {
	items := make([]newTask, len(reqs))
	seen := make(map[string]int, len(reqs))
	for i, r := range reqs {
		it, err := l.prepareOne(op, r)
		if err != nil {
			if e := (*contracts.Error)(nil); errors.As(err, &e) && len(reqs) > 1 {
				e.Details["index"] = i
				e.Message = fmt.Sprintf("tasks[%d]: %s", i, e.Message)
			}
			return nil, err
		}
		if j, dup := seen[it.id]; dup && (items[j].encounter != it.encounter || items[j].fp != it.fp) {
			return nil, &contracts.Error{Code: contracts.CodeInvalid, Op: op,
				Message: fmt.Sprintf("tasks[%d] and tasks[%d] share queue_id %s with different content", j, i, it.id),
				Details: map[string]any{"field": "queue_id", "index": i}}
		}
		seen[it.id] = i
		items[i] = it
	}
	return items, nil
}

func (l *Ledger) prepareOne(op string, r contracts.CreateTaskRequest) (newTask, error) {
	it := newTask{encounter: r.EncounterID, maxAttempts: r.MaxAttempts}
	if r.QueueID != "" {
		id, err := queueID(op, r.QueueID)
		if err != nil {
			return it, err
		}
		it.id = id
	} else {
		it.id = l.newID(r.EncounterID)
	}
	if err := label(op, "encounter_id", r.EncounterID, false); err != nil {
		return it, err
	}
	p, err := contracts.ParsePriority(string(r.Priority), contracts.PriorityNormal)
	if err != nil {
		return it, err
	}
	it.priority = p
	if it.maxAttempts == 0 {
		it.maxAttempts = l.cfg.MaxAttempts
	}
	if it.maxAttempts < 1 || it.maxAttempts > contracts.MaxMaxAttempts {
		return it, invalid(op, "max_attempts", "max_attempts must be 1..%d", contracts.MaxMaxAttempts)
	}
	if it.payload, it.fp, err = jsonValue(op, "payload", r.Payload); err != nil {
		return it, err
	}
	if it.encounter == "" && it.payload == "" {
		// {} or {"tasks":[null]}: nothing a worker could act on. A task
		// names its encounter (the seed's ACK/FAIL carry encounter_id), or
		// at least carries a payload.
		return it, invalid(op, "encounter_id", "a task needs an encounter_id or a payload (neither was given)")
	}
	return it, nil
}

// createChunks runs the create script in shard sh once per chunk (each ≤
// MaxBatchCreate). Several chunks are pipelined: each chunk is atomic, the
// set of chunks is not.
func (l *Ledger) createChunks(ctx context.Context, op string, now time.Time, sh int, chunks [][]newTask) ([][]contracts.CreateResult, error) {
	out := make([][]contracts.CreateResult, len(chunks))
	if len(chunks) == 1 {
		v, err := l.sc.run(ctx, lua.create, l.createKeys(sh, chunks[0]), l.createArgs(sh, now, chunks[0])...).Result()
		if err != nil {
			return nil, storeError(op, err)
		}
		if out[0], err = l.createResults(ctx, op, now, sh, chunks[0], v); err != nil {
			return nil, err
		}
		return out, nil
	}
	// EVALSHA in a pipeline cannot fall back to EVAL: load the script first.
	// (A batch of several chunks is rare: it runs as EVAL in every mode.)
	if err := lua.create.eval.Load(ctx, l.rdb).Err(); err != nil {
		return nil, storeError(op, err)
	}
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(chunks))
	for i, chunk := range chunks {
		cmds[i] = lua.create.eval.EvalSha(ctx, pipe, l.createKeys(sh, chunk), l.createArgs(sh, now, chunk)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, storeError(op, err)
	}
	for i, cmd := range cmds {
		var err error
		if out[i], err = l.createResults(ctx, op, now, sh, chunks[i], cmd.Val()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (l *Ledger) createKeys(sh int, chunk []newTask) []string {
	own := make([]string, 0, 4*len(chunk))
	for _, it := range chunk {
		own = append(own, l.ks[sh].itemKeys(it.id, it.encounter, l.set.N() > 1)...)
	}
	return l.ks[sh].scriptKeys(own...)
}

func (l *Ledger) createArgs(sh int, now time.Time, chunk []newTask) []any {
	argv := make([]any, 0, 4+6*len(chunk))
	argv = append(argv, l.ks[sh].base, now.UnixMilli(), l.cfg.HistoryLimit, len(chunk))
	for _, it := range chunk {
		argv = append(argv, it.id, it.encounter, string(it.priority), it.maxAttempts, it.payload, it.fp)
	}
	return argv
}

// Codes of a create script's per-task reply.
const (
	createdNew   = 0 // {0, id}: created
	createdSame  = 1 // {1, id, fields}: the task with that queue_id answers
	createdOther = 2 // {2, other}: the encounter's open task answers (read here)
)

func (l *Ledger) createResults(ctx context.Context, op string, now time.Time, sh int, chunk []newTask, v any) ([]contracts.CreateResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, badReply(op, v)
	}
	if code, _ := arr[0].(int64); code == codeConflict {
		if len(arr) > 4 && str(arr[2]) == "located" {
			return nil, &errLocated{id: str(arr[4])}
		}
		r := reply{code: codeConflict, a: str(arr[1]), b: str(arr[2]), fields: map[string]string{}}
		return nil, conflict(op, str(arr[4]), r)
	}
	if len(arr) != len(chunk)+1 {
		return nil, badReply(op, v)
	}
	out := make([]contracts.CreateResult, len(chunk))
	for i, raw := range arr[1:] {
		item, ok := raw.([]any)
		if !ok || len(item) < 2 {
			return nil, badReply(op, v)
		}
		code, _ := item[0].(int64)
		switch {
		case code == createdNew:
			out[i] = contracts.CreateResult{Task: created(chunk[i], now)}
		case code == createdSame && len(item) >= 3:
			fields, ok := recordMap(item[2])
			if !ok {
				return nil, badReply(op, v)
			}
			out[i] = contracts.CreateResult{Duplicate: true, Task: taskFromFields(fields)}
		case code == createdOther:
			res, err := l.openAnswer(ctx, op, now, sh, chunk[i], str(item[1]))
			if err != nil {
				return nil, err
			}
			out[i] = res
		default:
			return nil, badReply(op, v)
		}
	}
	return out, nil
}

// openAnswer answers a create with the open task other of its encounter,
// read after the script. An entry that names a closed or missing task
// (stale: no transition leaves one) is cleared and the task created.
func (l *Ledger) openAnswer(ctx context.Context, op string, now time.Time, sh int, it newTask, other string) (contracts.CreateResult, error) {
	f, err := l.rdb.HGetAll(ctx, l.ks[sh].task(other)).Result()
	if err != nil {
		return contracts.CreateResult{}, storeError(op, err)
	}
	if len(f) > 0 && isOpen(contracts.Status(f["status"]), f["dlq"] == "1") {
		return contracts.CreateResult{Duplicate: true, Task: taskFromFields(f)}, nil
	}
	if _, err := l.repairOpen(ctx, op, sh, it.encounter, other); err != nil {
		return contracts.CreateResult{}, err
	}
	out, err := l.createChunks(ctx, op, now, sh, [][]newTask{{it}})
	if err != nil {
		return contracts.CreateResult{}, err
	}
	return out[0][0], nil
}

// isOpen is the scripts' isopen: a task blocks a second one for its
// encounter while PENDING, PROCESSING or ERROR awaiting a retry.
func isOpen(s contracts.Status, dlq bool) bool {
	return s == contracts.StatusPending || s == contracts.StatusProcessing || (s == contracts.StatusError && !dlq)
}

// created renders a task the create script has just written, from the same
// fields the script stored.
func created(it newTask, now time.Time) contracts.Task {
	at := fmt.Sprint(now.UnixMilli())
	f := map[string]string{
		"queue_id": it.id, "encounter_id": it.encounter, "status": string(contracts.StatusPending),
		"priority": string(it.priority), "attempts": "0", "max_attempts": fmt.Sprint(it.maxAttempts),
		"dlq": "0", "created_at": at, "updated_at": at,
	}
	if it.payload != "" {
		f["payload"] = it.payload
	}
	return taskFromFields(f)
}
