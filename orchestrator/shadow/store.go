package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Config.
const (
	DefaultReadyMinCalls = 200
	DefaultReadyWindow   = 200
	DefaultRetention     = 7 * 24 * time.Hour
)

// Config is the recorder's settings.
type Config struct {
	// ReadyMinCalls is how many comparisons an endpoint needs before it
	// can be ready (SHADOW_READY_MIN_CALLS).
	ReadyMinCalls int
	// ReadyWindow is how many of the latest comparisons are kept and must
	// be free of missing paths and type mismatches (SHADOW_READY_WINDOW).
	ReadyWindow int
	// Retention is how long the records live after the last comparison
	// (SHADOW_RETENTION).
	Retention time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.ReadyMinCalls <= 0 {
		c.ReadyMinCalls = DefaultReadyMinCalls
	}
	if c.ReadyWindow <= 0 {
		c.ReadyWindow = DefaultReadyWindow
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Recorder keeps the comparisons in Redis, so every flowgate instance
// behind one Node-RED adds to one report.
type Recorder struct {
	rdb redis.UniversalClient
	cfg Config
}

// NewRecorder is a Recorder on rdb.
func NewRecorder(rdb redis.UniversalClient, cfg Config) *Recorder {
	return &Recorder{rdb: rdb, cfg: cfg.withDefaults()}
}

// Config is the recorder's settings, defaults filled in.
func (r *Recorder) Config() Config { return r.cfg }

// Now is the recorder's clock.
func (r *Recorder) Now() time.Time { return r.cfg.Now() }

// Record adds one comparison (and the mirrors the kit dropped before it)
// to its endpoint's records.
func (r *Recorder) Record(ctx context.Context, res Result, dropped int) error {
	entry, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("shadow: encode the comparison: %w", err)
	}
	ck, rk := countsKey(res.Endpoint), recentKey(res.Endpoint)
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr := func(field string, ok bool) {
			if ok {
				p.HIncrBy(ctx, ck, field, 1)
			}
		}
		incr(cCompared, true)
		incr(cIdentical, res.Identical)
		incr(cSuperset, res.Superset)
		incr(cMissing, res.MissingCount > 0)
		incr(cTypes, res.TypeCount > 0)
		incr(cValues, len(res.Fields) > 0)
		for _, f := range res.Fields {
			p.HIncrBy(ctx, ck, cField+f.Field, 1)
		}
		if dropped > 0 {
			p.HIncrBy(ctx, ck, cDropped, int64(dropped))
		}
		p.LPush(ctx, rk, entry)
		p.LTrim(ctx, rk, 0, int64(r.cfg.ReadyWindow-1))
		p.Expire(ctx, ck, r.cfg.Retention)
		p.Expire(ctx, rk, r.cfg.Retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("shadow: record %s: %w", res.Endpoint, err)
	}
	return nil
}

// Records is one endpoint's counters and window, newest first.
type Records struct {
	Endpoint string
	Counts   map[string]int64
	Recent   []Result
}

// Load reads the records of the named endpoints (one pipeline).
func (r *Recorder) Load(ctx context.Context, endpoints []string) ([]Records, error) {
	counts := make([]*redis.MapStringStringCmd, len(endpoints))
	recent := make([]*redis.StringSliceCmd, len(endpoints))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range endpoints {
			counts[i] = p.HGetAll(ctx, countsKey(e))
			recent[i] = p.LRange(ctx, recentKey(e), 0, int64(r.cfg.ReadyWindow-1))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("shadow: load the records: %w", err)
	}
	out := make([]Records, len(endpoints))
	for i, e := range endpoints {
		rec := Records{Endpoint: e, Counts: map[string]int64{}}
		for k, v := range counts[i].Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			rec.Counts[k] = n
		}
		for _, raw := range recent[i].Val() {
			var res Result
			if json.Unmarshal([]byte(raw), &res) == nil {
				res.Endpoint = e
				rec.Recent = append(rec.Recent, res)
			}
		}
		out[i] = rec
	}
	return out, nil
}

// fieldCounts is the per-field difference counters of a counts hash.
func fieldCounts(counts map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range counts {
		if f, ok := strings.CutPrefix(k, cField); ok {
			out[f] = v
		}
	}
	return out
}
