package buffer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backpressure levels (seed: < 100 normal, > 500 warning, > 900 alert,
// ≥ max full).
const (
	LevelNormal   = "normal"
	LevelElevated = "elevated"
	LevelWarning  = "warning"
	LevelAlert    = "alert"
	LevelFull     = "full"
)

// Thresholds are the backpressure levels.
type Thresholds struct {
	Normal, Warning, Alert, Max int64
}

// Level names the band depth is in.
func (t Thresholds) Level(depth int64) string {
	switch {
	case depth >= t.Max:
		return LevelFull
	case depth > t.Alert:
		return LevelAlert
	case depth > t.Warning:
		return LevelWarning
	case depth > t.Normal:
		return LevelElevated
	}
	return LevelNormal
}

// depthGauge is the queue depth: Asynq's pending+active+scheduled+retry of
// the four queues, read in one pipeline at most once per refresh, advanced
// locally by each enqueue in between.
type depthGauge struct {
	rdb     redis.UniversalClient
	refresh time.Duration
	now     func() time.Time
	log     *slog.Logger
	th      Thresholds
	onDepth func(depth int64) // every new figure (the gauge)

	mu     sync.Mutex
	value  int64
	readAt time.Time
	level  string
}

// Current returns the depth, re-reading Redis when the figure is older
// than refresh.
func (g *depthGauge) Current(ctx context.Context) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if !g.readAt.IsZero() && now.Sub(g.readAt) < g.refresh {
		return g.value, nil
	}
	v, err := g.read(ctx)
	if err != nil {
		return 0, err
	}
	g.value, g.readAt = v, now
	g.observe()
	return v, nil
}

// Add advances the figure by n enqueued messages.
func (g *depthGauge) Add(n int64) {
	g.mu.Lock()
	g.value += n
	g.observe()
	g.mu.Unlock()
}

// observe publishes the figure and logs a level crossing once (mu held).
func (g *depthGauge) observe() {
	if g.onDepth != nil {
		g.onDepth(g.value)
	}
	lvl := g.th.Level(g.value)
	if lvl == g.level {
		return
	}
	prev := g.level
	g.level = lvl
	switch lvl {
	case LevelWarning:
		g.log.Warn("buffer: queue depth above the warning threshold; consider scaling", "depth", g.value, "threshold", g.th.Warning, "from", prev)
	case LevelAlert, LevelFull:
		g.log.Error("buffer: queue depth above the alert threshold", "depth", g.value, "threshold", g.th.Alert, "max", g.th.Max, "level", lvl)
	}
}

// read sums the sizes in one round trip: 16 O(1) commands.
func (g *depthGauge) read(ctx context.Context) (int64, error) {
	cmds := make([]*redis.IntCmd, 0, 16)
	_, err := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queueNames {
			base := "asynq:{" + q + "}:"
			cmds = append(cmds, p.LLen(ctx, base+"pending"), p.LLen(ctx, base+"active"),
				p.ZCard(ctx, base+"scheduled"), p.ZCard(ctx, base+"retry"))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("buffer: read queue depth: %w", err)
	}
	var sum int64
	for _, c := range cmds {
		sum += c.Val()
	}
	return sum, nil
}
