package tasks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Get returns one task with its history (oldest event first).
func (l *Ledger) Get(ctx context.Context, id string) (contracts.Task, error) {
	const op = "tasks.Get"
	id, err := queueID(op, id)
	if err != nil {
		return contracts.Task{}, err
	}
	t, err := l.loadOne(ctx, op, id, "", true)
	if err != nil {
		return contracts.Task{}, err
	}
	if t == nil {
		return contracts.Task{}, &contracts.Error{Code: contracts.CodeNotFound, Op: op, Message: "no task with queue_id " + id,
			Details: map[string]any{"queue_id": id}}
	}
	return *t, nil
}

// loadOne reads task id (nil when missing) wherever lookup finds it.
func (l *Ledger) loadOne(ctx context.Context, op, id, enc string, history bool) (*contracts.Task, error) {
	var t *contracts.Task
	err := l.lookup(ctx, op, id, enc, func(sh int) (bool, error) {
		tasks, err := l.load(ctx, op, sh, []string{id}, history)
		if err != nil {
			return false, err
		}
		t = tasks[0]
		return t != nil, nil
	})
	return t, err
}

// load reads tasks of shard sh (nil where missing) in one pipeline.
func (l *Ledger) load(ctx context.Context, op string, sh int, ids []string, history bool) ([]*contracts.Task, error) {
	pipe := l.rdb.Pipeline()
	hashes := make([]*redis.MapStringStringCmd, len(ids))
	hists := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		hashes[i] = pipe.HGetAll(ctx, l.ks[sh].task(id))
		if history {
			hists[i] = pipe.LRange(ctx, l.ks[sh].history(id), 0, -1)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, storeError(op, err)
	}
	out := make([]*contracts.Task, len(ids))
	for i := range ids {
		f := hashes[i].Val()
		if len(f) == 0 {
			continue
		}
		t := taskFromFields(f)
		if history {
			t.History = decodeHistory(hists[i].Val())
		}
		out[i] = &t
	}
	return out, nil
}

// Page is one page of List.
type Page struct {
	Tasks      []contracts.Task
	NextCursor string // "" on the last page

	scores []int64 // each task's index score (a sharded List merges by it)
	bytes  int     // the tasks' size (taskBytes), against ListMaxBytes
}

// ListMaxBytes bounds a List page by its tasks' size as well as their
// number: a page closes, with a next cursor, once its tasks' payloads,
// actions, error messages and history reach it (one task at least). A
// limit of 1,000 tasks of 1 MiB payloads each was a gigabyte held and
// written for one request.
const ListMaxBytes = 8 << 20

// List reads tasks in batches of at most listBatchFirst (100 entries
// with a residual filter), then of about as many as the page's room in
// bytes holds at the average size so far, at most listBatchMax: a batch of
// large tasks stays near the page's budget.
const (
	listBatchFirst = 32
	listBatchMax   = 256
)

// full reports whether p holds limit tasks or ListMaxBytes of them.
func (p *Page) full(limit int) bool { return len(p.Tasks) >= limit || p.bytes >= ListMaxBytes }

// taskBytes is about how many bytes t takes in a page's answer.
func taskBytes(t *contracts.Task) int {
	n := 256 + len(t.Payload) + len(t.ParsedPayload) + len(t.ErrorMessage)
	for _, e := range t.History {
		n += 96 + len(e.Reason) + len(e.By)
	}
	return n
}

// List answers GET /queue. All given filters apply. It walks the most
// selective index — queue_id (at most one task), dlq, encounter_id,
// PENDING+priority (claim order), status, or all tasks — in creation order
// (claim order for PENDING+priority), filtering the rest. Pages are at most
// q.Limit (default 100, ≤ 1000) tasks; one call examines at most
// max(10×limit, 1000) index entries, so a page with a residual filter may
// hold fewer tasks and still have a next cursor. Cursors are opaque and
// belong to the index they came from. Tasks carry history only with
// q.History.
func (l *Ledger) List(ctx context.Context, q contracts.ListQuery) (Page, error) {
	const op = "tasks.List"
	f, err := l.listFilter(op, q)
	if err != nil {
		return Page{}, err
	}
	if q.QueueID != "" {
		return l.listByID(ctx, op, q.QueueID, q.History, f)
	}
	sh := 0
	if f.encounter != "" {
		sh = l.set.Of(f.encounter)
	}
	index, residual := l.listIndex(f)
	if l.set.N() > 1 && f.encounter == "" {
		return l.listSharded(ctx, op, q, index, residual, f)
	}
	after, err := cursorAfter(op, q.Cursor, index)
	if err != nil {
		return Page{}, err
	}
	page := Page{Tasks: []contracts.Task{}}
	s := listScan{op: op, shard: sh, index: index, residual: residual, history: q.History, filter: f}
	after, more, err := l.scan(ctx, s, after, &page)
	if err != nil {
		return Page{}, err
	}
	if more {
		page.NextCursor = encodeCursor(cursor{Index: index, After: after})
	}
	return page, nil
}

// listByID is List by queue_id: at most that task, if it matches f.
func (l *Ledger) listByID(ctx context.Context, op, rawID string, history bool, f listFilter) (Page, error) {
	id, err := queueID(op, rawID)
	if err != nil {
		return Page{}, err
	}
	t, err := l.loadOne(ctx, op, id, f.encounter, history)
	if err != nil {
		return Page{}, err
	}
	page := Page{Tasks: []contracts.Task{}}
	if t != nil && f.match(*t) {
		page.Tasks = append(page.Tasks, *t)
	}
	return page, nil
}

// cursorAfter is the index score a List cursor continues after (-1 without
// a cursor); a cursor of another index is invalid.
func cursorAfter(op, raw, index string) (int64, error) {
	if raw == "" {
		return -1, nil
	}
	c, err := decodeCursor(raw)
	if err != nil || c.Index != index {
		return 0, invalid(op, "cursor", "cursor is not valid for this query")
	}
	return c.After, nil
}

// listScan is one List walk over an index.
type listScan struct {
	op       string
	shard    int
	index    string // the index walked (listIndex's name)
	residual bool   // filters remain to apply to what the index yields
	history  bool   // load the tasks' history
	filter   listFilter
}

// scan appends to page the tasks of the index after score after that match
// the filter, in index order, until the page is full, the index is
// exhausted or max(10×limit, 1000) entries were examined. It returns the
// score of the last entry examined and whether the index may hold more
// (then the page gets a next cursor).
func (l *Ledger) scan(ctx context.Context, s listScan, after int64, page *Page) (int64, bool, error) {
	limit := s.filter.limit
	for budget := max(10*limit, 1000); budget > 0; {
		batch := limit - len(page.Tasks)
		if s.residual {
			batch = max(batch, 100)
		}
		if n := len(page.Tasks); n == 0 {
			first := listBatchFirst
			if s.residual {
				first = 100
			}
			batch = min(batch, first)
		} else {
			room := (ListMaxBytes - page.bytes) / max(page.bytes/n, 1)
			batch = min(batch, listBatchMax, max(room+1, 1))
		}
		batch = min(batch, budget)
		entries, tasks, err := l.scanBatch(ctx, s, after, batch)
		if err != nil {
			return after, false, err
		}
		budget -= len(entries)
		var consumed int
		after, consumed = s.filter.collect(page, entries, tasks, after)
		if len(entries) < batch && consumed == len(entries) { // index exhausted
			return after, false, nil
		}
		if page.full(limit) {
			break
		}
	}
	return after, true, nil
}

// scanBatch reads up to n index entries after score after and their tasks
// (nil where missing).
func (l *Ledger) scanBatch(ctx context.Context, s listScan, after int64, n int) ([]redis.Z, []*contracts.Task, error) {
	entries, err := l.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: l.ks[s.shard].index(s.index), ByScore: true,
		Start: "(" + strconv.FormatInt(after, 10), Stop: "+inf", Count: int64(n)}).Result()
	if err != nil {
		return nil, nil, storeError(s.op, err)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i], _ = e.Member.(string)
	}
	tasks, err := l.load(ctx, s.op, s.shard, ids, s.history)
	if err != nil {
		return nil, nil, err
	}
	return entries, tasks, nil
}

type listFilter struct {
	status    contracts.Status
	priority  contracts.Priority
	encounter string
	dlq       bool
	limit     int
}

func (l *Ledger) listFilter(op string, q contracts.ListQuery) (listFilter, error) {
	f := listFilter{encounter: q.EncounterID, dlq: q.DLQ, limit: q.Limit}
	var err error
	if q.Status != "" {
		if f.status, err = contracts.ParseStatus(string(q.Status)); err != nil {
			return f, err
		}
	}
	if q.Priority != "" {
		if f.priority, err = contracts.ParsePriority(string(q.Priority), ""); err != nil {
			return f, err
		}
	}
	if err := label(op, "encounter_id", q.EncounterID, false); err != nil {
		return f, err
	}
	if f.limit == 0 {
		f.limit = contracts.DefaultListLimit
	}
	if f.limit < 1 || f.limit > contracts.MaxListLimit {
		return f, invalid(op, "limit", "limit must be 1..%d", contracts.MaxListLimit)
	}
	return f, nil
}

// listIndex picks the index to walk and reports whether filters remain to
// apply to what it yields (a page may then need more entries than tasks).
// The name is also the index's key after a shard's base (keys.index).
func (l *Ledger) listIndex(f listFilter) (name string, residual bool) {
	set := 0
	for _, on := range []bool{f.status != "", f.priority != "", f.encounter != "", f.dlq} {
		if on {
			set++
		}
	}
	switch {
	case f.dlq:
		covered := 1
		if f.status == contracts.StatusError {
			covered++
		}
		return "dlq", set > covered
	case f.encounter != "":
		return "enc:" + f.encounter, set > 1
	case f.status == contracts.StatusPending && f.priority != "":
		return "pending:" + string(f.priority), set > 2
	case f.status != "":
		return "status:" + string(f.status), set > 1
	}
	return "all", set > 0
}

// collect appends the tasks that match f to page, in index order, until the
// page holds f.limit tasks. It returns the score of the last entry examined
// (after if none was) and how many entries were examined.
func (f listFilter) collect(page *Page, entries []redis.Z, tasks []*contracts.Task, after int64) (int64, int) {
	consumed := 0
	for i, t := range tasks {
		after, consumed = int64(entries[i].Score), i+1
		if t != nil && f.match(*t) {
			page.Tasks = append(page.Tasks, *t)
			page.scores = append(page.scores, after)
			page.bytes += taskBytes(t)
			if page.full(f.limit) {
				break
			}
		}
	}
	return after, consumed
}

func (f listFilter) match(t contracts.Task) bool {
	switch {
	case f.status != "" && t.Status != f.status,
		f.priority != "" && t.Priority != f.priority,
		f.encounter != "" && t.EncounterID != f.encounter,
		f.dlq && !t.InDLQ():
		return false
	}
	return true
}

type cursor struct {
	Index string `json:"i"`
	After int64  `json:"a"`
	// Shards is a sharded List's position in each shard (After unused):
	// the score walked past, -1 before the first, shardDone when walked to
	// the end.
	Shards []int64 `json:"s,omitempty"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.Index == "" || c.After < 0 {
		return c, errors.New("empty cursor")
	}
	return c, nil
}
