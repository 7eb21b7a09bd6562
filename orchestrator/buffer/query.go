package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/dlq"
)

func notFound(op, id string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeNotFound, Op: op, Message: "no message " + id + " in the work buffer",
		Details: map[string]any{"messageId": id}}
}

// find looks a message up in the four queues, CRITICAL first.
func (b *Buffer) find(id string) (*asynq.TaskInfo, error) {
	for _, q := range queueNames {
		info, err := b.rt.Inspector.GetTaskInfo(q, id)
		switch {
		case err == nil:
			return info, nil
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
			continue
		default:
			return nil, persistence("buffer.Get", err)
		}
	}
	return nil, notFound("buffer.Get", id)
}

// Get returns a message by id as the seed's BufferMessage.
func (b *Buffer) Get(ctx context.Context, id string) (*Message, error) {
	if !validID(id) {
		return nil, invalid("messageId", "messageId must be 1–128 of [A-Za-z0-9._:-]")
	}
	info, err := b.find(id)
	if err != nil {
		return nil, err
	}
	return b.fromTask(ctx, info)
}

// fromTask builds the message from the task, its result and its errors.
func (b *Buffer) fromTask(ctx context.Context, info *asynq.TaskInfo) (*Message, error) {
	var env envelope
	if err := json.Unmarshal(info.Payload, &env); err != nil {
		return nil, fmt.Errorf("buffer: decode task %s: %w", info.ID, err)
	}
	m := &Message{
		MessageID: info.ID, Type: info.Type, Priority: env.Priority, Payload: env.Payload, Metadata: env.Metadata,
		AttemptCount: info.Retried, MaxRetries: env.MaxRetries, IdempotencyKey: env.IdempotencyKey,
		CreatedAt: env.CreatedAt, UpdatedAt: env.CreatedAt, Errors: []contracts.BufferError{},
	}
	raws, err := b.cfg.Redis.LRange(ctx, errKey(b.cfg.KeyPrefix, info.ID), 0, -1).Result()
	if err != nil {
		return nil, persistence("buffer.Get", err)
	}
	for _, r := range raws {
		var e contracts.BufferError
		if json.Unmarshal([]byte(r), &e) == nil {
			m.Errors = append(m.Errors, e)
		}
	}
	if n := len(m.Errors); n > 0 {
		last := m.Errors[n-1]
		m.LastError = &contracts.BufferLastError{Message: last.Message, Code: last.Code, Timestamp: last.Timestamp}
		m.LastProcessedAt, m.UpdatedAt = ptr(last.Timestamp), last.Timestamp
	}
	b.applyState(m, info)
	return m, nil
}

// applyState maps the asynq state onto the seed's.
func (b *Buffer) applyState(m *Message, info *asynq.TaskInfo) {
	switch info.State {
	case asynq.TaskStateActive:
		m.State, m.AttemptCount = contracts.BufferProcessing, info.Retried+1
	case asynq.TaskStateCompleted:
		m.State = contracts.BufferCompleted
		var c completion
		if json.Unmarshal(info.Result, &c) == nil {
			m.Result, m.ResultTruncated, m.AttemptCount, m.WorkerID = c.Result, c.ResultTruncated, c.AttemptCount, c.WorkerID
			m.ProcessingStartedAt, m.CompletedAt = ptr(c.ProcessingStartedAt), ptr(c.CompletedAt)
			m.LastProcessedAt, m.UpdatedAt = ptr(c.CompletedAt), c.CompletedAt
			m.ExpiresAt = ptr(c.CompletedAt.Add(b.cfg.CompletedRetention))
		}
	case asynq.TaskStateArchived:
		m.State, m.AttemptCount = contracts.BufferDLQ, info.Retried+1
		if !info.LastFailedAt.IsZero() {
			m.UpdatedAt = info.LastFailedAt.UTC()
			m.ExpiresAt = ptr(m.UpdatedAt.Add(b.cfg.FailedRetention))
		}
		if m.LastError == nil && info.LastErr != "" {
			m.LastError = &contracts.BufferLastError{Message: info.LastErr, Code: codePrefix(info.LastErr), Timestamp: m.UpdatedAt}
		}
	default: // pending, scheduled, retry, aggregating
		m.State = contracts.BufferPending
		if !info.NextProcessAt.IsZero() {
			m.VisibleAt = ptr(info.NextProcessAt.UTC())
		}
	}
}

// codePrefix reads "CODE: …" back from asynq's last error.
func codePrefix(s string) string {
	if i := strings.Index(s, ": "); i > 0 && strings.ToUpper(s[:i]) == s[:i] && !strings.Contains(s[:i], " ") {
		return s[:i]
	}
	return ""
}

func ptr(t time.Time) *time.Time { return &t }

// Stats answers the seed's getStats.
func (b *Buffer) Stats(ctx context.Context) (contracts.BufferStats, error) {
	st := contracts.BufferStats{State: b.State(), MaxQueueSize: b.cfg.MaxQueueSize,
		Queues: map[string]contracts.BufferQueueStats{}, Handlers: b.Handlers(), Circuits: b.Circuits()}
	d, err := b.depth.read(ctx)
	if err != nil {
		return st, persistence("buffer.Stats", err)
	}
	st.Depth, st.Level = d, b.depth.th.Level(d)
	known, err := b.rt.Inspector.Queues()
	if err != nil {
		return st, persistence("buffer.Stats", err)
	}
	exists := map[string]bool{}
	for _, q := range known {
		exists[q] = true
	}
	for i, q := range queueNames {
		qs := contracts.BufferQueueStats{Priority: contracts.BufferPriority(i)}
		if exists[q] { // asynq's GetQueueInfo has no typed not-found error
			info, err := b.rt.Inspector.GetQueueInfo(q)
			if err != nil {
				return st, persistence("buffer.Stats", err)
			}
			qs.Pending, qs.Active, qs.Scheduled, qs.Retry = info.Pending, info.Active, info.Scheduled, info.Retry
			qs.Completed, qs.Archived = info.Completed, info.Archived
		}
		st.Queues[q] = qs
	}
	if st.DLQ, err = b.DLQCount(ctx); err != nil {
		return st, err
	}
	return st, nil
}

// DLQList pages the dead letters, newest first. The cursor is opaque
// ("<queue index>:<offset>").
func (b *Buffer) DLQList(ctx context.Context, limit int, cursor string) (contracts.BufferDLQList, error) {
	out := contracts.BufferDLQList{Items: []contracts.BufferDLQItem{}}
	if limit <= 0 || limit > 500 {
		return out, invalid("limit", "limit must be 1..500, got %d", limit)
	}
	qi, off, err := parseCursor(cursor)
	if err != nil {
		return out, err
	}
	for ; qi < len(queueNames) && len(out.Items) < limit; qi, off = qi+1, 0 {
		want := limit - len(out.Items)
		recs, err := b.rt.DLQ.List(ctx, queueNames[qi], off, int64(want))
		if err != nil {
			return out, persistence("buffer.DLQList", err)
		}
		for _, r := range recs {
			out.Items = append(out.Items, dlqItem(r))
		}
		if len(recs) == want {
			out.NextCursor = strconv.Itoa(qi) + ":" + strconv.FormatInt(off+int64(want), 10)
			return out, nil
		}
	}
	return out, nil
}

func parseCursor(c string) (int, int64, error) {
	if c == "" {
		return 0, 0, nil
	}
	a, o, ok := strings.Cut(c, ":")
	qi, err1 := strconv.Atoi(a)
	off, err2 := strconv.ParseInt(o, 10, 64)
	if !ok || err1 != nil || err2 != nil || qi < 0 || qi >= len(queueNames) || off < 0 {
		return 0, 0, invalid("cursor", "cursor %q is not one this endpoint returned", c)
	}
	return qi, off, nil
}

func dlqItem(r dlq.Record) contracts.BufferDLQItem {
	maxRetry := r.MaxRetry
	var env envelope
	if json.Unmarshal(r.Payload, &env) == nil && env.MessageID != "" {
		maxRetry = env.MaxRetries // the message's budget, not Asynq's (deferHeadroom)
	}
	return contracts.BufferDLQItem{MessageID: r.TaskID, Type: r.Type, Queue: r.Queue, Error: r.Error,
		Retried: r.Retried, MaxRetry: maxRetry, FailedAt: r.FailedAt.UTC()}
}

// DLQStats answers the seed's DeadLetterQueue.getStats.
func (b *Buffer) DLQStats(ctx context.Context) (contracts.BufferDLQStats, error) {
	st := contracts.BufferDLQStats{ByQueue: map[string]int64{}, ByType: map[string]int64{}, AlertThreshold: b.cfg.DLQAlertThreshold}
	for _, q := range queueNames {
		for off := int64(0); ; off += 1000 {
			recs, err := b.rt.DLQ.List(ctx, q, off, 1000)
			if err != nil {
				return st, persistence("buffer.DLQStats", err)
			}
			for _, r := range recs {
				st.Count++
				st.ByQueue[q]++
				st.ByType[r.Type]++
				t := r.FailedAt.UTC()
				if st.Oldest == nil || t.Before(*st.Oldest) {
					st.Oldest = ptr(t)
				}
				if st.Newest == nil || t.After(*st.Newest) {
					st.Newest = ptr(t)
				}
			}
			if len(recs) < 1000 {
				break
			}
		}
	}
	st.Alerting = st.Count >= st.AlertThreshold
	return st, nil
}

// dlqFind returns the queue holding a dead letter.
func (b *Buffer) dlqFind(ctx context.Context, id string) (string, error) {
	if !validID(id) {
		return "", invalid("messageId", "messageId must be 1–128 of [A-Za-z0-9._:-]")
	}
	for _, q := range queueNames {
		ok, err := b.rt.DLQ.Has(ctx, q, id)
		if err != nil {
			return "", persistence("buffer.DLQ", err)
		}
		if ok {
			return q, nil
		}
	}
	return "", notFound("buffer.DLQ", id)
}

// Replay runs a dead letter again with fresh retries (seed replayMessage):
// the archived task goes back to pending and the record is removed; its
// error history is kept. Of
// concurrent replays one wins; the others, like a replay of a message that
// is no longer dead, get CONFLICT (409).
func (b *Buffer) Replay(ctx context.Context, id string) error {
	q, err := b.dlqFind(ctx, id)
	if err != nil {
		if contracts.ErrorCode(err) == contracts.CodeNotFound {
			return b.notDead("buffer.Replay", id, err)
		}
		return err
	}
	sh := b.shardOfTask(q, id)
	if err := b.rerun(ctx, q, id); err != nil {
		return err
	}
	gone, err := b.rt.DLQ.Delete(ctx, q, id)
	if err != nil {
		return persistence("buffer.Replay", err)
	}
	// The error history stays: the replayed attempts append to it.
	if depth, err := b.cfg.Redis.IncrBy(ctx, b.keys(sh).depth(), 1).Result(); err == nil {
		b.depth.gauge(sh).set(depth)
	}
	if gone {
		b.dlqMoved(ctx, -1)
	}
	return nil
}

// rerun puts the archived task id of queue q back to pending with its
// whole retry budget (replayScript); a task no longer archived (a
// concurrent replay moved it) is answered as notDead does.
func (b *Buffer) rerun(ctx context.Context, q, id string) error {
	gone := func(err error) error {
		return &contracts.Error{Code: contracts.CodeConflict, Op: "buffer.Replay", Err: err,
			Message: "the dead letter's task is no longer in the archive; it cannot be replayed", Details: map[string]any{"messageId": id}}
	}
	for range 3 { // the message changes between read and write only if asynq rewrote it meanwhile
		raw, err := b.cfg.Redis.HGet(ctx, taskKey(q, id), "msg").Bytes()
		if errors.Is(err, redis.Nil) {
			return gone(asynq.ErrTaskNotFound)
		}
		if err != nil {
			return persistence("buffer.Replay", err)
		}
		fresh, err := withoutRetried(raw)
		if err != nil {
			return persistence("buffer.Replay", err)
		}
		res, err := replayScript.Run(ctx, b.cfg.Redis, []string{taskKey(q, id), pendingKey(q), archivedKey(q)}, id, raw, fresh).Int64()
		if err != nil {
			return persistence("buffer.Replay", err)
		}
		switch res {
		case replayMoved:
			return nil
		case replayNoTask:
			return gone(asynq.ErrTaskNotFound)
		case replayNotArchived:
			return b.notDead("buffer.Replay", id, persistence("buffer.Replay", errors.New("the task is no longer archived")))
		}
	}
	return persistence("buffer.Replay", errors.New("the task's message kept changing"))
}

// typeField is the number of TaskMessage.type in asynq's
// internal/proto/asynq.proto (stable since v0.18).
const typeField protowire.Number = 1

// taskType reads the type of a protobuf TaskMessage ("" when it has none
// or cannot be read).
func taskType(msg []byte) string {
	for rest := msg; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return ""
		}
		if num == typeField && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(rest[n:])
			if m < 0 {
				return ""
			}
			return string(v)
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return ""
		}
		rest = rest[n+m:]
	}
	return ""
}

// retriedField is the number of TaskMessage.retried in asynq's
// internal/proto/asynq.proto (stable since v0.18).
const retriedField protowire.Number = 6

// withoutRetried is the protobuf TaskMessage msg with its retried field
// dropped (proto3: absent = 0), every other field kept byte for byte.
func withoutRetried(msg []byte) ([]byte, error) {
	out := make([]byte, 0, len(msg))
	for rest := msg; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, fmt.Errorf("buffer: task message: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return nil, fmt.Errorf("buffer: task message: %w", protowire.ParseError(m))
		}
		if num != retriedField {
			out = append(out, rest[:n+m]...)
		}
		rest = rest[n+m:]
	}
	return out, nil
}

// shardOfTask is the shard whose counter holds the place of the task id
// of queue q (its envelope's), 0 with one shard or when it cannot be read.
func (b *Buffer) shardOfTask(q, id string) int {
	if b.shards.N() == 1 {
		return 0
	}
	info, err := b.rt.Inspector.GetTaskInfo(q, id)
	if err != nil {
		return 0
	}
	var env envelope
	if json.Unmarshal(info.Payload, &env) != nil || env.Shard < 0 || env.Shard >= b.shards.N() {
		return 0
	}
	return env.Shard
}

// notDead answers a replay or a DLQ delete (op) of a message that is not,
// or no longer, a dead letter: CONFLICT naming its state when its task
// exists in another one (replayed meanwhile, or never dead), else
// otherwise (not found).
func (b *Buffer) notDead(op, id string, otherwise error) error {
	info, err := b.find(id)
	if err != nil || info.State == asynq.TaskStateArchived {
		return otherwise
	}
	return &contracts.Error{Code: contracts.CodeConflict, Op: op,
		Message: "message " + id + " is not a dead letter (state " + info.State.String() + "): the dead-letter queue does not hold it",
		Details: map[string]any{"messageId": id, "reason": "not_dead_letter", "state": info.State.String()}}
}

// DeleteDLQ removes a dead letter for good (record, archived task, errors,
// idempotency key).
func (b *Buffer) DeleteDLQ(ctx context.Context, id string) error {
	q, err := b.dlqFind(ctx, id)
	if err != nil {
		if contracts.ErrorCode(err) == contracts.CodeNotFound {
			return b.notDead("buffer.DeleteDLQ", id, err)
		}
		return err
	}
	if info, err := b.rt.Inspector.GetTaskInfo(q, id); err == nil {
		var env envelope
		if json.Unmarshal(info.Payload, &env) == nil && env.IdempotencyKey != "" {
			b.expireIdem(ctx, env.IdempotencyKey, id, 0)
		}
		if err := b.rt.Inspector.DeleteTask(q, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			return persistence("buffer.DeleteDLQ", err)
		}
	}
	n, err := b.rt.DLQ.Delete(ctx, q, id)
	if err != nil {
		return persistence("buffer.DeleteDLQ", err)
	}
	b.cfg.Redis.Del(ctx, errKey(b.cfg.KeyPrefix, id))
	if n {
		b.dlqMoved(ctx, -1)
	}
	return nil
}
