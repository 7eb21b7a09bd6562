package asynqrt_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/dlq"
	"github.com/flowgate/flowgate/test/redistest"
)

type bundle struct {
	rt  *asynqrt.Runtime
	db  *redistest.DB
	reg *prometheus.Registry
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func redistestNew(tb testing.TB) *redistest.DB { return redistest.New(tb) }

func setup(t *testing.T, mutate func(*asynqrt.Config)) bundle {
	t.Helper()
	db := redistest.New(t)
	reg := prometheus.NewRegistry()
	cfg := asynqrt.Config{
		ConnOpt: db.AsynqOpt(), Redis: db.Client, Registerer: reg,
		Concurrency: 20, ShutdownTimeout: time.Second,
		Logger: discard(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	rt, err := asynqrt.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { rt.Shutdown(); _ = rt.Close() })
	return bundle{rt: rt, db: db, reg: reg}
}

// waitFor fails t unless cond holds within timeout. cond runs off the test
// goroutine (require.Eventually): it must not fail t itself.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 20*time.Millisecond, "timed out after %s waiting for %s", timeout, what)
}

// All 10,050 final failures reach the durable record although asynq's
// archive keeps only 10,000.
func TestDeadLettersOutliveArchiveTrim(t *testing.T) {
	if testing.Short() {
		t.Skip("enqueues 10,050 tasks")
	}
	const n = 10050
	b := setup(t, nil)
	b.rt.Handle("test:fail", asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		return errors.New("always fails")
	}), nil)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		_, err := b.rt.Client.Enqueue(asynq.NewTask("test:fail", []byte(fmt.Sprintf(`{"i":%d}`, i))),
			asynq.MaxRetry(0), asynq.Queue(asynqrt.QueueLow))
		require.NoError(t, err)
	}
	require.NoError(t, b.rt.Start())
	var sizeErr error
	waitFor(t, 3*time.Minute, "10,050 dead letters", func() bool {
		size, err := b.rt.DLQ.Size(ctx)
		if err != nil {
			sizeErr = err
			return true
		}
		return size[asynqrt.QueueLow] == n
	})
	require.NoError(t, sizeErr)
	info, err := b.rt.Inspector.GetQueueInfo(asynqrt.QueueLow)
	require.NoError(t, err)
	require.LessOrEqual(t, info.Archived, dlq.ArchiveMax, "asynq trims its archive")
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(`
# HELP flowgate_dlq_size Dead letters in the durable record.
# TYPE flowgate_dlq_size gauge
flowgate_dlq_size{queue="critical"} 0
flowgate_dlq_size{queue="default"} 0
flowgate_dlq_size{queue="high"} 0
flowgate_dlq_size{queue="low"} 10050
`), "flowgate_dlq_size"))

	rec, ok, err := b.rt.DLQ.Get(ctx, asynqrt.QueueLow, mustFirstID(t, b))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "test:fail", rec.Type)
	require.Equal(t, "always fails", rec.Error)
	require.Equal(t, dlq.SourceErrorHandler, rec.Source)
}

func mustFirstID(t *testing.T, b bundle) string {
	t.Helper()
	recs, err := b.rt.DLQ.List(context.Background(), asynqrt.QueueLow, 0, 1)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	return recs[0].TaskID
}

// A task archived without passing the ErrorHandler (crash recovery, or by
// hand) is copied by the reconciler; running it twice records nothing new.
func TestReconcilerCopiesArchivedTasks(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 25; i++ {
		info, err := b.rt.Client.Enqueue(asynq.NewTask("test:orphan", nil), asynq.Queue(asynqrt.QueueDefault))
		require.NoError(t, err)
		require.NoError(t, b.rt.Inspector.ArchiveTask(asynqrt.QueueDefault, info.ID))
		ids = append(ids, info.ID)
	}
	r := b.rt.Reconciler()
	r.PageSize = 10 // several pages
	res, err := r.Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, 25, res.Recorded)
	for _, id := range ids {
		ok, err := b.rt.DLQ.Has(ctx, asynqrt.QueueDefault, id)
		require.NoError(t, err)
		require.True(t, ok, id)
	}
	res, err = r.Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, res.Recorded)
	require.Equal(t, 25, res.Scanned)
	require.InDelta(t, 25.0/dlq.ArchiveMax, res.Fill[asynqrt.QueueDefault], 1e-9)
}

// The error handler's record is not overwritten by the reconciler's poorer one.
func TestReconcilerKeepsErrorHandlerRecord(t *testing.T) {
	b := setup(t, nil)
	b.rt.Handle("test:fail", asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		return errors.New("specific cause")
	}), nil)
	info, err := b.rt.Client.Enqueue(asynq.NewTask("test:fail", nil), asynq.MaxRetry(0))
	require.NoError(t, err)
	require.NoError(t, b.rt.Start())
	ctx := context.Background()
	waitFor(t, 10*time.Second, "archived", func() bool {
		ti, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueDefault, info.ID)
		return err == nil && ti.State == asynq.TaskStateArchived
	})
	_, err = b.rt.Reconciler().Reconcile(ctx)
	require.NoError(t, err)
	rec, ok, err := b.rt.DLQ.Get(ctx, asynqrt.QueueDefault, info.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, dlq.SourceErrorHandler, rec.Source)
}

// A per-type policy decides the delay; Defer re-runs without burning an
// attempt.
func TestRetryPolicyAndDefer(t *testing.T) {
	var runs atomic.Int32
	b := setup(t, nil)
	b.rt.Handle("test:defer", asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		if runs.Add(1) < 4 {
			return asynqrt.Defer(10*time.Millisecond, "limiter says wait")
		}
		return nil
	}), nil)
	b.rt.Handle("test:retry", asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		return errors.New("transient")
	}), asynqrt.RetryPolicyFunc(func(int, error, *asynq.Task) time.Duration { return time.Hour }))
	info, err := b.rt.Client.Enqueue(asynq.NewTask("test:defer", nil), asynq.MaxRetry(1), asynq.Retention(time.Hour))
	require.NoError(t, err)
	rinfo, err := b.rt.Client.Enqueue(asynq.NewTask("test:retry", nil), asynq.MaxRetry(3))
	require.NoError(t, err)
	require.NoError(t, b.rt.Start())
	waitFor(t, 60*time.Second, "deferred task completes", func() bool {
		ti, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueDefault, info.ID)
		return err == nil && ti.State == asynq.TaskStateCompleted
	})
	ti, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueDefault, info.ID)
	require.NoError(t, err)
	require.Equal(t, 0, ti.Retried, "deferrals must not count as attempts")
	waitFor(t, 10*time.Second, "retry scheduled", func() bool {
		ti, err := b.rt.Inspector.GetTaskInfo(asynqrt.QueueDefault, rinfo.ID)
		return err == nil && ti.State == asynq.TaskStateRetry
	})
	ti, err = b.rt.Inspector.GetTaskInfo(asynqrt.QueueDefault, rinfo.ID)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), ti.NextProcessAt, time.Minute)
}

func TestExponential(t *testing.T) {
	p := asynqrt.Exponential{Base: 10 * time.Second, Max: 300 * time.Second}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for n, w := range want {
		require.Equal(t, w*time.Second, p.RetryDelay(n, nil, nil), "n=%d", n)
	}
}

func TestConfigValidation(t *testing.T) {
	db := redistest.New(t)
	_, err := asynqrt.New(asynqrt.Config{Redis: db.Client})
	require.ErrorContains(t, err, "ConnOpt")
	_, err = asynqrt.New(asynqrt.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Servers: -1})
	require.ErrorContains(t, err, "Servers")
	_, err = asynqrt.New(asynqrt.Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Queues: map[string]int{"x": 0}})
	require.ErrorContains(t, err, "weight")
}

func TestIsDeferral(t *testing.T) {
	require.True(t, asynqrt.IsDeferral(asynqrt.Defer(300*time.Millisecond, "cloud9 limiter: SetAppointment").Error()))
	require.False(t, asynqrt.IsDeferral("cloud9: RATE_LIMIT (code 8): Too many requests"))
	require.False(t, asynqrt.IsDeferral(""))
}
