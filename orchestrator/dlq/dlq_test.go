package dlq_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/dlq"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/metrictest"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

const (
	recKey = "flowgate:dlq:{critical}:rec"
	idxKey = "flowgate:dlq:{critical}:idx"
)

func TestRecordIsIdempotent(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	clk := clocktest.New(t0)
	s := dlq.NewStore(db.Client, "", []string{"critical", "default"}, clk.Now)

	first := dlq.Record{TaskID: "t1", Queue: "critical", Type: "booking:create", Payload: []byte(`{"a":1}`),
		Error: "cloud9: timeout", Retried: 5, MaxRetry: 5, Source: dlq.SourceErrorHandler}
	isNew, err := s.Record(ctx, first, false)
	require.NoError(t, err)
	require.True(t, isNew)

	got, ok, err := s.Get(ctx, "critical", "t1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "cloud9: timeout", got.Error)
	require.Equal(t, []byte(`{"a":1}`), got.Payload)
	require.True(t, got.Recorded.Equal(t0), "recorded at the injected clock")
	require.True(t, got.FailedAt.Equal(t0), "no failed_at: the recording time")
	score, err := db.Client.ZScore(ctx, idxKey, "t1").Result()
	require.NoError(t, err)
	require.Equal(t, float64(t0.UnixMilli()), score)

	// The same task again without overwrite (the reconciler): kept as is.
	clk.Advance(time.Minute)
	again := first
	again.Error, again.Source = "archived", dlq.SourceReconciler
	isNew, err = s.Record(ctx, again, false)
	require.NoError(t, err)
	require.False(t, isNew)
	got, _, err = s.Get(ctx, "critical", "t1")
	require.NoError(t, err)
	require.Equal(t, "cloud9: timeout", got.Error)
	require.Equal(t, dlq.SourceErrorHandler, got.Source)
	require.True(t, got.Recorded.Equal(t0))

	// With overwrite (the error handler knows the latest error): replaced,
	// still not new, still one record.
	latest := first
	latest.Error = "cloud9: slot not available"
	latest.FailedAt = t0.Add(2 * time.Minute)
	isNew, err = s.Record(ctx, latest, true)
	require.NoError(t, err)
	require.False(t, isNew)
	got, _, err = s.Get(ctx, "critical", "t1")
	require.NoError(t, err)
	require.Equal(t, "cloud9: slot not available", got.Error)
	require.Equal(t, int64(1), db.Client.HLen(ctx, recKey).Val())
	require.Equal(t, int64(1), db.Client.ZCard(ctx, idxKey).Val())
	score, err = db.Client.ZScore(ctx, idxKey, "t1").Result()
	require.NoError(t, err)
	require.Equal(t, float64(latest.FailedAt.UnixMilli()), score, "the index follows the overwrite")

	// A batch counts only the new ones, duplicates within it included.
	batch := []dlq.Record{
		{TaskID: "t1", Queue: "critical", Error: "dup of a recorded one"},
		{TaskID: "t2", Queue: "critical", FailedAt: t0.Add(3 * time.Minute)},
		{TaskID: "t3", Queue: "critical", FailedAt: t0.Add(4 * time.Minute)},
		{TaskID: "t2", Queue: "critical", Error: "dup within the batch"},
		{TaskID: "d1", Queue: "default"},
	}
	added, err := s.RecordMany(ctx, batch)
	require.NoError(t, err)
	require.Equal(t, 3, added)
	added, err = s.RecordMany(ctx, batch)
	require.NoError(t, err)
	require.Zero(t, added, "re-recording a batch adds nothing")
	added, err = s.RecordMany(ctx, nil)
	require.NoError(t, err)
	require.Zero(t, added)
	got, _, err = s.Get(ctx, "critical", "t2")
	require.NoError(t, err)
	require.Empty(t, got.Error, "the first of two copies in a batch wins")

	sizes, err := s.Size(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"critical": 3, "default": 1}, sizes)

	list, err := s.List(ctx, "critical", 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"t3", "t2", "t1"}, ids(list), "newest failure first")
	list, err = s.List(ctx, "critical", 1, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, ids(list))

	removed, err := s.Delete(ctx, "critical", "t2")
	require.NoError(t, err)
	require.True(t, removed)
	removed, err = s.Delete(ctx, "critical", "t2")
	require.NoError(t, err)
	require.False(t, removed)
	has, err := s.Has(ctx, "critical", "t2")
	require.NoError(t, err)
	require.False(t, has)
	_, ok, err = s.Get(ctx, "critical", "t2")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, int64(2), db.Client.ZCard(ctx, idxKey).Val())
}

func TestGetRefusesACorruptRecord(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	s := dlq.NewStore(db.Client, "", []string{"critical"}, nil)
	require.NoError(t, db.Client.HSet(ctx, recKey, "bad", "{not json").Err())
	_, _, err := s.Get(ctx, "critical", "bad")
	require.ErrorContains(t, err, "dlq: decode critical/bad")
}

// TestReconcilerOverTrimmedArchive: asynq's archive has dropped tasks the
// record still holds (fewer archived than recorded), and holds tasks the
// error handler never saw; the reconciler copies exactly those, keeps every
// record, and is idempotent.
func TestReconcilerOverTrimmedArchive(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	clk := clocktest.New(t0)
	s := dlq.NewStore(db.Client, "", []string{"critical", "never_used"}, clk.Now)
	reg := prometheus.NewRegistry()
	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	m, err := dlq.NewMetrics(reg, s, log)
	require.NoError(t, err)

	client := asynq.NewClient(db.AsynqOpt())
	t.Cleanup(func() { _ = client.Close() })
	insp := asynq.NewInspector(db.AsynqOpt())
	t.Cleanup(func() { _ = insp.Close() })
	var archived []string
	for i := range 5 {
		info, err := client.Enqueue(asynq.NewTask("booking:create", fmt.Appendf(nil, `{"n":%d}`, i)), asynq.Queue("critical"))
		require.NoError(t, err)
		require.NoError(t, insp.ArchiveTask("critical", info.ID))
		archived = append(archived, info.ID)
	}
	// The error handler saw the first two (with their error) ...
	for _, id := range archived[:2] {
		isNew, err := s.Record(ctx, dlq.Record{TaskID: id, Queue: "critical", Type: "booking:create",
			Error: "seen by the error handler", Source: dlq.SourceErrorHandler}, true)
		require.NoError(t, err)
		require.True(t, isNew)
		m.Recorded("critical", dlq.SourceErrorHandler)
	}
	// ... and, long ago, three tasks asynq has trimmed since.
	for i := range 3 {
		_, err := s.Record(ctx, dlq.Record{TaskID: fmt.Sprintf("trimmed-%d", i), Queue: "critical",
			Source: dlq.SourceErrorHandler}, true)
		require.NoError(t, err)
	}
	// asynq drops one recorded task from its archive too.
	require.NoError(t, insp.DeleteTask("critical", archived[0]))

	qi, err := insp.GetQueueInfo("critical")
	require.NoError(t, err)
	require.Equal(t, 4, qi.Archived)
	sizes, err := s.Size(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), sizes["critical"], "more records than archived tasks")

	r := &dlq.Reconciler{Store: s, Archive: insp, Metrics: m, Logger: log, PageSize: 2, AlertRatio: 0.0003}
	res, err := r.Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, res.Scanned, "two full pages")
	require.Equal(t, 3, res.Recorded, "the archived tasks nobody recorded")
	require.Equal(t, map[string]float64{"critical": 4.0 / dlq.ArchiveMax}, res.Fill, "a queue asynq never saw is skipped")

	sizes, err = s.Size(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"critical": 8, "never_used": 0}, sizes, "trimmed records kept, copies added")
	for _, id := range archived[2:] {
		got, ok, err := s.Get(ctx, "critical", id)
		require.NoError(t, err)
		require.True(t, ok, id)
		require.Equal(t, dlq.SourceReconciler, got.Source)
		require.Equal(t, "booking:create", got.Type)
		require.Contains(t, string(got.Payload), `"n":`)
		require.True(t, got.Recorded.Equal(t0))
	}
	got, _, err := s.Get(ctx, "critical", archived[1])
	require.NoError(t, err)
	require.Equal(t, "seen by the error handler", got.Error, "the reconciler never overwrites")
	require.Equal(t, dlq.SourceErrorHandler, got.Source)
	for i := range 3 {
		has, err := s.Has(ctx, "critical", fmt.Sprintf("trimmed-%d", i))
		require.NoError(t, err)
		require.True(t, has)
	}

	// Metrics: new records by writer, the fill ratio, the size read at scrape.
	src := func(s dlq.Source) map[string]string {
		return map[string]string{"queue": "critical", "source": string(s)}
	}
	require.Equal(t, 3.0, metrictest.Must(t, reg, "flowgate_dlq_recorded_total", src(dlq.SourceReconciler)))
	require.Equal(t, 2.0, metrictest.Must(t, reg, "flowgate_dlq_recorded_total", src(dlq.SourceErrorHandler)))
	require.InDelta(t, 0.0004, metrictest.Must(t, reg, "flowgate_dlq_archive_fill_ratio", map[string]string{"queue": "critical"}), 1e-12)
	require.Equal(t, 8.0, metrictest.Must(t, reg, "flowgate_dlq_size", map[string]string{"queue": "critical"}))
	require.Equal(t, 0.0, metrictest.Must(t, reg, "flowgate_dlq_size", map[string]string{"queue": "never_used"}))
	require.Len(t, logs.Lines("alert=dlq_archive_fill"), 1, "fill 0.0004 is over the 0.0003 alert ratio")
	require.Len(t, logs.Lines("reconciler recorded archived tasks"), 1)

	// A second pass finds nothing new.
	res, err = r.Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, res.Scanned)
	require.Zero(t, res.Recorded)
	require.Equal(t, 3.0, metrictest.Must(t, reg, "flowgate_dlq_recorded_total", src(dlq.SourceReconciler)))
	require.Len(t, logs.Lines("reconciler recorded archived tasks"), 1, "nothing to report the second time")

	// A cancelled context stops the pass and says so.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, r.Run(cctx), context.Canceled)
}

func ids(rs []dlq.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.TaskID
	}
	return out
}
