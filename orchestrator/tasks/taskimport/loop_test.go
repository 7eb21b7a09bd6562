package taskimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskimport"
	"github.com/flowgate/flowgate/test/redistest"
)

// pager is an old API whose pages answer(cursor) decides: the tasks' numbers
// and the next cursor ("" on the last page).
func pager(t *testing.T, answer func(cursor string) ([]int, string)) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		nums, next := answer(r.URL.Query().Get("cursor"))
		ts := []any{}
		for _, n := range nums {
			ts = append(ts, oldTask(n, r.URL.Query().Get("status"), nil))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "tasks": ts, "next_cursor": next})
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// A cursor that comes back (a→b→a) stops the run at once, with the pages
// before it imported.
func TestImportStopsOnACursorLoop(t *testing.T) {
	e := setup(t)
	srv, hits := pager(t, func(c string) ([]int, string) {
		switch c {
		case "":
			return []int{1, 2}, "a"
		case "a":
			return []int{3, 4}, "b"
		}
		return []int{5, 6}, "a"
	})
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) { o.From, o.Statuses = srv.URL, []contracts.Status{contracts.StatusPending} }))
	var stop *taskimport.StopError
	require.ErrorAs(t, err, &stop, out)
	require.ErrorContains(t, err, `the API answered next_cursor "a" on page 1 and again on page 3: a cursor loop`)
	require.Equal(t, 4, stop.Page)
	require.EqualValues(t, 3, hits.Load())
	require.Equal(t, taskimport.Counts{Fetched: 6, Imported: 6}, sum.Total())
}

// Fresh cursors over the same tasks stop at the first page that brings no
// new queue_id.
func TestImportStopsWhenAPageBringsNothingNew(t *testing.T) {
	e := setup(t)
	var n atomic.Int64
	srv, hits := pager(t, func(string) ([]int, string) { return []int{1, 2}, fmt.Sprintf("c%d", n.Add(1)) })
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) { o.From, o.Statuses = srv.URL, []contracts.Status{contracts.StatusPending} }))
	require.ErrorContains(t, err, `page 2 (after next_cursor "c1") brought no queue_id that the earlier pages of PENDING did not: the API is looping`, out)
	require.EqualValues(t, 2, hits.Load())
	require.Equal(t, taskimport.Counts{Fetched: 4, Imported: 2, Unchanged: 2}, sum.Total())
}

// --max-pages bounds a run that keeps getting new pages; the flag is 10,000
// by default.
func TestImportPageCap(t *testing.T) {
	e := setup(t)
	srv, hits := pager(t, func(c string) ([]int, string) {
		var k int
		_, _ = fmt.Sscanf(c, "p%d", &k)
		return []int{100 + k}, fmt.Sprintf("p%d", k+1)
	})
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) {
		o.From, o.Statuses, o.MaxPages = srv.URL, []contracts.Status{contracts.StatusPending}, 5
	}))
	require.ErrorContains(t, err, "stopped after 5 pages (--max-pages)", out)
	require.EqualValues(t, 5, hits.Load())
	require.Equal(t, 5, sum.Pages)
	require.Equal(t, 5, sum.Total().Imported)

	var stdout, stderr strings.Builder
	code := taskimport.Main(context.Background(), []string{"-help"}, func(string) string { return "" }, &stdout, &stderr, nil)
	require.Equal(t, taskimport.ExitOK, code)
	require.Contains(t, stdout.String(), "-max-pages int")
	require.Contains(t, stdout.String(), "(default 10000)")
}

// loseAnswer runs the n-th script call (FCALL, EVALSHA or EVAL) and then answers
// it with a timeout, as a Redis whose reply was lost would.
type loseAnswer struct {
	n, calls atomic.Int64
}

func (h *loseAnswer) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseAnswer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *loseAnswer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); (name == "fcall" || name == "evalsha" || name == "eval") && err == nil && h.calls.Add(1) == h.n.Load() {
			return fmt.Errorf("read tcp: i/o timeout: %w", os.ErrDeadlineExceeded)
		}
		return err
	}
}

// A Redis timeout on the second batch of a page (250 tasks: batches of
// 100, 100, 50) stops the run; the batch may have been written, so the
// summary and the error say "up to" with it: 100 certainly, up to 200.
func TestImportUncertainBatchSaysUpTo(t *testing.T) {
	e := setup(t)
	db := redistest.New(t)
	hook := &loseAnswer{}
	hook.n.Store(2)
	db.Client.AddHook(hook)
	l, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	e.l = l
	var nums []int
	for i := range 250 {
		nums = append(nums, 1000+i)
	}
	srv, _ := pager(t, func(string) ([]int, string) { return nums, "" })
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) {
		o.From, o.Statuses, o.PageSize = srv.URL, []contracts.Status{contracts.StatusPending}, 250
	}))
	var stop *taskimport.StopError
	require.ErrorAs(t, err, &stop, out)
	require.Equal(t, 100, stop.Imported)
	require.Equal(t, 100, stop.Uncertain)
	require.ErrorContains(t, err, "up to 200 tasks were imported before it (100 certainly; the store did not answer for a batch of 100")
	require.Equal(t, 100, sum.Total().Imported)
	require.Equal(t, 100, sum.Uncertain)
	var table strings.Builder
	sum.Write(&table)
	require.Contains(t, table.String(), "imported: 100 certainly, up to 200 in all")
	require.Equal(t, 200, e.stats(t).Total, "the batch whose answer was lost was written")
}
