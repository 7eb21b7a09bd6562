package taskjobs_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"

	"github.com/flowgate/flowgate/test/metrictest"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 starts every test's ledger clock. Asynq keeps real time: only ledger
// timestamps and the sweeps' now are fake.
var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

type bundle struct {
	ctx   context.Context
	db    *redistest.DB
	clock *clocktest.Clock
	l     *tasks.Ledger
	rt    *asynqrt.Runtime
	d     *taskjobs.Dispatcher
	reg   *prometheus.Registry
}

type options struct {
	backoff       asynqrt.RetryPolicy
	start         bool // start the runtime's dequeuers
	maxRecoveries int  // the ledger's MaxRecoveries (0: its default)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setup gives a test a ledger, an Asynq runtime and a registered Dispatcher
// on a private Redis database, all sharing one fake clock and one registry.
func setup(t *testing.T, o options) *bundle {
	t.Helper()
	db := redistest.New(t)
	clk := clocktest.New(t0)
	l, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test", Now: clk.Now, MaxRecoveries: o.maxRecoveries})
	require.NoError(t, err)
	b := &bundle{ctx: context.Background(), db: db, clock: clk, l: l}
	b.rt, b.d, b.reg = newRuntime(t, db, l, clk, o)
	return b
}

// newRuntime starts a runtime and Dispatcher (its own registry) on db, as a
// flowgate process would; several may share one database.
func newRuntime(t *testing.T, db *redistest.DB, l *tasks.Ledger, clk *clocktest.Clock, o options) (*asynqrt.Runtime, *taskjobs.Dispatcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	rt, err := asynqrt.New(asynqrt.Config{
		ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: 1, Concurrency: 4,
		ShutdownTimeout: time.Second, Logger: discard(), Registerer: reg,
	})
	require.NoError(t, err)
	t.Cleanup(func() { rt.Shutdown(); _ = rt.Close() })
	d, err := taskjobs.New(taskjobs.Config{Ledger: l, Runtime: rt, Backoff: o.backoff, Logger: discard(),
		Registerer: reg, Now: clk.Now})
	require.NoError(t, err)
	d.Register()
	if o.start {
		require.NoError(t, rt.Start())
	}
	return rt, d, reg
}

func (b *bundle) create(t *testing.T, maxAttempts int, prio contracts.Priority) contracts.Task {
	t.Helper()
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-" + uuid.NewString(), Priority: prio, MaxAttempts: maxAttempts,
		Payload: json.RawMessage(`{"visit":1}`)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	return res.Task
}

func (b *bundle) claim(t *testing.T, id string) contracts.Task {
	t.Helper()
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: contracts.MaxClaimLimit})
	require.NoError(t, err)
	for _, task := range got {
		if task.QueueID == id {
			return task
		}
	}
	t.Fatalf("task %s was not claimed (got %d tasks)", id, len(got))
	return contracts.Task{}
}

// failOnce claims task id and fails it.
func (b *bundle) failOnce(t *testing.T, id string) tasks.FailResult {
	t.Helper()
	b.claim(t, id)
	b.clock.Advance(time.Second)
	res, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "portal timed out"})
	require.NoError(t, err)
	return res
}

func (b *bundle) get(t *testing.T, id string) contracts.Task {
	t.Helper()
	task, err := b.l.Get(b.ctx, id)
	require.NoError(t, err)
	return task
}

// waitFor polls cond every 20 ms until it holds, failing t after timeout.
// It is require.Eventually run on the test goroutine: the conditions read
// through b.get, which fails t on an error, and FailNow must not be called
// from another goroutine.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// asynqWait bounds waits for a task Asynq must run: a scheduled task is
// moved to pending by a forwarder that looks every second
// (asynqrt.Config.DelayedCheck), slower under load.
const asynqWait = 15 * time.Second

// metric returns the value of one series of reg (0 when absent); labels are
// name, value pairs.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return metrictest.Get(t, reg, name, want)
}

func requireCode(t *testing.T, err error, code contracts.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, contracts.ErrorCode(err), "error: %v", err)
}
