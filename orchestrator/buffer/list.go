package buffer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// List states: Asynq's, "dead" being the archive (the dead-letter queue).
const (
	ListPending   = "pending"
	ListScheduled = "scheduled"
	ListRetry     = "retry"
	ListActive    = "active"
	ListCompleted = "completed"
	ListDead      = "dead"
)

// ListStates are the states List takes.
var ListStates = []string{ListPending, ListScheduled, ListRetry, ListActive, ListCompleted, ListDead}

// Bounds of List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
	listChunk        = 100  // tasks read per Inspector call
	listScanMax      = 5000 // tasks looked at per call (a type filter skips the rest)
)

// ListQuery selects messages: a state (required), optionally a type and a
// priority, a page size and the cursor of the previous page.
type ListQuery struct {
	State    string
	Type     string
	Priority *contracts.BufferPriority
	Cursor   string
	Limit    int // 0: DefaultListLimit
}

func badParam(field, format string, args ...any) *contracts.Error {
	e := contracts.FieldErrorf(contracts.CodeInvalid, field, format, args...)
	e.Op = "buffer.List"
	return e
}

// ParsePriority reads 0..3 or critical, high, normal, low.
func ParsePriority(s string) (contracts.BufferPriority, error) {
	names := map[string]contracts.BufferPriority{"critical": 0, "high": 1, "normal": 2, "default": 2, "low": 3}
	if p, ok := names[strings.ToLower(s)]; ok {
		return p, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || !contracts.BufferPriority(n).Valid() {
		return 0, badParam("priority", "priority must be 0..3 or critical, high, normal, low; got %q", s)
	}
	return contracts.BufferPriority(n), nil
}

// listKey is the Asynq key holding queue q's tasks in a state: a LIST for
// pending and active, a ZSET for the others (asynq internal/base).
func listKey(state, q string) (key string, isList bool) {
	switch state {
	case ListPending:
		return pendingKey(q), true
	case ListActive:
		return "asynq:{" + q + "}:active", true
	case ListScheduled:
		return "asynq:{" + q + "}:scheduled", false
	case ListRetry:
		return "asynq:{" + q + "}:retry", false
	case ListCompleted:
		return "asynq:{" + q + "}:completed", false
	case ListDead:
		return archivedKey(q), false
	}
	return "", false
}

// taskStates are the Asynq states a listed task must still be in.
var taskStates = map[string]asynq.TaskState{
	ListPending: asynq.TaskStatePending, ListActive: asynq.TaskStateActive, ListScheduled: asynq.TaskStateScheduled,
	ListRetry: asynq.TaskStateRetry, ListCompleted: asynq.TaskStateCompleted, ListDead: asynq.TaskStateArchived,
}

// Bounds of a list cursor's anchors.
const (
	maxAnchors     = 8
	maxAnchorBytes = 1024
)

// listCursor is where the next page starts, by what was walked last, never
// by position: positions shift while messages move.
//
//   - Lists (pending, active): Asynq pushes on the left and a worker takes
//     from the right, so the walk goes right to left (oldest first) and
//     the cursor holds the last ids walked (Anchors, the most recent
//     last, at most maxAnchors and maxAnchorBytes): the next page starts
//     left of the most recent one still in the list (listScript). Ids
//     stay in their order while others come and go, so a message that
//     stays in the state is walked once. If every anchor has left a
//     pending list, they were taken from its right end, and everything
//     walked before them with them: the walk goes on from the right end.
//   - Sorted sets (scheduled, retry, completed, dead): the last walked
//     (score, id); the next page starts after it in (score, member) order.
type listCursor struct {
	State   string   `json:"s"`
	Queue   int      `json:"q"`
	Anchors []string `json:"a,omitempty"`
	Score   string   `json:"sc,omitempty"` // zsets: the last walked score ("" = from the start)
	ID      string   `json:"id,omitempty"` // zsets: the last walked member
}

func (c listCursor) String() string {
	raw, _ := json.Marshal(c) // strings and an int always marshal
	return base64.RawURLEncoding.EncodeToString(raw)
}

// walked moves the cursor past id (of score, in a sorted set).
func (c *listCursor) walked(id string, score float64, isList bool) {
	if !isList {
		c.Score, c.ID = strconv.FormatFloat(score, 'g', -1, 64), id
		return
	}
	c.Anchors = append(c.Anchors, id)
	n := 0
	for _, a := range c.Anchors {
		n += len(a)
	}
	for len(c.Anchors) > maxAnchors || (len(c.Anchors) > 1 && n > maxAnchorBytes) {
		n -= len(c.Anchors[0])
		c.Anchors = c.Anchors[1:]
	}
}

func parseListCursor(s, state string) (listCursor, error) {
	bad := badParam("cursor", "cursor %q is not one this endpoint returned for state %s", s, state)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return listCursor{}, bad
	}
	var c listCursor
	if json.Unmarshal(raw, &c) != nil || c.State != state || c.Queue < 0 || c.Queue >= len(queueNames) || len(c.Anchors) > maxAnchors {
		return listCursor{}, bad
	}
	if c.Score != "" {
		// Exactly as List wrote it (FormatFloat 'g'): ParseFloat alone takes
		// "NaN", "Inf" or "0x1p-2", which Redis then refuses as a range
		// bound — a forged cursor read as a store failure (503).
		f, err := strconv.ParseFloat(c.Score, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strconv.FormatFloat(f, 'g', -1, 64) != c.Score {
			return listCursor{}, bad
		}
	}
	return c, nil
}

// List pages the messages of one state across the priority queues
// (CRITICAL first; within a queue oldest first: by arrival for pending and
// active, by Asynq's score — due time, failure time, expiry — for the
// others), filtered by type and priority. The cursor is opaque and stable
// (listCursor): a message that stays in the state while others move is
// listed once. A page may hold fewer than Limit messages and still have a
// next cursor when a type filter skipped many.
func (b *Buffer) List(ctx context.Context, q ListQuery) (contracts.BufferMessageList, error) {
	out := contracts.BufferMessageList{State: q.State, Items: []contracts.BufferMessage{}}
	if _, ok := taskStates[q.State]; !ok {
		return out, badParam("state", "state must be one of %s; got %q", strings.Join(ListStates, ", "), q.State)
	}
	cur, last, err := listStart(&q)
	if err != nil {
		return out, err
	}
	scan := listScan{b: b, q: q, out: &out}
	for ; cur.Queue <= last; cur = (listCursor{State: q.State, Queue: cur.Queue + 1}) {
		done, err := scan.queue(ctx, &cur)
		if err != nil || done {
			return out, err
		}
	}
	return out, nil
}

// listStart checks q (defaulting its limit) and answers where the listing
// starts and the last queue it reads.
func listStart(q *ListQuery) (listCursor, int, error) {
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return listCursor{}, 0, badParam("limit", "limit must be 1..%d, got %d", MaxListLimit, q.Limit)
	}
	if q.Type != "" && len(q.Type) > 128 {
		return listCursor{}, 0, badParam("type", "type must be at most 128 characters")
	}
	cur := listCursor{State: q.State}
	if q.Cursor != "" {
		var err error
		if cur, err = parseListCursor(q.Cursor, q.State); err != nil {
			return listCursor{}, 0, err
		}
	}
	last := len(queueNames) - 1
	if q.Priority != nil {
		if !q.Priority.Valid() {
			return listCursor{}, 0, badParam("priority", "priority must be 0..3")
		}
		if cur.Queue < int(*q.Priority) {
			cur = listCursor{State: q.State, Queue: int(*q.Priority)}
		}
		last = int(*q.Priority)
	}
	return cur, last, nil
}

// listScan is one List call's walk over the queues.
type listScan struct {
	b       *Buffer
	q       ListQuery
	out     *contracts.BufferMessageList
	scanned int
}

// walkEntry is one id a chunk read, with its score in a sorted set.
type walkEntry struct {
	id    string
	score float64
}

// queue walks cur's queue from the cursor on; done when the page is full
// or the scan budget spent (NextCursor set).
func (s *listScan) queue(ctx context.Context, cur *listCursor) (bool, error) {
	qname := queueNames[cur.Queue]
	key, isList := listKey(s.q.State, qname)
	for {
		if s.scanned >= listScanMax {
			s.out.NextCursor = cur.String()
			return true, nil
		}
		chunk, err := s.chunk(ctx, key, isList, *cur)
		if err != nil {
			return false, persistence("buffer.List", err)
		}
		if len(chunk) == 0 {
			return false, nil
		}
		types, err := s.types(ctx, qname, chunk)
		if err != nil {
			return false, persistence("buffer.List", err)
		}
		for i, e := range chunk {
			cur.walked(e.id, e.score, isList)
			s.scanned++
			if types[i] == "" || (s.q.Type != "" && types[i] != s.q.Type) {
				continue // gone meanwhile, or another type
			}
			m, err := s.message(ctx, qname, e.id)
			if err != nil {
				return false, err
			}
			if m == nil {
				continue // it left the state meanwhile
			}
			s.out.Items = append(s.out.Items, *m)
			if len(s.out.Items) == s.q.Limit {
				s.out.NextCursor = cur.String()
				return true, nil
			}
		}
	}
}

// chunk reads the next ids after the cursor: listScript for a list, the
// sorted set by (score, member) after the cursor's for the others.
func (s *listScan) chunk(ctx context.Context, key string, isList bool, cur listCursor) ([]walkEntry, error) {
	rdb := s.b.cfg.Redis
	if isList {
		argv := make([]any, 0, 1+len(cur.Anchors))
		argv = append(argv, listChunk)
		for i := len(cur.Anchors) - 1; i >= 0; i-- {
			argv = append(argv, cur.Anchors[i])
		}
		ids, err := listScript.Run(ctx, rdb, []string{key}, argv...).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", key, err)
		}
		out := make([]walkEntry, len(ids))
		for i, id := range ids {
			out[i] = walkEntry{id: id}
		}
		return out, nil
	}
	from, after := "-inf", math.Inf(-1)
	if cur.Score != "" {
		from = cur.Score
		after, _ = strconv.ParseFloat(cur.Score, 64) // checked by parseListCursor
	}
	var out []walkEntry
	for off := int64(0); len(out) == 0; off += listChunk {
		zs, err := rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: from, Max: "+inf", Offset: off, Count: listChunk}).Result()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", key, err)
		}
		for _, z := range zs {
			id, _ := z.Member.(string)
			if cur.Score != "" && z.Score == after && id <= cur.ID {
				continue // at the cursor's score, walked already (members sort by bytes)
			}
			out = append(out, walkEntry{id: id, score: z.Score})
		}
		if len(zs) < listChunk {
			break
		}
	}
	return out, nil
}

// types reads the type of each task of the chunk in one pipelined round
// trip ("" for a task gone meanwhile).
func (s *listScan) types(ctx context.Context, q string, chunk []walkEntry) ([]string, error) {
	pipe := s.b.cfg.Redis.Pipeline()
	cmds := make([]*redis.StringCmd, len(chunk))
	for i, e := range chunk {
		cmds[i] = pipe.HGet(ctx, taskKey(q, e.id), "msg")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("list types: %w", err)
	}
	out := make([]string, len(chunk))
	for i, c := range cmds {
		raw, err := c.Bytes()
		if err == nil {
			out[i] = taskType(raw)
		}
	}
	return out, nil
}

// message reads a listed task as the seed's message; nil when it is no
// longer in the state listed.
func (s *listScan) message(ctx context.Context, q, id string) (*Message, error) {
	info, err := s.b.rt.Inspector.GetTaskInfo(q, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, persistence("buffer.List", err)
	}
	if info.State != taskStates[s.q.State] {
		return nil, nil
	}
	return s.b.fromTask(ctx, info)
}
