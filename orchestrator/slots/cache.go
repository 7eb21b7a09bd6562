package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// DefaultFetchTimeout bounds a Refresh's shared fetch: Cloud9's read
// timeout (cloud9.DefaultReadTimeout).
const DefaultFetchTimeout = 60 * time.Second

// ErrFailureHeld marks a Refresh answered with the error of a fetch that
// failed within CacheConfig.FailureHold, without fetching.
var ErrFailureHeld = errors.New("not fetched again")

// DefaultFailureHold is how long a Refresh whose fetch failed answers its
// error without fetching again (CacheConfig.FailureHold).
const DefaultFailureHold = 30 * time.Second

// DefaultCacheTTL is how long a cached list lives: docs/reference/nodered-endpoints.md's hard
// limit for using flat-cache data (60 min). Whether a list is fresh enough
// (5 min in docs/reference/nodered-endpoints.md) is the caller's call, from Entry.FetchedAt.
const DefaultCacheTTL = 60 * time.Minute

// CacheConfig configures a Cache. Zero values take the defaults.
type CacheConfig struct {
	// KeyPrefix starts every key: "<KeyPrefix>:{slots}:…". Default "flowgate".
	KeyPrefix string
	// TTL of each cached list. Default DefaultCacheTTL.
	TTL time.Duration
	// Now stamps FetchedAt and the registry. Default time.Now.
	Now func() time.Time
	// Logger receives a warning for each slot Put cannot cache. Default
	// slog.Default().
	Logger *slog.Logger
	// FetchTimeout bounds the fetch a Refresh shares, which its callers'
	// deadlines do not end. Default DefaultFetchTimeout.
	FetchTimeout time.Duration
	// FailureHold is how long after a Refresh's fetch failed the Refreshes
	// of the same range answer that error without fetching: while Cloud9
	// refuses (code 8) or times out, the callers of an uncached range —
	// anonymous /v1 visitors among them — cause one read per range per
	// FailureHold, not one per request. Default DefaultFailureHold.
	FailureHold time.Duration
}

func (c CacheConfig) withDefaults() CacheConfig {
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.TTL = valutil.ValOrDefault(c.TTL, DefaultCacheTTL)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.FetchTimeout = valutil.PositiveOrDefault(c.FetchTimeout, DefaultFetchTimeout)
	c.FailureHold = valutil.PositiveOrDefault(c.FailureHold, DefaultFailureHold)
	return c
}

func (c CacheConfig) validate() error {
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("slots: KeyPrefix %q must not contain '{' or '}'", c.KeyPrefix)
	case c.TTL < time.Millisecond:
		return fmt.Errorf("slots: cache TTL %s must be at least 1ms", c.TTL)
	}
	return nil
}

// Cache is the shared slot cache. It is safe for concurrent use by any
// number of instances.
type Cache struct {
	rdb  redis.UniversalClient
	cfg  CacheConfig
	keys keys

	memoMu sync.Mutex
	memo   map[string]*decoded // list key → the list as this process last decoded it (Get, GetTier)
	tick   uint64              // memo's clock: the last use of each list

	refreshes singleflight.Group // entry key → the Refresh running for it

	failMu sync.Mutex
	failed map[string]failure // entry key → its last fetch's failure, for FailureHold
}

// failure is a failed fetch's error and when Refresh fetches again.
type failure struct {
	err   error
	until time.Time
}

// recentFailure answers the error of key's last fetch while it is held.
func (c *Cache) recentFailure(key string) error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	f, ok := c.failed[key]
	if !ok || !c.cfg.Now().Before(f.until) {
		return nil
	}
	return f.err
}

// remember records the outcome of key's fetch: a failure is held for
// FailureHold, a success forgets it. Failures past their hold are dropped
// on the way, so the map holds only the ranges failing now.
func (c *Cache) remember(key string, err error) {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	now := c.cfg.Now()
	for k, f := range c.failed {
		if !now.Before(f.until) {
			delete(c.failed, k)
		}
	}
	if err == nil {
		delete(c.failed, key)
		return
	}
	if c.failed == nil {
		c.failed = make(map[string]failure)
	}
	c.failed[key] = failure{err: err, until: now.Add(c.cfg.FailureHold)}
}

// maxDecoded bounds the lists kept decoded: a range's key carries its
// dates, so the keys in use change from day to day. The least recently
// used goes first, so the lists read on every request (the tiers, the
// holds' horizon) stay while one-off ranges come and go.
const maxDecoded = 16

// decoded is a list as get read it, the stamp it was read at, and when
// it was last used.
type decoded struct {
	e    Entry
	m    meta
	used uint64
}

// recall answers the decoded copy of the list at key when it was decoded
// at stamp st ("" never is: keep takes only lists with a stamp).
func (c *Cache) recall(key, st string) (Entry, meta, bool) {
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	d, ok := c.memo[key]
	if !ok || d.m.stamp != st {
		return Entry{}, meta{}, false
	}
	c.tick++
	d.used = c.tick
	return d.e, d.m, true
}

// keep remembers the list at key as get decoded it, when it has a stamp.
func (c *Cache) keep(key string, e Entry, m meta) {
	if m.stamp == "" {
		return
	}
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	if c.memo == nil {
		c.memo = make(map[string]*decoded, maxDecoded)
	}
	if _, ok := c.memo[key]; !ok && len(c.memo) >= maxDecoded {
		oldest := ""
		for k, d := range c.memo {
			if oldest == "" || d.used < c.memo[oldest].used {
				oldest = k
			}
		}
		delete(c.memo, oldest)
	}
	c.tick++
	c.memo[key] = &decoded{e: e, m: m, used: c.tick}
}

// NewCache checks cfg and returns a Cache on rdb.
func NewCache(rdb redis.UniversalClient, cfg CacheConfig) (*Cache, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Cache{rdb: rdb, cfg: cfg, keys: newKeys(cfg.KeyPrefix)}, nil
}

// Entry is one cached list.
type Entry struct {
	Range     Range
	Slots     []Slot // sorted (Sort)
	FetchedAt time.Time
}

type meta struct {
	LocationGUID     string `json:"locationGUID"`
	ScheduleViewGUID string `json:"scheduleViewGUID,omitempty"`
	From             string `json:"from"` // YYYY-MM-DD
	To               string `json:"to"`
	FetchedAt        int64  `json:"fetchedAt"` // Unix ms
	Count            int    `json:"count"`
	// Tiers only (tiers.go).
	Tier            int   `json:"tier,omitempty"`
	FetchDurationMs int64 `json:"fetchDurationMs,omitempty"`
	Attempts        int   `json:"attempts,omitempty"`
	// Read from their own fields, never stored in _meta.
	LastInvalidated string `json:"-"`
	LastRestored    string `json:"-"`
	Version         string `json:"-"`
	stamp           string // the list's stamp (see stamp), "" when it has no version
}

const dateISO = "2006-01-02"

func checkRange(op string, r Range) error {
	switch {
	case r.LocationGUID == "" || strings.ContainsAny(r.LocationGUID, ":{}|") || strings.ContainsAny(r.ScheduleViewGUID, ":{}|"):
		return invalid(op, "a range needs a locationGUID (and an optional scheduleViewGUID) without ':', '|' or braces")
	case r.From.IsZero() || r.To.IsZero():
		return invalid(op, "a range needs From and To dates")
	case dateOf(r.To).Before(dateOf(r.From)):
		return invalid(op, "range ends (%s) before it starts (%s)", r.To.Format(dateISO), r.From.Format(dateISO))
	}
	return nil
}

func dateOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Put replaces the list of r with list, stamped FetchedAt = now. A slot
// without a parseable start, a schedule view or a column cannot be booked
// and is left out with a warning; two slots with one SlotID are one.
func (c *Cache) Put(ctx context.Context, r Range, list []Slot) error {
	const op = "slots.Cache.Put"
	if err := checkRange(op, r); err != nil {
		return err
	}
	return c.put(ctx, op, c.keys.entry(r), r, meta{}, list, c.cfg.TTL, nil)
}

// put writes one list under key (putScript): m completed with r, the
// fetch time and the count; pg, when not nil, is the pre-grouped value
// stored beside it (tiers).
func (c *Cache) put(ctx context.Context, op, key string, r Range, m meta, list []Slot, ttl time.Duration, pg []byte) error {
	now := c.cfg.Now()
	args := make([]any, 0, 5+2*len(list))
	args = append(args, now.UnixMilli(), ttl.Milliseconds(), pg, metaField, nil)
	seen := make(map[string]int, len(list)) // SlotID → index of its value in args
	for _, s := range list {
		id, err := s.ID()
		if err != nil {
			c.cfg.Logger.Warn("slot cache: slot left out", "op", op, "startTime", s.StartTime,
				"scheduleViewGUID", s.ScheduleViewGUID, "scheduleColumnGUID", s.ScheduleColumnGUID, "err", err)
			continue
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if i, dup := seen[id]; dup {
			args[i] = raw // keep the last, like HSET
			continue
		}
		seen[id] = len(args) + 1
		args = append(args, id, raw)
	}
	m.LocationGUID, m.ScheduleViewGUID = r.LocationGUID, r.ScheduleViewGUID
	m.From, m.To, m.FetchedAt, m.Count = r.From.Format(dateISO), r.To.Format(dateISO), now.UnixMilli(), len(seen)
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	args[4] = raw
	if pg == nil {
		args[2] = ""
	}
	if err := putScript.Run(ctx, c.rdb, []string{c.keys.registry(), key, key + pgSuffix, c.keys.booked("")}, args...).Err(); err != nil {
		return unavailable(op, err)
	}
	return nil
}

// Get returns the list of r; found is false when none is cached (never
// put, expired or deleted). An empty list that was put is found. A list
// is decoded once per change: while its stamp is unchanged (one HMGET of
// two small fields) this process's decoded copy is returned — treat its
// Slots as read-only.
func (c *Cache) Get(ctx context.Context, r Range) (e Entry, found bool, err error) {
	const op = "slots.Cache.Get"
	if err := checkRange(op, r); err != nil {
		return Entry{}, false, err
	}
	key := c.keys.entry(r)
	st, err := c.stamp(ctx, op, key)
	if err != nil {
		return Entry{}, false, err
	}
	if e, _, ok := c.recall(key, st); ok {
		e.Range = r
		return e, true, nil
	}
	e, m, found, err := c.get(ctx, op, key)
	if err != nil || !found {
		return Entry{}, found, err
	}
	c.keep(key, e, m)
	e.Range = r
	return e, true, nil
}

// Refresh runs fetch, which reads r's list afresh (and caches it), unless
// a Refresh of r already runs in this process: then it waits for that
// one's answer. The callers that find a list missing or stale at the same
// moment — every time it ages past fresh under load — make one Cloud9
// read between them, not one each. The shared fetch runs without the
// cancellation and the deadline of the caller that started it (with its
// values), bounded by CacheConfig.FetchTimeout instead: its end does not
// fail the others, and a Cloud9 slower than its callers' budgets still
// answers, so the list it caches serves the next caller where each caller
// would otherwise start a read of its own only to abandon it. A caller
// whose context ends stops waiting with its context's error. A fetch that
// panics is an error for every caller. The answer is shared: read-only.
// A fetch that failed is not run again for CacheConfig.FailureHold: the
// Refreshes of r meanwhile answer its error (wrapped) at once.
func (c *Cache) Refresh(ctx context.Context, r Range, fetch func(context.Context) ([]Slot, error)) ([]Slot, error) {
	if err := checkRange("slots.Cache.Refresh", r); err != nil {
		return nil, err
	}
	key := c.keys.entry(r)
	if err := c.recentFailure(key); err != nil {
		return nil, fmt.Errorf("slots.Cache.Refresh %s: %w within %s of a failure: %w", r, ErrFailureHeld, c.cfg.FailureHold, err)
	}
	ch := c.refreshes.DoChan(key, func() (list any, err error) {
		defer func() { c.remember(key, err) }()
		// The fetch runs on a goroutine of its own, where a panic would end
		// the process: it is every caller's error instead.
		defer func() {
			if p := recover(); p != nil {
				list, err = nil, fmt.Errorf("slots.Cache.Refresh %s: the fetch panicked: %v", r, p)
			}
		}()
		// Only the call that starts the fetch gets here: its context, less
		// its cancellation and deadline.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.FetchTimeout)
		defer cancel()
		return fetch(fctx)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		list, _ := res.Val.([]Slot)
		return list, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stamp reads what tells one content of the list at key from another: its
// version ("_v", from a counter every script that changes a list
// increments) and its "_meta" (which carries the fetch time to the
// millisecond, so a version number met again after Redis lost the counter
// still tells two lists apart). "" when the list is missing or has no
// version.
func (c *Cache) stamp(ctx context.Context, op, key string) (string, error) {
	vals, err := c.rdb.HMGet(ctx, key, versionField, metaField).Result()
	if err != nil {
		return "", unavailable(op, err)
	}
	v, _ := vals[0].(string)
	m, _ := vals[1].(string)
	if v == "" || m == "" {
		return "", nil
	}
	return stampOf(v, m), nil
}

func stampOf(version, rawMeta string) string { return version + "\x00" + rawMeta }

// get reads the list at key: its slots (sorted), its meta and the
// bookkeeping fields ("_…", not slots).
func (c *Cache) get(ctx context.Context, op, key string) (e Entry, m meta, found bool, err error) {
	fields, err := c.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return Entry{}, meta{}, false, unavailable(op, err)
	}
	rawMeta, ok := fields[metaField]
	if !ok {
		return Entry{}, meta{}, false, nil
	}
	if err := json.Unmarshal([]byte(rawMeta), &m); err != nil {
		return Entry{}, meta{}, false, contracts.Wrap(contracts.CodeInternal, op, err, "corrupt slot cache entry")
	}
	m.LastInvalidated, m.LastRestored, m.Version = fields[lastInvalidatedField], fields[lastRestoredField], fields[versionField]
	if m.Version != "" {
		m.stamp = stampOf(m.Version, rawMeta)
	}
	e = Entry{FetchedAt: time.UnixMilli(m.FetchedAt), Slots: make([]Slot, 0, len(fields)-1)}
	e.Range.LocationGUID, e.Range.ScheduleViewGUID = m.LocationGUID, m.ScheduleViewGUID
	e.Range.From, _ = time.Parse(dateISO, m.From)
	e.Range.To, _ = time.Parse(dateISO, m.To)
	for f, v := range fields {
		if strings.HasPrefix(f, "_") {
			continue
		}
		var s Slot
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return Entry{}, meta{}, false, contracts.Wrap(contracts.CodeInternal, op, err, "corrupt slot cache entry")
		}
		e.Slots = append(e.Slots, s)
	}
	Sort(e.Slots)
	return e, m, true, nil
}

// Delete drops the list of r; it reports whether there was one.
func (c *Cache) Delete(ctx context.Context, r Range) (bool, error) {
	const op = "slots.Cache.Delete"
	if err := checkRange(op, r); err != nil {
		return false, err
	}
	key := c.keys.entry(r)
	n, err := deleteScript.Run(ctx, c.rdb, []string{c.keys.registry(), key, key + pgSuffix}).Int()
	if err != nil {
		return false, unavailable(op, err)
	}
	return n == listDeleted, nil
}

// DeleteLists drops every search-range list of location loc (the lists
// Get / Put keep; not the tiers), so none of them is offered again before
// Cloud9 is asked: DELETE cache. It returns how many it dropped.
func (c *Cache) DeleteLists(ctx context.Context, loc string) (int, error) {
	const op = "slots.Cache.DeleteLists"
	if loc == "" {
		return 0, invalid(op, "a location is required")
	}
	n, err := deleteListsScript.Run(ctx, c.rdb, []string{c.keys.registry()}, c.cfg.Now().UnixMilli(), c.keys.lists(loc)).Int()
	if err != nil {
		return 0, unavailable(op, err)
	}
	return n, nil
}

// Invalidate removes slot s (matched by SlotID) from every cached list, in
// one script, and returns how many lists held it. Call it once a slot is
// booked, or Cloud9 says it is not available.
func (c *Cache) Invalidate(ctx context.Context, s Slot) (int, error) {
	const op = "slots.Cache.Invalidate"
	id, err := s.ID()
	if err != nil {
		return 0, invalid(op, "cannot identify the slot: %v", err)
	}
	now := c.cfg.Now()
	n, err := invalidateScript.Run(ctx, c.rdb, []string{c.keys.registry()}, now.UnixMilli(), id, stamp(id, now)).Int()
	if err != nil {
		return 0, unavailable(op, err)
	}
	return n, nil
}

// Find returns the cached slot a decoded bookingToken names (same schedule
// view, column and start minute), from any live list, or the slot if it
// was booked lately (Booked). found is false when
// no list holds it: booked, invalidated, or the lists expired — the caller
// then asks Cloud9 or refuses the token.
func (c *Cache) Find(ctx context.Context, ts TokenSlot) (s Slot, found bool, err error) {
	const op = "slots.Cache.Find"
	id, err := ts.ID()
	if err != nil {
		return Slot{}, false, invalid(op, "cannot identify the slot: %v", err)
	}
	raw, err := findScript.Run(ctx, c.rdb, []string{c.keys.registry(), c.keys.booked(id)}, c.cfg.Now().UnixMilli(), id).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return Slot{}, false, nil
	case err != nil:
		return Slot{}, false, unavailable(op, err)
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Slot{}, false, contracts.Wrap(contracts.CodeInternal, op, err, "corrupt slot cache entry")
	}
	return s, true, nil
}

// Contains reports whether a decoded bookingToken's slot is in the cache.
func (c *Cache) Contains(ctx context.Context, ts TokenSlot) (bool, error) {
	_, found, err := c.Find(ctx, ts)
	return found, err
}

// String names the entry key of r, for logs.
func (r Range) String() string {
	v := r.ScheduleViewGUID
	if v == "" {
		v = "*"
	}
	return r.LocationGUID + "/" + v + "/" + r.From.Format(dateISO) + ".." + r.To.Format(dateISO) + " (" +
		strconv.Itoa(int(dateOf(r.To).Sub(dateOf(r.From)).Hours()/24)+1) + " days)"
}
