package taskimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskimport"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/oldqueuetest"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secret = "old-api-secret"

func qid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// oldTask is a task as the seed's API answers it.
func oldTask(n int, status string, extra map[string]any) map[string]any {
	t := map[string]any{
		"queue_id": qid(n), "encounter_id": fmt.Sprintf("enc-%d", n), "status": status, "priority": "NORMAL",
		"attempts": 0, "max_attempts": 3, "payload": map[string]any{"n": n},
		"parsed_payload": nil, "error_message": nil,
		"created_at": "2026-11-21T08:00:00Z", "updated_at": "2026-11-21T08:30:00Z",
	}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

// fill gives the server 5 PENDING, 2 PROCESSING, 3 ERROR (one a dead
// letter, one spent) and 2 DONE tasks.
func fill(t *testing.T, s *oldqueuetest.Server) {
	for n := 1; n <= 5; n++ {
		prio := []string{"LOW", "NORMAL", "HIGH"}[n%3]
		s.Add(t, oldTask(n, "PENDING", map[string]any{"priority": prio}))
	}
	s.Add(t, oldTask(6, "PROCESSING", map[string]any{"worker_id": "vm-1", "attempts": 1}),
		oldTask(7, "PROCESSING", map[string]any{"worker_id": "vm-2"}),
		oldTask(8, "ERROR", map[string]any{"attempts": 1, "error_message": "portal timeout",
			"history": []any{map[string]any{"at": "2026-11-21T08:10:00Z", "from": "PROCESSING", "to": "ERROR", "by": "vm-3", "reason": "portal timeout"}}}),
		oldTask(9, "ERROR", map[string]any{"attempts": 3, "error_message": contracts.DLQErrorMessage, "parsed_payload": map[string]any{"dlq": true}}),
		oldTask(10, "ERROR", map[string]any{"attempts": 3, "error_message": "gave up"}),
		oldTask(11, "DONE", map[string]any{"parsed_payload": map[string]any{"experityActions": []any{"a"}}}),
		oldTask(12, "DONE", nil))
}

type env struct {
	ctx   context.Context
	l     *tasks.Ledger
	srv   *oldqueuetest.Server
	clock *clocktest.Clock
	http  *http.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	db := redistest.New(t)
	l, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	srv := oldqueuetest.New(t, secret)
	fill(t, srv)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{ctx: context.Background(), l: l, srv: srv, clock: clocktest.New(time.Now()), http: &http.Client{Transport: tr}}
}

// opts signs with a fake clock that the wait for the next second moves,
// so version-1 signatures never repeat and no test sleeps.
func (e *env) opts(mod ...func(*taskimport.Options)) taskimport.Options {
	o := taskimport.Options{From: e.srv.URL, Secret: []byte(secret), PageSize: 2, HTTPClient: e.http, Now: e.clock.Now,
		Sleep: func(_ context.Context, d time.Duration) error { e.clock.Advance(d); return nil }}
	for _, m := range mod {
		m(&o)
	}
	return o
}

func (e *env) run(t *testing.T, o taskimport.Options) (*taskimport.Summary, string, error) {
	t.Helper()
	var out bytes.Buffer
	sum, err := taskimport.Run(e.ctx, e.l, o, &out)
	return sum, out.String(), err
}

func (e *env) stats(t *testing.T) contracts.StatsResponse {
	t.Helper()
	st, err := e.l.Stats(e.ctx)
	require.NoError(t, err)
	st.Success = false
	return st
}

func TestImportRunsIdempotently(t *testing.T) {
	e := setup(t)
	sum, out, err := e.run(t, e.opts())
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 10, Imported: 10}, sum.Total(), out)
	require.Equal(t, taskimport.Counts{Fetched: 5, Imported: 5}, *sum.ByStatus[contracts.StatusPending])
	require.Equal(t, 3+1+2, sum.Pages, "PENDING in 3 pages of 2, PROCESSING in 1, ERROR in 2")
	require.Contains(t, out, "imported     "+qid(6)+" PROCESSING -> PENDING HIGH; was PROCESSING under worker vm-1")
	require.Contains(t, out, qid(10)+" ERROR      -> ERROR (dead letter)")
	require.NotContains(t, out, qid(11), "DONE is not imported by default")
	for _, r := range e.srv.Requests() {
		require.Contains(t, r, "history=true")
	}
	require.Empty(t, e.srv.Refused(), "no signature refused, none replayed")

	st := e.stats(t)
	require.Equal(t, 7, st.ByStatus[contracts.StatusPending])
	require.Equal(t, 3, st.ByStatus[contracts.StatusError])
	require.Equal(t, 2, st.DLQ)
	require.Equal(t, 0, st.ByStatus[contracts.StatusDone])

	errTask, err := e.l.Get(e.ctx, qid(8))
	require.NoError(t, err)
	require.Equal(t, 1, errTask.Attempts)
	require.Equal(t, []string{"vm-3", "import"}, []string{errTask.History[0].By, errTask.History[1].By})
	require.Contains(t, errTask.History[1].Reason, "imported from "+e.srv.URL)

	// A second run changes nothing and says so.
	sum, out, err = e.run(t, e.opts())
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 10, Unchanged: 10}, sum.Total(), out)
	require.Equal(t, st, e.stats(t))

	// DONE on request: the rest unchanged.
	sum, out, err = e.run(t, e.opts(func(o *taskimport.Options) {
		o.Statuses = append(taskimport.DefaultStatuses(), contracts.StatusDone)
	}))
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 12, Imported: 2, Unchanged: 10}, sum.Total(), out)
	done, err := e.l.Get(e.ctx, qid(11))
	require.NoError(t, err)
	require.JSONEq(t, `{"experityActions":["a"]}`, string(done.ParsedPayload))
}

func TestImportDryRunChangesNothing(t *testing.T) {
	e := setup(t)
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) { o.DryRun = true }))
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 10, Imported: 10}, sum.Total())
	require.Contains(t, out, "dry run: nothing is written")
	require.Contains(t, out, "would-import "+qid(1))
	require.Equal(t, 0, e.stats(t).Total, "a dry run writes nothing")

	var table bytes.Buffer
	sum.Write(&table)
	require.Contains(t, table.String(), "dry run: nothing was written")
	require.Contains(t, table.String(), "not requested (--include-done)")
}

func TestImportPageFailingMidwayStopsAndResumes(t *testing.T) {
	e := setup(t)
	e.srv.FailPage("PENDING", 2, -1)
	sum, out, err := e.run(t, e.opts())
	var stop *taskimport.StopError
	require.ErrorAs(t, err, &stop, out)
	require.Equal(t, contracts.StatusPending, stop.Status)
	require.Equal(t, 2, stop.Page)
	require.Equal(t, 2, stop.Imported)
	require.Contains(t, err.Error(), "HTTP 500")
	require.Contains(t, err.Error(), "run the same command again to resume")
	require.Equal(t, taskimport.Counts{Fetched: 2, Imported: 2}, sum.Total(), "the page before the failure is imported")
	require.Equal(t, 2, e.stats(t).Total)

	e.srv.ClearFailures()
	sum, out, err = e.run(t, e.opts())
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 10, Imported: 8, Unchanged: 2}, sum.Total(), out)
	require.Equal(t, 10, e.stats(t).Total)
}

func TestImportedPendingTaskIsClaimedAndAcked(t *testing.T) {
	e := setup(t)
	_, out, err := e.run(t, e.opts(func(o *taskimport.Options) { o.Statuses = []contracts.Status{contracts.StatusPending} }))
	require.NoError(t, err, out)
	// fill's priorities: 1 NORMAL, 2 HIGH, 3 LOW, 4 NORMAL, 5 HIGH. Claimed
	// HIGH first, then NORMAL, then LOW, each in import order.
	var order []string
	for {
		got, err := e.l.Claim(e.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 1})
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		order = append(order, got[0].QueueID)
		ack, err := e.l.Ack(e.ctx, contracts.AckRequest{QueueID: got[0].QueueID, EncounterID: got[0].EncounterID,
			WorkerID: "w", ExperityActions: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.Equal(t, contracts.StatusDone, ack.Task.Status)
	}
	require.Equal(t, []string{qid(2), qid(5), qid(1), qid(4), qid(3)}, order)
}

func TestImportReportsConflicts(t *testing.T) {
	e := setup(t)
	_, out, err := e.run(t, e.opts())
	require.NoError(t, err, out)
	// The source changed a task since, and holds a second open task for
	// an encounter that has one.
	e.srv.Replace(t, qid(2), oldTask(2, "PENDING", map[string]any{"attempts": 2}))
	e.srv.Add(t, oldTask(20, "PENDING", map[string]any{"encounter_id": "enc-1"}))
	before := e.stats(t)
	sum, out, err := e.run(t, e.opts())
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 11, Unchanged: 9, Conflict: 2}, sum.Total(), out)
	require.Contains(t, out, "conflict     "+qid(2)+" PENDING    queue_id was imported before from different content")
	require.Contains(t, out, "conflict     "+qid(20)+" PENDING    another task of the same encounter is open: "+qid(1))
	require.Equal(t, before, e.stats(t))
	got, err := e.l.Get(e.ctx, qid(2))
	require.NoError(t, err)
	require.Equal(t, 0, got.Attempts, "not overwritten")
}

func TestImportOffsetPagingAndLenientShapes(t *testing.T) {
	e := setup(t)
	e.srv.SetPaging(oldqueuetest.Offset)
	e.srv.Add(t, map[string]any{"queue_id": strings.ToUpper(qid(30)), "encounter_id": 30, "status": "PENDING",
		"attempts": "1", "payload": `{"as":"text"}`, "parsed_payload": `{"note":"stored as text"}`,
		"created_at": "2026-11-21 07:00:00", "updated_at": 1795000000},
		map[string]any{"queue_id": qid(31), "encounter_id": "e31", "status": "PENDING", "created_at": "yesterday"},
		map[string]any{"queue_id": "x", "status": "PENDING", "encounter_id": "e32"})
	sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) { o.Statuses = []contracts.Status{contracts.StatusPending} }))
	require.NoError(t, err, out)
	require.Equal(t, taskimport.Counts{Fetched: 8, Imported: 6, Invalid: 2}, sum.Total(), out)
	require.Contains(t, out, "unreadable timestamp")
	require.Contains(t, out, "queue_id must be a UUID")
	got, err := e.l.Get(e.ctx, qid(30))
	require.NoError(t, err)
	require.Equal(t, "30", got.EncounterID)
	require.Equal(t, 1, got.Attempts)
	require.JSONEq(t, `"{\"as\":\"text\"}"`, string(got.Payload), "payload kept as given")
	require.JSONEq(t, `{"note":"stored as text"}`, string(got.ParsedPayload))
	require.Equal(t, time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC), got.CreatedAt)
}

func TestImportSignatureChecks(t *testing.T) {
	e := setup(t)
	_, _, err := e.run(t, e.opts(func(o *taskimport.Options) { o.Secret = []byte("wrong") }))
	require.ErrorContains(t, err, "HTTP 401")
	require.ErrorContains(t, err, "check the secret")
	require.Equal(t, []string{"signature mismatch"}, e.srv.Refused())

	// Version 1 signs only the timestamp: a run's requests are a second
	// apart, and its first one waits for the second after the run began
	// (a run just before may have signed in that one). Version 2 signs
	// each page's target: only that first wait.
	for v, want := range map[int]int{1: 6, 2: 1} {
		waits := 0
		sum, out, err := e.run(t, e.opts(func(o *taskimport.Options) {
			o.SignatureVersion = v
			o.Sleep = func(_ context.Context, d time.Duration) error { waits++; e.clock.Advance(d); return nil }
		}))
		require.NoError(t, err, out)
		require.Equal(t, 10, sum.Total().Fetched)
		require.Equal(t, want, waits, "version %d", v)
	}
}

func TestMainFlagsAndExitCodes(t *testing.T) {
	e := setup(t)
	open := func(context.Context) (*tasks.Ledger, func(), error) { return e.l, func() {}, nil }
	run := func(getenv map[string]string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := taskimport.Main(e.ctx, args, func(k string) string { return getenv[k] }, &out, &errb, open)
		return code, out.String(), errb.String()
	}
	code, out, _ := run(nil, "-help")
	require.Equal(t, taskimport.ExitOK, code)
	require.Contains(t, out, "--from URL")
	code, _, errs := run(nil, "--from", e.srv.URL)
	require.Equal(t, taskimport.ExitUsage, code)
	require.Contains(t, errs, "no HMAC secret")
	code, _, errs = run(map[string]string{"HMAC_SECRET": secret}, "--from", e.srv.URL, "--status", "PENDING,WAITING")
	require.Equal(t, taskimport.ExitUsage, code)
	require.Contains(t, errs, "WAITING")
	code, _, errs = run(map[string]string{"HMAC_SECRET": secret}, "--from", "ftp://x")
	require.Equal(t, taskimport.ExitUsage, code, errs)
	code, _, _ = run(nil, "--from", e.srv.URL, "--secret", secret, "--page-size", "0")
	require.Equal(t, taskimport.ExitUsage, code)

	// IMPORT_HMAC_SECRET wins over HMAC_SECRET; an invalid task exits 3.
	e.srv.Add(t, map[string]any{"queue_id": "nope", "status": "ERROR", "encounter_id": "e"})
	code, out, errs = run(map[string]string{"HMAC_SECRET": "flowgate's own", "IMPORT_HMAC_SECRET": secret},
		"--from", e.srv.URL, "--page-size", "100", "--signature-version", "2", "--status", "error")
	require.Equal(t, taskimport.ExitConflicts, code, out+errs)
	require.Contains(t, errs, "0 conflicts and 1 invalid")
	require.Contains(t, out, "STATUS")
	require.Contains(t, out, "ERROR       4        3         0          0         1        0")

	failing := func(context.Context) (*tasks.Ledger, func(), error) {
		return nil, nil, errors.New("redis (url) not reachable")
	}
	var errb bytes.Buffer
	code = taskimport.Main(e.ctx, []string{"--from", e.srv.URL}, func(string) string { return secret }, &bytes.Buffer{}, &errb, failing)
	require.Equal(t, taskimport.ExitStopped, code)
	require.Contains(t, errb.String(), "not reachable")
}

// A --from that redirects (to the real old API, on another port) is an
// error naming the redirect, whatever the client passed in would do: the
// signed request never reaches the other host, and no task is recorded as
// coming from --from while another host answered.
func TestImportRefusesRedirects(t *testing.T) {
	e := setup(t)
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, e.srv.URL+r.URL.RequestURI(), status)
		}))
		follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		sum, _, err := e.run(t, e.opts(func(o *taskimport.Options) { o.From, o.HTTPClient = front.URL, follows }))
		front.Close()
		require.ErrorContains(t, err, fmt.Sprintf("HTTP %d, a redirect to %q: not followed", status, e.srv.URL+"/queue?history=true&limit=2&status=PENDING"))
		require.Zero(t, sum.Total().Fetched)
		require.NoError(t, follows.CheckRedirect(nil, nil), "the caller's client is left as it was")
	}
	require.Empty(t, e.srv.Requests(), "a signed request followed a redirect")
	require.Zero(t, e.stats(t).Total)
}

// A page that announces more than the cap (1 GiB here, the cap is 256 MiB)
// is refused from its Content-Length, before its body is read.
func TestImportRefusesAnnouncedHugePage(t *testing.T) {
	e := setup(t)
	var sent atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		w.WriteHeader(http.StatusOK)
		n, _ := io.WriteString(w, "[")
		sent.Add(int64(n))
		spaces := []byte(strings.Repeat(" ", 64<<10))
		for r.Context().Err() == nil {
			n, err := w.Write(spaces)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	start := time.Now()
	_, _, err := e.run(t, e.opts(func(o *taskimport.Options) { o.From = huge.URL }))
	require.ErrorContains(t, err, "announces 1073741824 bytes (Content-Length), over 268435456")
	require.Less(t, time.Since(start), 10*time.Second)
	require.Less(t, sent.Load(), int64(64<<20), "the body was read toward the cap")
}
