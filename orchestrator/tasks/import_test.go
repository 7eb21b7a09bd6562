package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

const importSource = "https://old.example/api"

func qid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// oldQueue is a source queue of every kind the import handles.
func oldQueue() []tasks.ImportTask {
	at := t0.Add(-2 * time.Hour)
	return []tasks.ImportTask{
		{QueueID: qid(1), EncounterID: "enc-1", Status: contracts.StatusPending, Priority: contracts.PriorityLow,
			Payload: json.RawMessage(`{"n": 1, "big": 12345678901234567890, "list": []}`), CreatedAt: at},
		{QueueID: qid(2), EncounterID: "enc-2", Status: contracts.StatusPending, Priority: contracts.PriorityNormal,
			Payload: json.RawMessage(`{"n":2}`), CreatedAt: at.Add(time.Minute),
			History: []contracts.TaskEvent{{At: at.Add(time.Minute), To: contracts.StatusPending, By: "api", Reason: "created"}}},
		{QueueID: qid(3), EncounterID: "enc-3", Status: contracts.StatusProcessing, Priority: contracts.PriorityNormal,
			Attempts: 1, WorkerID: "vm-7", Payload: json.RawMessage(`{"n":3}`), CreatedAt: at, UpdatedAt: at.Add(time.Hour)},
		{QueueID: qid(4), EncounterID: "enc-4", Status: contracts.StatusError, Attempts: 1, ErrorMessage: "portal timeout",
			Payload: json.RawMessage(`{"n":4}`), CreatedAt: at},
		{QueueID: qid(5), EncounterID: "enc-5", Status: contracts.StatusError, Attempts: 3, MaxAttempts: 3,
			ErrorMessage: contracts.DLQErrorMessage, ParsedPayload: json.RawMessage(`{"dlq":true,"note":"x"}`),
			Payload: json.RawMessage(`{"n":5}`), CreatedAt: at},
		{QueueID: qid(6), EncounterID: "enc-6", Status: contracts.StatusError, Attempts: 3, ErrorMessage: "still failing",
			Payload: json.RawMessage(`{"n":6}`), CreatedAt: at},
		{QueueID: qid(7), EncounterID: "enc-7", Status: contracts.StatusDone, Attempts: 0,
			ParsedPayload: json.RawMessage(`{"experityActions":{"done":[1, 2]}}`), Payload: json.RawMessage(`{"n":7}`), CreatedAt: at},
		{QueueID: strings.ToUpper(qid(8)), EncounterID: "enc-8", Status: contracts.StatusPending, Priority: "high",
			Payload: json.RawMessage(`{"n":8}`), CreatedAt: at},
	}
}

func outcomes(res []tasks.ImportResult) map[string]tasks.ImportOutcome {
	m := map[string]tasks.ImportOutcome{}
	for _, r := range res {
		m[r.QueueID] = r.Outcome
	}
	return m
}

func TestImportEveryStatus(t *testing.T) {
	b := setup(t)
	res, err := b.l.NewImporter(importSource, false).Import(b.ctx, oldQueue())
	require.NoError(t, err)
	require.Len(t, res, 8)
	for _, r := range res {
		require.Equal(t, tasks.ImportImported, r.Outcome, "%+v", r)
	}

	low := b.get(t, qid(1))
	require.Equal(t, contracts.StatusPending, low.Status)
	require.Equal(t, contracts.PriorityLow, low.Priority)
	require.JSONEq(t, `{"n": 1, "big": 12345678901234567890, "list": []}`, string(low.Payload))
	require.Contains(t, string(low.Payload), "12345678901234567890", "payload stored as given")
	require.Equal(t, t0.Add(-2*time.Hour), low.CreatedAt)
	require.Equal(t, t0, low.UpdatedAt)
	require.Equal(t, contracts.DefaultMaxAttempts, low.MaxAttempts)
	require.Len(t, low.History, 1)
	require.Equal(t, "import", low.History[0].By)
	require.Contains(t, low.History[0].Reason, "imported from "+importSource)

	normal := b.get(t, qid(2))
	require.Equal(t, []string{">PENDING", ">PENDING"}, statusesOf(normal.History), "source history, then the import")
	require.Equal(t, "api", normal.History[0].By)
	require.Equal(t, t0.Add(-2*time.Hour+time.Minute), normal.History[0].At)

	proc := b.get(t, qid(3))
	require.Equal(t, contracts.StatusPending, proc.Status)
	require.Equal(t, contracts.PriorityHigh, proc.Priority)
	require.Equal(t, 1, proc.Attempts)
	require.Empty(t, proc.WorkerID)
	require.Contains(t, proc.History[0].Reason, "was PROCESSING under worker vm-7")
	require.Contains(t, proc.History[0].Reason, "last updated "+t0.Add(-time.Hour).Format(time.RFC3339))

	retry := b.get(t, qid(4))
	require.Equal(t, contracts.StatusError, retry.Status)
	require.False(t, retry.InDLQ())
	require.Equal(t, 1, retry.Attempts)
	require.Equal(t, "portal timeout", retry.ErrorMessage)

	flagged := b.get(t, qid(5))
	require.True(t, flagged.InDLQ())
	require.Equal(t, map[string]any{"dlq": true, "note": "x"}, parsed(t, flagged))
	require.Equal(t, contracts.DLQErrorMessage, flagged.ErrorMessage)

	spent := b.get(t, qid(6))
	require.True(t, spent.InDLQ(), "attempts reached max_attempts: a dead letter by the ledger's rule")
	require.Equal(t, contracts.DLQErrorMessage, spent.ErrorMessage)
	require.Contains(t, spent.History[0].Reason, "still failing")

	done := b.get(t, qid(7))
	require.Equal(t, contracts.StatusDone, done.Status)
	require.Equal(t, map[string]any{"experityActions": map[string]any{"done": []any{1.0, 2.0}}}, parsed(t, done))

	upper := b.get(t, qid(8))
	require.Equal(t, contracts.PriorityHigh, upper.Priority, "queue_id and priority in any case")

	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 4, st.ByStatus[contracts.StatusPending])
	require.Equal(t, 3, st.ByStatus[contracts.StatusError])
	require.Equal(t, 2, st.DLQ)
	require.Equal(t, 1, st.RetryWaiting)

	// A second import changes nothing: every key and value is as it was.
	before := dump(t, b)
	again, err := b.l.NewImporter(importSource, false).Import(b.ctx, oldQueue())
	require.NoError(t, err)
	for _, r := range again {
		require.Equal(t, tasks.ImportUnchanged, r.Outcome, "%+v", r)
	}
	require.Equal(t, before, dump(t, b))
}

// dump is every key of the ledger with its value, for "nothing changed".
func dump(t *testing.T, b *bundle) map[string]string {
	t.Helper()
	out := map[string]string{}
	keys, err := b.rdb.Keys(b.ctx, b.l.KeyBase()+"*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		typ, err := b.rdb.Type(b.ctx, k).Result()
		require.NoError(t, err)
		var v any
		switch typ {
		case "hash":
			v, err = b.rdb.HGetAll(b.ctx, k).Result()
		case "zset":
			v, err = b.rdb.ZRangeWithScores(b.ctx, k, 0, -1).Result()
		case "list":
			v, err = b.rdb.LRange(b.ctx, k, 0, -1).Result()
		case "string":
			v, err = b.rdb.Get(b.ctx, k).Result()
		default:
			v, err = b.rdb.Dump(b.ctx, k).Result()
		}
		require.NoError(t, err)
		out[k] = fmt.Sprint(v)
	}
	return out
}

func TestImportedTasksAreClaimedInPriorityOrderAndAcked(t *testing.T) {
	b := setup(t)
	existing := b.create(t, "enc-native", contracts.PriorityNormal) // pending before the import
	_, err := b.l.NewImporter(importSource, false).Import(b.ctx, oldQueue())
	require.NoError(t, err)

	var order []string
	for {
		got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w1", Limit: 10})
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		for _, g := range got {
			order = append(order, g.QueueID)
		}
	}
	// HIGH (the requeued PROCESSING task, then the HIGH one, in import
	// order), NORMAL (the one pending before the import first), LOW.
	require.Equal(t, []string{qid(3), qid(8), existing.QueueID, qid(2), qid(1)}, order)

	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: qid(1), EncounterID: "enc-1", WorkerID: "w1",
		ExperityActions: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, ack.Task.Status)
}

func TestImportedErrorsFollowTheLedgersRules(t *testing.T) {
	b := setup(t)
	_, err := b.l.NewImporter(importSource, false).Import(b.ctx, oldQueue())
	require.NoError(t, err)

	// The ERROR task awaiting a retry had no requeue scheduled: the
	// retry-overdue sweep takes it once it is overdue, counted from the import.
	res, err := b.l.RetryOverdue(b.ctx, t0.Add(5*time.Minute), 10*time.Minute)
	require.NoError(t, err)
	require.Empty(t, res.Requeued)
	res, err = b.l.RetryOverdue(b.ctx, t0.Add(11*time.Minute), 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{qid(4)}, res.Requeued)
	retried := b.get(t, qid(4))
	require.Equal(t, contracts.StatusPending, retried.Status)
	require.Equal(t, contracts.PriorityHigh, retried.Priority)
	require.Equal(t, 1, retried.Attempts)

	// A dead letter is replayed like any other.
	replayed, err := b.l.Replay(b.ctx, qid(6), contracts.RequeueRequest{})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusPending, replayed.Status)
	require.Equal(t, 0, replayed.Attempts)

	// The SLA sweep sees the source's created_at: the LOW task has waited
	// two hours already.
	sla, err := b.l.PromoteOverdue(b.ctx, t0, 30*time.Minute)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{qid(1), qid(2)}, sla.Promoted)
}

func TestImportDryRunWritesNothing(t *testing.T) {
	b := setup(t)
	before := dump(t, b)
	src := oldQueue()
	// The same task twice and a second open task of one encounter: a dry
	// run must answer as the real import would, though it writes nothing.
	dupe := src[0]
	second := src[1]
	second.QueueID, second.Payload = qid(9), json.RawMessage(`{"n":9}`)
	changed := src[1]
	changed.Attempts = 2
	src = append(src, dupe, second, changed)

	im := b.l.NewImporter(importSource, true)
	require.True(t, im.DryRun())
	dry, err := im.Import(b.ctx, src)
	require.NoError(t, err)
	require.Equal(t, before, dump(t, b), "a dry run writes nothing")

	wet, err := b.l.NewImporter(importSource, false).Import(b.ctx, src)
	require.NoError(t, err)
	require.Equal(t, wet, dry)
	require.Equal(t, tasks.ImportUnchanged, wet[8].Outcome)
	require.Equal(t, tasks.ImportConflict, wet[9].Outcome)
	require.Equal(t, qid(2), wet[9].OpenQueueID)
	require.Equal(t, tasks.ImportConflict, wet[10].Outcome)
	require.Contains(t, wet[10].Reason, "different content")

	// Against the imported ledger a dry run reports what a rerun would.
	again, err := b.l.NewImporter(importSource, true).Import(b.ctx, oldQueue())
	require.NoError(t, err)
	for _, r := range again {
		require.Equal(t, tasks.ImportUnchanged, r.Outcome)
	}
}

func TestImportConflictsAndInvalidTasksWriteNothing(t *testing.T) {
	b := setup(t)
	native := b.create(t, "enc-open", contracts.PriorityNormal)
	_, err := b.l.NewImporter(importSource, false).Import(b.ctx, oldQueue()[:1])
	require.NoError(t, err)
	before := dump(t, b)

	changed := oldQueue()[0]
	changed.Payload = json.RawMessage(`{"n":"other"}`)
	res, err := b.l.NewImporter(importSource, false).Import(b.ctx, []tasks.ImportTask{
		changed, // imported before with other content
		{QueueID: native.QueueID, EncounterID: "enc-open", Status: contracts.StatusPending, Payload: native.Payload}, // flowgate's own
		{QueueID: qid(20), EncounterID: "enc-open", Status: contracts.StatusError, Attempts: 1},                      // the encounter is open
		{QueueID: "not-a-uuid", EncounterID: "e", Status: contracts.StatusPending},
		{QueueID: qid(21), EncounterID: "e", Status: "WAITING"},
		{QueueID: qid(22), Status: contracts.StatusPending},
		{QueueID: qid(23), EncounterID: "e", Status: contracts.StatusPending, Payload: json.RawMessage(`{`)},
		{QueueID: qid(24), EncounterID: "e", Status: contracts.StatusPending, Priority: "URGENT"},
		{QueueID: qid(25), EncounterID: "e", Status: contracts.StatusPending, ParsedPayload: json.RawMessage(`[1]`)},
	})
	require.NoError(t, err)
	got := make([]string, len(res))
	for i, r := range res {
		got[i] = string(r.Outcome)
	}
	require.Equal(t, []string{"conflict", "conflict", "conflict", "invalid", "invalid", "invalid", "invalid", "invalid", "invalid"}, got)
	require.Contains(t, res[0].Reason, "different content")
	require.Equal(t, contracts.StatusPending, res[0].Status)
	require.Contains(t, res[1].Reason, "no import wrote")
	require.Equal(t, native.QueueID, res[2].OpenQueueID)
	require.Contains(t, res[3].Reason, "UUID")
	require.Equal(t, before, dump(t, b), "conflicts and invalid tasks write nothing")

	// A closed task of an open encounter is imported: DONE and dead letters
	// do not count against the one-open-task rule.
	res, err = b.l.NewImporter(importSource, false).Import(b.ctx, []tasks.ImportTask{
		{QueueID: qid(30), EncounterID: "enc-open", Status: contracts.StatusDone},
		{QueueID: qid(31), EncounterID: "enc-open", Status: contracts.StatusError, Attempts: 9},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]tasks.ImportOutcome{qid(30): tasks.ImportImported, qid(31): tasks.ImportImported}, outcomes(res))
}

func TestImportManyBatches(t *testing.T) {
	b := setup(t)
	src := make([]tasks.ImportTask, 2*tasks.MaxImportBatch+7)
	for i := range src {
		src[i] = tasks.ImportTask{QueueID: qid(1000 + i), EncounterID: fmt.Sprintf("e%d", i), Status: contracts.StatusPending}
	}
	res, err := b.l.NewImporter(importSource, false).Import(b.ctx, src)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, tasks.ImportImported, r.Outcome)
		require.Equal(t, qid(1000+i), r.QueueID)
	}
	page, err := b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusPending, Priority: contracts.PriorityNormal, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, page.Tasks, len(src))
	ids := make([]string, len(page.Tasks))
	for i, p := range page.Tasks {
		ids[i] = p.QueueID
	}
	require.True(t, sort.StringsAreSorted(ids), "claim order is import order")
}

func TestImportStoreDown(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer dead.Close()
	l, err := tasks.New(dead, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = l.NewImporter(importSource, false).Import(ctx, oldQueue())
	requireCode(t, err, contracts.CodeUnavailable)
}
