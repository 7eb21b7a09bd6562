package buffer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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

// depthGauge keeps the backpressure counter ("depth", one Redis key moved
// by the admission script) and its local reading. Finished messages are
// subtracted in one script call per flush interval, not one per message;
// the counter is re-set from Asynq's queues and every instance's place
// credit (the credit hash) every reconcile interval, so a crash (an
// admission whose enqueue never landed, leaves not yet flushed, credit
// never given back) heals. No lock is held across a Redis call, except
// admitMu (one round trip per reconcile interval).
type depthGauge struct {
	rdb       redis.UniversalClient
	max       int64  // this shard's share of MaxQueueSize (admissions)
	key       string // the depth counter
	creditKey string // the credit hash: each instance's place credit
	instance  string // this instance's field in it (one per Buffer)
	flush     time.Duration
	reconcile time.Duration
	stale     time.Duration // a credit field untouched this long is dropped
	log       *slog.Logger
	th        Thresholds        // levels logged; none when th.Max is 0 (a shard of a depthSet)
	onDepth   func(depth int64) // every new figure (the gauge; a depthSet's sum)

	left   atomic.Int64 // finished messages not yet subtracted
	back   atomic.Int64 // idle credit given back, not yet subtracted
	credit placeCredit  // places reserved in the counter, not yet used
	// admitMu is held by the admitter around each admitScript call and by
	// resync while it sets this instance's field to the credit it holds:
	// no answered admission's places are then in flight.
	admitMu sync.Mutex

	mu    sync.Mutex // value and level only
	value int64
	level string
}

// set records a depth figure (an admission's, a flush's, a reconcile's).
func (g *depthGauge) set(v int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.value = v
	if g.onDepth != nil {
		g.onDepth(v)
	}
	if g.th.Max > 0 {
		g.level = logLevel(g.log, g.th, g.level, v)
	}
}

// logLevel logs a change of level (warning, alert) and answers the level
// of v.
func logLevel(log *slog.Logger, th Thresholds, prev string, v int64) string {
	lvl := th.Level(v)
	if lvl == prev {
		return lvl
	}
	switch lvl {
	case LevelWarning:
		log.Warn("buffer: queue depth above the warning threshold; consider scaling", "depth", v, "threshold", th.Warning, "from", prev)
	case LevelAlert, LevelFull:
		log.Error("buffer: queue depth above the alert threshold", "depth", v, "threshold", th.Alert, "max", th.Max, "level", lvl)
	}
	return lvl
}

// Value is the last figure.
func (g *depthGauge) Value() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.value
}

// leave counts n finished messages (subtracted at the next flush).
func (g *depthGauge) leave(n int64) { g.left.Add(n) }

// placeCredit is places this instance reserved in the depth counter
// ahead of use (admitScript's ARGV[3]), also held in its field of the
// credit hash so every instance's resync counts them: an enqueue without a
// key takes one without a Redis round trip. Credit not used within a flush
// interval is given back with the finished messages.
//
// The field is touched at least once every two flush intervals while the
// instance holds credit: a flush that finds the credit unused since the
// last one gives it all back, and a flush after a take subtracts it
// (subtract); a flush that finds only fresh credit follows its admission,
// which touched the field. creditStale is well above that.
//
// An admission whose answer is lost after it ran (a timeout) leaves its
// places in the field though this instance never got them: they stay
// counted, the counter reading that much high (QUEUE_FULL early, never
// late), until this instance's next resync sets its field to what it
// holds.
type placeCredit struct {
	n     atomic.Int64
	taken atomic.Int64 // places taken since the last flush (still in the field)
	used  atomic.Bool  // taken from since the last flush
	// low is called when a take leaves lowCredit places: the admitter
	// reserves more before the enqueues run out.
	low func()
}

// lowCredit is the credit left when more is asked for.
const lowCredit = maxAhead / 4

// add adds n reserved places (fresh credit is not idle).
func (c *placeCredit) add(n int64) {
	if n > 0 {
		c.n.Add(n)
		c.used.Store(true)
	}
}

// take uses one place, false when there is none.
func (c *placeCredit) take() bool {
	for {
		v := c.n.Load()
		if v <= 0 {
			return false
		}
		if c.n.CompareAndSwap(v, v-1) {
			c.taken.Add(1)
			c.used.Store(true)
			if v-1 == lowCredit && c.low != nil {
				c.low()
			}
			return true
		}
	}
}

// idle returns the credit nothing took from since the last call (all of
// it when all is set), to be given back.
func (c *placeCredit) idle(all bool) int64 {
	if c.used.Swap(false) && !all {
		return 0
	}
	return c.n.Swap(0)
}

// creditStale is how long a credit field may go untouched before a
// resync drops it (its instance crashed, or cannot reach Redis): far above
// the two flush intervals a live instance holding credit touches it in
// (placeCredit), with room for a slow Redis (each upkeep call is bounded at
// 2 s).
func creditStale(flush time.Duration) time.Duration {
	return max(10*flush, 5*time.Second)
}

// flushLeft subtracts the finished messages and settles the place credit
// in one script call.
func (g *depthGauge) flushLeft(ctx context.Context) error {
	return g.subtract(ctx, false)
}

// subtract subtracts the finished messages and settles the place credit
// (leaveScript): the places taken since the last flush leave this
// instance's field, the idle credit (all of it when all is set: on Stop,
// which also deletes the field) leaves the field and the counter.
func (g *depthGauge) subtract(ctx context.Context, all bool) error {
	g.back.Add(g.credit.idle(all))
	n, t, c := g.left.Swap(0), g.credit.taken.Swap(0), g.back.Swap(0)
	if n == 0 && t == 0 && c == 0 && !all {
		return nil
	}
	flag := "0"
	if all {
		flag = "1"
	}
	res, err := leaveScript.Run(ctx, g.rdb, []string{g.key, g.creditKey}, n, t, c, g.instance, flag).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("%d values, want 2", len(res))
	}
	if err != nil {
		// Try again at the next flush.
		g.left.Add(n)
		g.credit.taken.Add(t)
		g.back.Add(c)
		return fmt.Errorf("buffer: subtract finished messages: %w", err)
	}
	if res[1] > 0 {
		// The field held less than this instance's credit: a resync dropped
		// it as stale (this instance did not reach Redis for that long), so
		// the credit left is no longer counted. Drop it here too.
		g.log.Warn("buffer: place credit was dropped as stale; dropping it here", "lacked", res[1], "dropped", g.credit.n.Swap(0))
	}
	g.set(res[0])
	return nil
}

// resync sets the counter to Asynq's figure plus the place credit every
// instance holds (resyncScript: the fresh fields of the credit hash; stale
// ones, creditStale, are dropped). It can undercount, in two ways, until
// the next resync (one reconcile interval later):
//   - an admission between the read and the SET is overwritten, and its
//     task, enqueued after the read, is not in the figure either;
//   - a message another instance finished (left pending/active, so not in
//     the figure) whose leave that instance has not flushed yet is
//     subtracted again by its next flush, after the SET. This instance
//     flushes before reading, so only other instances' leaves count.
//
// The undercount is at most the admissions of one round trip plus the
// messages other instances finished within their last flush interval
// (throughput × flush interval); the counter never drops below 0
// (leaveScript clamps), and meanwhile at most that many messages are
// admitted above the maximum. The alternative, one script over the four
// queues, is not Cluster-safe: each queue has its own hash tag.
//
// It also sets this instance's own field to the credit it holds, so a
// field that drifted heals every reconcile interval: an admission whose
// answer was lost after it ran (a timeout: its places reached the field
// and the counter but never this instance), a field dropped as stale and
// recreated. Admissions wait for that step (admitMu, one round trip).
//
// It can overcount too, the other way round: a place taken from an
// instance's credit whose message is already in Asynq's figure stays in
// that instance's field until its next flush, so it is counted twice until
// the next resync. That is at most the credit other instances took within
// their last flush interval (this instance flushes before reading); an
// overcount only answers QUEUE_FULL that much early.
func (g *depthGauge) resync(ctx context.Context) error {
	if err := g.flushLeft(ctx); err != nil {
		return err
	}
	v, err := g.read(ctx)
	if err != nil {
		return err
	}
	return g.resyncTo(ctx, v)
}

// resyncTo is resync's second step: the counter becomes figure (Asynq's,
// or this shard's share of it) plus every instance's fresh credit.
func (g *depthGauge) resyncTo(ctx context.Context, figure int64) error {
	g.admitMu.Lock()
	// The field becomes what this instance holds: the taken places and
	// the idle credit not yet settled are settled by this. A take between
	// the two reads stays in the field until the next resync (an
	// overcount of one place); read the other way round it would be an
	// undercount.
	own := g.credit.n.Load()
	g.credit.taken.Swap(0)
	g.back.Swap(0)
	v, err := resyncScript.Run(ctx, g.rdb, []string{g.key, g.creditKey}, figure, g.stale.Milliseconds(), g.instance, own).Int64()
	g.admitMu.Unlock()
	if err != nil {
		// What was swapped out is not restored: the script may have run
		// (a lost answer). The field then reads high (QUEUE_FULL early,
		// never late) until the next resync sets it again.
		return fmt.Errorf("buffer: reset queue depth: %w", err)
	}
	g.set(v)
	return nil
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
