package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// listAll pages through q and returns every queue_id.
func listAll(t *testing.T, b *bundle, q contracts.ListQuery) (ids []string, pages int) {
	t.Helper()
	for {
		page, err := b.l.List(b.ctx, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Tasks), max(q.Limit, 1))
		for _, task := range page.Tasks {
			ids = append(ids, task.QueueID)
		}
		pages++
		if page.NextCursor == "" {
			return ids, pages
		}
		q.Cursor = page.NextCursor
		require.Less(t, pages, 1000, "pagination does not end")
	}
}

func TestListPaginationAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var all []string
	byPrio := map[contracts.Priority][]string{}
	for i := 0; i < 60; i++ {
		p := contracts.AllPriorities()[i%3]
		res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i%20), Priority: p})
		require.NoError(t, err)
		id := res.Task.QueueID
		if i >= 20 { // encounters 0..19 repeat: duplicates, not new tasks
			require.True(t, res.Duplicate)
			continue
		}
		all = append(all, id)
		byPrio[p] = append(byPrio[p], id)
	}
	b.clock.Advance(time.Second)
	// claim 5 (HIGH first), fail one of them
	claimed, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm", Limit: 5})
	require.NoError(t, err)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: claimed[0].QueueID})
	require.NoError(t, err)

	ids, pages := listAll(t, b, contracts.ListQuery{Limit: 3})
	require.Equal(t, all, ids, "unfiltered: every task once, in creation order")
	require.Equal(t, 7, pages)

	ids, _ = listAll(t, b, contracts.ListQuery{Status: "processing", Limit: 2})
	require.Len(t, ids, 4)
	ids, _ = listAll(t, b, contracts.ListQuery{Status: contracts.StatusError})
	require.Equal(t, []string{claimed[0].QueueID}, ids)

	ids, _ = listAll(t, b, contracts.ListQuery{Status: contracts.StatusPending, Priority: contracts.PriorityLow, Limit: 4})
	require.Equal(t, byPrio[contracts.PriorityLow], ids, "PENDING + priority: claim order")

	ids, _ = listAll(t, b, contracts.ListQuery{Priority: contracts.PriorityHigh, Limit: 2}) // residual filter over all
	require.ElementsMatch(t, byPrio[contracts.PriorityHigh], ids)

	ids, _ = listAll(t, b, contracts.ListQuery{EncounterID: "enc-7", Limit: 10})
	require.Equal(t, []string{all[7]}, ids)
	ids, _ = listAll(t, b, contracts.ListQuery{EncounterID: "enc-7", Status: contracts.StatusDone})
	require.Empty(t, ids)

	page, err := b.l.List(b.ctx, contracts.ListQuery{QueueID: all[3], History: true})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1)
	require.NotEmpty(t, page.Tasks[0].History)
	page, err = b.l.List(b.ctx, contracts.ListQuery{QueueID: all[3], Status: contracts.StatusDone})
	require.NoError(t, err)
	require.Empty(t, page.Tasks)
	require.NotNil(t, page.Tasks)
	page, err = b.l.List(b.ctx, contracts.ListQuery{Limit: 1})
	require.NoError(t, err)
	require.Nil(t, page.Tasks[0].History, "no history unless asked")

	// A cursor belongs to its query's index.
	page, err = b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusPending, Limit: 1})
	require.NoError(t, err)
	_, err = b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusDone, Cursor: page.NextCursor})
	requireCode(t, err, contracts.CodeInvalid)
	_, err = b.l.List(context.Background(), contracts.ListQuery{Status: "bogus"})
	requireCode(t, err, contracts.CodeInvalid)
}

// A sparse residual filter returns short pages with a cursor rather than
// scanning without bound.
func TestListBoundedScan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reqs := make([]contracts.CreateTaskRequest, 500)
	for i := range reqs {
		reqs[i] = contracts.CreateTaskRequest{Priority: contracts.PriorityNormal, Payload: json.RawMessage(`{"n":1}`)}
	}
	for i := 0; i < 5; i++ {
		_, err := b.l.CreateBatch(b.ctx, reqs)
		require.NoError(t, err)
	}
	last := b.create(t, "", contracts.PriorityLow)
	page, err := b.l.List(b.ctx, contracts.ListQuery{Priority: contracts.PriorityLow, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page.Tasks)
	require.NotEmpty(t, page.NextCursor, "scan budget (1000 entries) spent: more may follow")
	ids, pages := listAll(t, b, contracts.ListQuery{Priority: contracts.PriorityLow, Limit: 10})
	require.Equal(t, []string{last.QueueID}, ids)
	require.Equal(t, 3, pages)
}

// A page is bounded by its tasks' size too (tasks.ListMaxBytes): a
// limit of 1,000 over tasks of ~0.9 MB payloads held and wrote every one
// of them for one request (54 MB for 60 tasks, 2.5 GB resident for ten
// such requests at once). The page closes with a next cursor, and paging
// yields every task once, in order; on two shards too.
func TestListPageBoundedBySize(t *testing.T) {
	t.Parallel()
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 900_000) + `"}`)
	for _, shards := range []int{1, 2} {
		b := setup(t, func(c *tasks.Config) { c.Shards = shards })
		var want []string
		for i := range 24 {
			res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("big-%d", i), Payload: big})
			require.NoError(t, err)
			want = append(want, res.Task.QueueID)
		}
		page, err := b.l.List(b.ctx, contracts.ListQuery{Limit: contracts.MaxListLimit})
		require.NoError(t, err)
		require.NotEmpty(t, page.NextCursor, "shards %d", shards)
		size := 0
		for _, task := range page.Tasks {
			size += len(task.Payload) + len(task.ParsedPayload)
		}
		require.Less(t, size, tasks.ListMaxBytes+2*len(big)+1024, "shards %d: the page stops at its budget", shards)
		require.Greater(t, len(page.Tasks), 1)
		ids, pages := listAll(t, b, contracts.ListQuery{Limit: contracts.MaxListLimit})
		require.ElementsMatch(t, want, ids, "shards %d: every task once", shards)
		require.Len(t, ids, len(want))
		require.GreaterOrEqual(t, pages, 3, "shards %d", shards)
		if shards == 1 {
			require.Equal(t, want, ids, "in creation order")
		}
	}
}
