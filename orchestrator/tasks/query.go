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
	tasks, err := l.load(ctx, op, []string{id}, true)
	if err != nil {
		return contracts.Task{}, err
	}
	if tasks[0] == nil {
		return contracts.Task{}, &contracts.Error{Code: contracts.CodeNotFound, Op: op, Message: "no task with queue_id " + id,
			Details: map[string]any{"queue_id": id}}
	}
	return *tasks[0], nil
}

// load reads tasks (nil where missing) in one pipeline.
func (l *Ledger) load(ctx context.Context, op string, ids []string, history bool) ([]*contracts.Task, error) {
	pipe := l.rdb.Pipeline()
	hashes := make([]*redis.MapStringStringCmd, len(ids))
	hists := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		hashes[i] = pipe.HGetAll(ctx, l.k.task(id))
		if history {
			hists[i] = pipe.LRange(ctx, l.k.history(id), 0, -1)
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
	page := Page{Tasks: []contracts.Task{}}
	if q.QueueID != "" {
		id, err := queueID(op, q.QueueID)
		if err != nil {
			return Page{}, err
		}
		tasks, err := l.load(ctx, op, []string{id}, q.History)
		if err != nil {
			return Page{}, err
		}
		if tasks[0] != nil && f.match(*tasks[0]) {
			page.Tasks = append(page.Tasks, *tasks[0])
		}
		return page, nil
	}
	index, key, residual := l.listIndex(f)
	after := int64(-1)
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil || c.Index != index {
			return Page{}, invalid(op, "cursor", "cursor is not valid for this query")
		}
		after = c.After
	}
	for budget := max(10*f.limit, 1000); budget > 0; {
		batch := f.limit - len(page.Tasks)
		if residual {
			batch = max(batch, 100)
		}
		batch = min(batch, budget)
		entries, err := l.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, ByScore: true,
			Start: "(" + strconv.FormatInt(after, 10), Stop: "+inf", Count: int64(batch)}).Result()
		if err != nil {
			return Page{}, storeError(op, err)
		}
		budget -= len(entries)
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i], _ = e.Member.(string)
		}
		tasks, err := l.load(ctx, op, ids, q.History)
		if err != nil {
			return Page{}, err
		}
		consumed := 0
		for i, t := range tasks {
			after, consumed = int64(entries[i].Score), i+1
			if t != nil && f.match(*t) {
				page.Tasks = append(page.Tasks, *t)
				if len(page.Tasks) == f.limit {
					break
				}
			}
		}
		if len(entries) < batch && consumed == len(entries) { // index exhausted
			return page, nil
		}
		if len(page.Tasks) == f.limit {
			break
		}
	}
	page.NextCursor = encodeCursor(cursor{Index: index, After: after})
	return page, nil
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
func (l *Ledger) listIndex(f listFilter) (name, key string, residual bool) {
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
		return "dlq", l.k.dlq(), set > covered
	case f.encounter != "":
		return "enc:" + f.encounter, l.k.encounter(f.encounter), set > 1
	case f.status == contracts.StatusPending && f.priority != "":
		return "pending:" + string(f.priority), l.k.pending(f.priority), set > 2
	case f.status != "":
		return "status:" + string(f.status), l.k.status(f.status), set > 1
	}
	return "all", l.k.all(), set > 0
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

// Stats counts tasks per status, pending tasks per priority and dead
// letters, from the indexes in one MULTI (a consistent snapshot). Every
// status and priority is present in the maps.
func (l *Ledger) Stats(ctx context.Context) (contracts.StatsResponse, error) {
	const op = "tasks.Stats"
	statuses, prios := contracts.AllStatuses(), contracts.AllPriorities()
	sc := make([]*redis.IntCmd, len(statuses))
	pc := make([]*redis.IntCmd, len(prios))
	var dlq *redis.IntCmd
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range statuses {
			sc[i] = p.ZCard(ctx, l.k.status(s))
		}
		for i, pr := range prios {
			pc[i] = p.ZCard(ctx, l.k.pending(pr))
		}
		dlq = p.ZCard(ctx, l.k.dlq())
		return nil
	})
	if err != nil {
		return contracts.StatsResponse{}, storeError(op, err)
	}
	st := contracts.StatsResponse{Success: true, ByStatus: map[contracts.Status]int{},
		PendingByPriority: map[contracts.Priority]int{}, DLQ: int(dlq.Val())}
	for i, s := range statuses {
		st.ByStatus[s] = int(sc[i].Val())
		st.Total += int(sc[i].Val())
	}
	for i, pr := range prios {
		st.PendingByPriority[pr] = int(pc[i].Val())
	}
	st.RetryWaiting = st.ByStatus[contracts.StatusError] - st.DLQ
	return st, nil
}
