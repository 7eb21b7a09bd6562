package slotcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
)

// ErrBusy is a refresh asked for while another one (on any instance) holds
// the lease; nothing was fetched.
var ErrBusy = errors.New("slotcache: a refresh is already running")

// Refresher fetches the tiers from Cloud9 into the slot cache. It is safe
// for concurrent use; runs on any number of instances exclude each other
// through the lease in Redis.
type Refresher struct {
	cfg  Config
	keys keys

	bg      atomic.Bool // a background refresh runs in this process
	bgDone  sync.WaitGroup
	bgStop  context.Context
	bgClose context.CancelFunc
}

// New checks cfg and returns a Refresher. Close stops its background
// refreshes.
func New(cfg Config) (*Refresher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	stop, cancel := context.WithCancel(context.Background())
	return &Refresher{cfg: cfg, keys: newKeys(cfg.KeyPrefix), bgStop: stop, bgClose: cancel}, nil
}

// Close cancels a background refresh under way and waits for it.
func (r *Refresher) Close() {
	r.bgClose()
	r.bgDone.Wait()
}

// Tiers are the tier numbers, 1..len(TierDays).
func (r *Refresher) Tiers() []int {
	out := make([]int, len(r.cfg.TierDays))
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TierResult is one tier's refresh outcome. Stored: the list was written
// to Redis; Retry: the tier's previous refresh had failed.
type TierResult struct {
	Tier      int
	Days      int
	Success   bool
	SlotCount int // the offered chairs' slots (as the original's tier)
	AllChairs int // every chair's, as fetched for the location
	Attempts  int
	Duration  time.Duration
	Err       error
	From, To  time.Time
	Stored    bool
	Retry     bool
}

// Report is one refresh run.
type Report struct {
	Started  time.Time
	Duration time.Duration
	Tiers    []TierResult
}

// OK reports whether every tier was refreshed.
func (rep Report) OK() bool {
	for _, t := range rep.Tiers {
		if !t.Success {
			return false
		}
	}
	return len(rep.Tiers) > 0
}

// Run implements scheduler.Job: one refresh of every tier. A refresh
// already running elsewhere (a background one) is not an error.
func (r *Refresher) Run(ctx context.Context) error {
	rep, err := r.Refresh(ctx, nil)
	switch {
	case errors.Is(err, ErrBusy):
		return nil
	case err != nil:
		return err
	case !rep.OK():
		return fmt.Errorf("slotcache: %d of %d tiers failed", failed(rep), len(rep.Tiers))
	}
	return nil
}

func failed(rep Report) int {
	n := 0
	for _, t := range rep.Tiers {
		if !t.Success {
			n++
		}
	}
	return n
}

// Refresh fetches the tiers named (all when none), one after the other,
// under the refresh lease: ErrBusy when another run holds it. Each tier's
// outcome is recorded for Health; a tier that fails keeps its last list.
// The error is about the run (lease, bad tier), not the tiers: see Report.
func (r *Refresher) Refresh(ctx context.Context, tiers []int) (Report, error) {
	if len(tiers) == 0 {
		tiers = r.Tiers()
	}
	for _, n := range tiers {
		if n < 1 || n > len(r.cfg.TierDays) {
			return Report{}, contracts.Errorf(contracts.CodeInvalid, "tier %d is not 1..%d", n, len(r.cfg.TierDays))
		}
	}
	token, err := r.acquire(ctx)
	if err != nil {
		return Report{}, err
	}
	defer r.release(token)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.LeaseTTL)
	defer cancel()
	rep := Report{Started: r.cfg.Now()}
	for _, n := range tiers {
		res := r.refreshTier(ctx, n)
		rep.Tiers = append(rep.Tiers, res)
		if !res.Success {
			r.cfg.Logger.Warn("slot cache: tier refresh failed", "tier", n, "attempts", res.Attempts, "err", res.Err)
		}
	}
	rep.Duration = r.cfg.Now().Sub(rep.Started)
	return rep, nil
}

func (r *Refresher) acquire(ctx context.Context) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ok, err := r.cfg.Redis.SetNX(ctx, r.keys.lease(), token, r.cfg.LeaseTTL).Result()
	switch {
	case err != nil:
		return "", contracts.Wrap(contracts.CodeUnavailable, "slotcache.Refresh", err, "slot cache unavailable")
	case !ok:
		return "", ErrBusy
	}
	return token, nil
}

func (r *Refresher) release(token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := releaseScript.Run(ctx, r.cfg.Redis, []string{r.keys.lease()}, token).Err(); err != nil {
		r.cfg.Logger.Warn("slot cache: refresh lease not released (it expires by itself)", "err", err)
	}
}

// tierRange is tier n's dates as of now: from today (in the practice's
// zone), as the original's tiers, to tomorrow + days, so the month from
// tomorrow that getApptSlots asks for is still tier 1's.
func (r *Refresher) tierRange(n int) slots.Range {
	tomorrow := slots.Tomorrow(r.cfg.Now(), r.cfg.Zone)
	return slots.Range{LocationGUID: r.cfg.LocationGUID, From: tomorrow.AddDate(0, 0, -1), To: tomorrow.AddDate(0, 0, r.cfg.TierDays[n-1])}
}

// refreshTier fetches tier n, stores it with its pre-grouped pairs and
// triples, and records the outcome.
func (r *Refresher) refreshTier(ctx context.Context, n int) TierResult {
	rg := r.tierRange(n)
	res := TierResult{Tier: n, Days: r.cfg.TierDays[n-1], From: rg.From, To: rg.To, Retry: r.failing(ctx, n)}
	start := r.cfg.Now()
	list, attempts, err := r.fetch(ctx, rg)
	res.Attempts, res.Duration = attempts, r.cfg.Now().Sub(start)
	if err == nil {
		pg := slots.NewPreGrouped(n, r.cfg.Now(), r.offeredChairs(list), r.cfg.Window)
		err = r.cfg.Cache.PutTier(ctx, n, rg, list, slots.TierStats{Days: res.Days, FetchDuration: res.Duration, Attempts: attempts}, &pg)
		res.Stored = err == nil
	}
	res.Success, res.SlotCount, res.AllChairs, res.Err = err == nil, len(r.offeredChairs(list)), len(list), err
	if !res.Success {
		res.SlotCount, res.AllChairs = 0, 0
	}
	r.record(ctx, res)
	return res
}

// offeredChairs are the slots of the offered columns (pre-grouping: a
// pair must be bookable in the chairs offered).
func (r *Refresher) offeredChairs(list []slots.Slot) []slots.Slot {
	if len(r.cfg.Columns) == 0 {
		return list
	}
	out := make([]slots.Slot, 0, len(list))
	for _, s := range list {
		if anyFold(r.cfg.Columns, s.ScheduleColumnGUID) {
			out = append(out, s)
		}
	}
	return out
}

// failing reports whether tier n's last refresh failed (its record counts
// consecutive failures); a record Redis cannot read counts as not failing.
func (r *Refresher) failing(ctx context.Context, n int) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := r.cfg.Redis.HGet(ctx, r.keys.health(r.cfg.LocationGUID, n), "consecutiveFailures").Int()
	return err == nil && c > 0
}

// record stores res in tier n's record and as the newest refreshHistory
// entry (the JSON cache-health answers as is).
func (r *Refresher) record(ctx context.Context, res TierResult) {
	now := contracts.JSTime(r.cfg.Now())
	h := contracts.CacheRefreshEntry{Tier: res.Tier, Success: res.Success, SlotCount: res.SlotCount, Timestamp: now,
		DateRange:       contracts.NewDateSpan(slots.Date(res.From), slots.Date(res.To)),
		FetchDurationMs: res.Duration.Milliseconds(), Retries: max(res.Attempts-1, 0), IsRetry: res.Retry, RedisWriteSuccess: res.Stored}
	ok, text := "1", ""
	if !res.Success {
		ok, text = "0", errText(res.Err)
		h.Error = &text
	}
	raw, _ := json.Marshal(h)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := recordScript.Run(ctx, r.cfg.Redis, []string{r.keys.health(r.cfg.LocationGUID, res.Tier), r.keys.history(r.cfg.LocationGUID)},
		ok, now, text, raw, r.cfg.HistoryLen).Err()
	if err != nil {
		r.cfg.Logger.Warn("slot cache: refresh outcome not recorded", "tier", res.Tier, "err", err)
	}
}

// errText is what cache-health shows of a failure: the Cloud9 class and
// code, never an address or a credential.
func errText(err error) string {
	var ce *cloud9.Error
	var le *cloud9.LimitedError
	switch {
	case errors.As(err, &ce):
		return fmt.Sprintf("cloud9 %s (code %d)", cloud9.ClassOf(err), ce.Code)
	case errors.As(err, &le):
		return "cloud9 read limiter: no turn before the deadline"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "refresh deadline exceeded"
	case errors.Is(err, slots.ErrUnavailable):
		return "slot cache unavailable"
	}
	return "refresh failed"
}

// fetch asks Cloud9 for tier range rg (7:00 AM on From to 5:00 PM on To),
// every call waiting for the limiter's turn, retrying retryable failures.
func (r *Refresher) fetch(ctx context.Context, rg slots.Range) ([]slots.Slot, int, error) {
	q := cloud9.ReservationQuery{StartDate: rg.From.Add(7 * time.Hour), EndDate: rg.To.Add(17 * time.Hour)}
	for attempt := 1; ; attempt++ {
		if err := r.turn(ctx); err != nil {
			return nil, attempt, err
		}
		got, err := r.cfg.Cloud9.GetOnlineReservations(ctx, q)
		if err == nil {
			return slots.FromCloud9(got, r.cfg.LocationGUID), attempt, nil
		}
		if attempt >= r.cfg.Attempts || !cloud9.IsRetryable(err) {
			return nil, attempt, err
		}
		if err := timeutil.Sleep(ctx, r.cfg.RetryDelay); err != nil {
			return nil, attempt, err
		}
	}
}

// turn waits until the limiter admits one GetOnlineReservations. A
// limiter that cannot answer (Redis) stops the tier: calling unspaced
// could provoke Cloud9's code 8.
func (r *Refresher) turn(ctx context.Context) error {
	if r.cfg.Limiter == nil {
		return nil
	}
	for {
		ok, wait, err := r.cfg.Limiter.Allow(ctx, cloud9.ProcGetOnlineReservations)
		switch {
		case err != nil:
			return fmt.Errorf("slotcache: read limiter: %w", err)
		case ok:
			return nil
		}
		if err := timeutil.Sleep(ctx, max(wait, 10*time.Millisecond)); err != nil {
			return err
		}
	}
}

// Trigger fires one background refresh of every tier unless one was fired
// within Fresh on any instance (SET NX on the trigger key) or one runs in
// this process. It returns at once; it reports whether it fired.
func (r *Refresher) Trigger(ctx context.Context) bool {
	if r.bgStop.Err() != nil || !r.bg.CompareAndSwap(false, true) {
		return false // closed, or one runs here
	}
	ok, err := r.cfg.Redis.SetNX(ctx, r.keys.trigger(), r.cfg.Now().UnixMilli(), r.cfg.Fresh).Result()
	if err != nil || !ok {
		r.bg.Store(false)
		return false
	}
	r.bgDone.Add(1)
	go func() {
		defer r.bgDone.Done()
		defer r.bg.Store(false)
		rep, err := r.Refresh(r.bgStop, nil)
		switch {
		case errors.Is(err, ErrBusy):
			r.cfg.Logger.Debug("slot cache: background refresh skipped, one is running")
		case err != nil:
			r.cfg.Logger.Warn("slot cache: background refresh failed", "err", err)
		default:
			r.cfg.Logger.Info("slot cache: background refresh done", "tiers_ok", len(rep.Tiers)-failed(rep), "tiers", len(rep.Tiers),
				"duration", rep.Duration)
		}
	}()
	return true
}

// Wait waits for this process's background refresh, if any (tests,
// shutdown).
func (r *Refresher) Wait() { r.bgDone.Wait() }
