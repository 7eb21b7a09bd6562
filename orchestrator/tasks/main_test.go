package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the start of every test's clock.
var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

type bundle struct {
	ctx   context.Context
	l     *tasks.Ledger
	rdb   redis.UniversalClient
	clock *clocktest.Clock
}

// setup gives a test a ledger on a private Redis database with a clock
// starting at t0; the indexes are checked against the task hashes when the
// test ends.
func setup(t testing.TB, mod ...func(*tasks.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	return setupOn(t, db.Client, mod...)
}

func setupOn(t testing.TB, rdb redis.UniversalClient, mod ...func(*tasks.Config)) *bundle {
	t.Helper()
	clk := clocktest.New(t0)
	cfg := tasks.Config{KeyPrefix: "test", Now: clk.Now}
	for _, m := range mod {
		m(&cfg)
	}
	l, err := tasks.New(rdb, cfg)
	require.NoError(t, err)
	b := &bundle{ctx: context.Background(), l: l, rdb: rdb, clock: clk}
	t.Cleanup(func() {
		if !t.Failed() {
			require.NoError(t, l.CheckIndexes(context.Background()), "indexes disagree with the tasks")
		}
	})
	return b
}

func (b *bundle) create(t testing.TB, enc string, prio contracts.Priority) contracts.Task {
	t.Helper()
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: enc, Priority: prio,
		Payload: json.RawMessage(fmt.Sprintf(`{"encounter":%q}`, enc))})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	return res.Task
}

func (b *bundle) claimOne(t testing.TB, worker string) contracts.Task {
	t.Helper()
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: worker})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

func (b *bundle) get(t testing.TB, id string) contracts.Task {
	t.Helper()
	task, err := b.l.Get(b.ctx, id)
	require.NoError(t, err)
	return task
}

// requireCode asserts err is a *contracts.Error with code.
func requireCode(t testing.TB, err error, code contracts.Code) {
	t.Helper()
	require.Error(t, err)
	var e *contracts.Error
	require.True(t, errors.As(err, &e), "want *contracts.Error, got %T %v", err, err)
	require.Equal(t, code, e.Code, "error: %v", err)
}

// codeError is requireCode returning the *contracts.Error, for tests that
// check its details.
func codeError(t testing.TB, err error, code contracts.Code) *contracts.Error {
	t.Helper()
	requireCode(t, err, code)
	var e *contracts.Error
	require.ErrorAs(t, err, &e)
	return e
}

// requireConflict asserts a conflict that reports the current status.
func requireConflict(t testing.TB, err error, id string, current contracts.Status) {
	t.Helper()
	e := codeError(t, err, contracts.CodeConflict)
	require.Equal(t, string(current), e.Details["current_status"], "details: %v", e.Details)
	require.Equal(t, id, e.Details["queue_id"])
	require.Equal(t, 409, e.Code.HTTPStatus())
}

// conflictError is requireConflict returning the *contracts.Error, for
// tests that check more of it.
func conflictError(t testing.TB, err error, id string, current contracts.Status) *contracts.Error {
	t.Helper()
	requireConflict(t, err, id, current)
	return codeError(t, err, contracts.CodeConflict)
}

func parsed(t testing.TB, task contracts.Task) map[string]any {
	t.Helper()
	if task.ParsedPayload == nil {
		return nil
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(task.ParsedPayload, &m))
	return m
}

func statusesOf(history []contracts.TaskEvent) []string {
	out := make([]string, len(history))
	for i, e := range history {
		out[i] = string(e.From) + ">" + string(e.To)
	}
	return out
}
