package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/logtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/redistest"
)

// instance is one Scheduler with its own Redis client, registry and log,
// as one flowgate process would have.
type instance struct {
	s   *Scheduler
	reg *prometheus.Registry
	log *logtest.Buffer
}

// newInstance builds a Scheduler on its own client to db's database and
// stops it when the test ends. edit, if not nil, adjusts the Config.
func newInstance(t *testing.T, db *redistest.DB, edit func(*Config)) *instance {
	t.Helper()
	opt, err := redis.ParseURL(db.URL())
	require.NoError(t, err)
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	return newInstanceOn(t, client, edit)
}

func newInstanceOn(t *testing.T, client redis.UniversalClient, edit func(*Config)) *instance {
	t.Helper()
	in := &instance{reg: prometheus.NewRegistry(), log: &logtest.Buffer{}}
	cfg := Config{
		Redis:      client,
		Registerer: in.reg,
		Logger:     slog.New(slog.NewTextHandler(in.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	in.s = s
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
	})
	return in
}

// runs is the value of flowgate_cron_runs_total{job, result}.
func (in *instance) runs(job string, r result) int {
	return int(testutil.ToFloat64(in.s.metrics.runs.WithLabelValues(job, string(r))))
}

// counter counts calls and the most that ran at once.
type counter struct {
	mu      sync.Mutex
	calls   int
	running int
	maxConc int
	ticks   map[int64]int // by tick, unix ms
}

func newCounter() *counter { return &counter{ticks: make(map[int64]int)} }

func (c *counter) enter(ctx context.Context) {
	tick, _ := TickFromContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.running++
	c.maxConc = max(c.maxConc, c.running)
	c.ticks[tick.UnixMilli()]++
}

func (c *counter) exit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
}

func (c *counter) snapshot() (calls, maxConc int, ticks map[int64]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ticks = make(map[int64]int, len(c.ticks))
	for k, v := range c.ticks {
		ticks[k] = v
	}
	return c.calls, c.maxConc, ticks
}

// job is a counted JobFunc that runs body (may be nil) in between.
func (c *counter) job(body func(ctx context.Context) error) JobFunc {
	return func(ctx context.Context) error {
		c.enter(ctx)
		defer c.exit()
		if body == nil {
			return nil
		}
		return body(ctx)
	}
}
