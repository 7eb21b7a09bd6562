package buffer

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"

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

func (b *Buffer) lister(state string) func(q string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error) {
	in := b.rt.Inspector
	switch state {
	case ListPending:
		return in.ListPendingTasks
	case ListScheduled:
		return in.ListScheduledTasks
	case ListRetry:
		return in.ListRetryTasks
	case ListActive:
		return in.ListActiveTasks
	case ListCompleted:
		return in.ListCompletedTasks
	case ListDead:
		return in.ListArchivedTasks
	}
	return nil
}

// listCursor is where the next page starts: a queue and the position in
// that state's list of it.
type listCursor struct {
	state string
	queue int
	pos   int
}

func (c listCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.state + ":" + strconv.Itoa(c.queue) + ":" + strconv.Itoa(c.pos)))
}

func parseListCursor(s, state string) (listCursor, error) {
	bad := badParam("cursor", "cursor %q is not one this endpoint returned for state %s", s, state)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return listCursor{}, bad
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != state {
		return listCursor{}, bad
	}
	q, err1 := strconv.Atoi(parts[1])
	pos, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || q < 0 || q >= len(queueNames) || pos < 0 {
		return listCursor{}, bad
	}
	return listCursor{state: state, queue: q, pos: pos}, nil
}

// List pages the messages of one state across the priority queues
// (CRITICAL first), filtered by type and priority. The cursor is opaque; a
// page may hold fewer than Limit messages and still have a next cursor
// when a type filter skipped many.
func (b *Buffer) List(ctx context.Context, q ListQuery) (contracts.BufferMessageList, error) {
	out := contracts.BufferMessageList{State: q.State, Items: []contracts.BufferMessage{}}
	list := b.lister(q.State)
	if list == nil {
		return out, badParam("state", "state must be one of %s; got %q", strings.Join(ListStates, ", "), q.State)
	}
	cur, last, err := listStart(&q)
	if err != nil {
		return out, err
	}
	scan := listScan{b: b, q: q, list: list, out: &out}
	for ; cur.queue <= last; cur.queue, cur.pos = cur.queue+1, 0 {
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
	cur := listCursor{state: q.State}
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
		if cur.queue < int(*q.Priority) {
			cur = listCursor{state: q.State, queue: int(*q.Priority)}
		}
		last = int(*q.Priority)
	}
	return cur, last, nil
}

// listScan is one List call's walk over the queues.
type listScan struct {
	b       *Buffer
	q       ListQuery
	list    func(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	out     *contracts.BufferMessageList
	scanned int
}

// queue reads cur's queue from cur.pos on; done when the page is full or
// the scan budget spent (NextCursor set).
func (s *listScan) queue(ctx context.Context, cur *listCursor) (bool, error) {
	for {
		if s.scanned >= listScanMax {
			s.out.NextCursor = cur.String()
			return true, nil
		}
		page, skip := cur.pos/listChunk+1, cur.pos%listChunk
		infos, err := s.list(queueNames[cur.queue], asynq.PageSize(listChunk), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return false, nil
		}
		if err != nil {
			return false, persistence("buffer.List", err)
		}
		for i := skip; i < len(infos); i++ {
			cur.pos++
			s.scanned++
			if s.q.Type != "" && infos[i].Type != s.q.Type {
				continue
			}
			m, err := s.b.fromTask(ctx, infos[i])
			if err != nil {
				return false, err
			}
			s.out.Items = append(s.out.Items, *m)
			if len(s.out.Items) == s.q.Limit {
				s.out.NextCursor = cur.String()
				return true, nil
			}
		}
		if len(infos) < listChunk {
			return false, nil
		}
	}
}
