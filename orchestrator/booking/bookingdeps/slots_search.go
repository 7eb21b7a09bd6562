package bookingdeps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// SearchPolicy is the range search's settings (SLOT_SEARCH_*); zero values
// take the defaults.
//
// The range search is how a slot query the cache does not answer is asked
// of Cloud9, as the original's getApptSlots
// (docs/reference/nodered-endpoints.md §1.4: 2 windows of 30 days, up to 4
// tries each, 5 s apart, retrying an answer with no records or an error;
// ≈ 35 s in all).
//
//   - A try is retried when Cloud9 answers no records (an empty <Records/>,
//     which it gives under load: docs/reference/cloud9-api.md), its code 0
//     ("An unknown error occurred."), a rate limit (code 8, or flowgate's
//     own limiter), a timeout or a dropped connection.
//   - Any other failure ends the search at once: a refused connection (Cloud9
//     is down), a refusal no retry changes (credentials, parameters,
//     outside the allowance window).
//   - A window whose tries end without a slot to offer is followed by the
//     next window of the same span (expanded), up to Windows.
//   - Everything runs within Budget from the search's start, and within
//     the caller's own deadline: a retry whose delay would end past it is
//     not made, and each call is cut at it.
//   - When a whole search fails, Outage remembers it for its Hold: the
//     searches in that time make one try and answer at once, so one caller,
//     not every caller, waits out the retries of an outage. A successful
//     call ends it.
type SearchPolicy struct {
	Attempts   int           // tries per window (SLOT_SEARCH_ATTEMPTS, 4)
	Windows    int           // windows (SLOT_SEARCH_WINDOWS, 2)
	RetryDelay time.Duration // between tries and windows (SLOT_SEARCH_RETRY_DELAY, 5 s)
	Budget     time.Duration // the whole search (SLOT_SEARCH_BUDGET, 35 s)
}

// The range search's defaults: the original's.
const (
	DefaultSearchAttempts   = 4
	DefaultSearchWindows    = 2
	DefaultSearchRetryDelay = 5 * time.Second
	DefaultSearchBudget     = 35 * time.Second
	DefaultSearchOutageHold = time.Minute
	MaxSearchAttempts       = 10
	MaxSearchWindows        = 4
	MaxSearchBudget         = DefaultSearchBudget // the original's 35 s is the most a caller waits
)

// WithDefaults fills the zero values.
func (p SearchPolicy) WithDefaults() SearchPolicy {
	p.Attempts = valutil.PositiveOrDefault(p.Attempts, DefaultSearchAttempts)
	p.Windows = valutil.PositiveOrDefault(p.Windows, DefaultSearchWindows)
	p.RetryDelay = valutil.PositiveOrDefault(p.RetryDelay, DefaultSearchRetryDelay)
	p.Budget = valutil.PositiveOrDefault(p.Budget, DefaultSearchBudget)
	return p
}

// Validate reports settings out of bounds (after WithDefaults).
func (p SearchPolicy) Validate() error {
	switch {
	case p.Attempts < 1 || p.Attempts > MaxSearchAttempts:
		return fmt.Errorf("slot search: attempts %d, want 1..%d", p.Attempts, MaxSearchAttempts)
	case p.Windows < 1 || p.Windows > MaxSearchWindows:
		return fmt.Errorf("slot search: windows %d, want 1..%d", p.Windows, MaxSearchWindows)
	case p.Budget <= 0 || p.Budget > MaxSearchBudget:
		return fmt.Errorf("slot search: budget %s, want above 0 and at most %s", p.Budget, MaxSearchBudget)
	case p.RetryDelay <= 0 || p.RetryDelay > p.Budget:
		return fmt.Errorf("slot search: retry delay %s, want above 0 and within the budget %s", p.RetryDelay, p.Budget)
	}
	return nil
}

// Outage is the memory of a failed search (see SearchPolicy). Per process: an
// instance that has not seen the outage pays one search's retries to learn
// it. The zero value has Hold DefaultSearchOutageHold.
type Outage struct {
	Hold  time.Duration
	mu    sync.Mutex
	until time.Time
}

// Active reports whether a search failed within Hold of now.
func (o *Outage) Active(now time.Time) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return now.Before(o.until)
}

func (o *Outage) failed(now time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.until = now.Add(valutil.PositiveOrDefault(o.Hold, DefaultSearchOutageHold))
}

func (o *Outage) ended() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.until = time.Time{}
}

// searched is a search's outcome: the list of rng (the window that gave
// it), the Cloud9 calls made, and whether a later window gave it.
type searched struct {
	list     []slots.Slot
	rng      slots.Range
	attempts int
	expanded bool
}

// ErrSearchBudget is wrapped when the budget left no room for a try.
var ErrSearchBudget = errors.New("slot search: the budget left no room for a Cloud9 call")

// search runs the range search for r (see SearchPolicy).
func (s SlotSource) search(ctx context.Context, views []string, r slots.Range) (searched, error) {
	p := s.Search
	start := s.Now()
	budget := p.Budget
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d))
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	run := &searchRun{s: s, ctx: ctx, views: views, end: start.Add(budget), attempts: p.Attempts, out: searched{rng: r}}
	windows := p.Windows
	if s.Outage.Active(start) {
		run.attempts, windows = 1, 1
		s.Logger.Info("slot search: Cloud9 failed a search lately; one try, no retries")
	}
	span := r.To.Sub(r.From)
	for w := 0; w < windows; w++ {
		rng := r
		if w > 0 {
			rng = slots.Range{LocationGUID: r.LocationGUID, ScheduleViewGUID: r.ScheduleViewGUID,
				From: r.From.Add(time.Duration(w) * span), To: r.To.Add(time.Duration(w) * span)}
			if !run.wait() {
				break
			}
		}
		done, err := run.window(rng, w)
		if err != nil {
			s.Outage.failed(s.Now())
			return run.out, err
		}
		if done {
			return run.out, nil
		}
	}
	switch {
	case run.lastErr != nil && !run.haveList:
		s.Outage.failed(s.Now())
		return run.out, run.lastErr
	case !run.haveList:
		return run.out, fmt.Errorf("slot search %s: %w", r, ErrSearchBudget)
	}
	return run.out, nil
}

// searchRun is one search in progress.
type searchRun struct {
	s        SlotSource
	ctx      context.Context
	views    []string
	end      time.Time // the budget's end, on s.Now's clock
	attempts int
	out      searched
	lastErr  error
	haveList bool // a call answered (the list may be empty)
}

// wait sleeps the retry delay; false when that would end past the budget
// (or the wait was cut).
func (run *searchRun) wait() bool {
	d := run.s.Search.RetryDelay
	if run.s.Now().Add(d).After(run.end) {
		return false
	}
	return run.s.Sleep(run.ctx, d) == nil
}

// window tries rng (window w) up to attempts times: done when it found a
// slot to offer; an error when a failure ends the search.
func (run *searchRun) window(rng slots.Range, w int) (bool, error) {
	for a := 1; a <= run.attempts; a++ {
		if a > 1 && !run.wait() {
			return false, nil
		}
		got, err := run.s.Cloud9.GetOnlineReservations(run.ctx, cloud9.ReservationQuery{StartDate: rng.From.Add(7 * time.Hour),
			EndDate: rng.To.Add(17 * time.Hour), ScheduleViewGUIDs: run.views})
		run.out.attempts++
		if err != nil {
			run.lastErr = fmt.Errorf("slot search %s (try %d of window %d): %w", rng, a, w+1, err)
			if !retryableInSearch(err) {
				return false, run.lastErr
			}
			continue
		}
		run.s.Outage.ended()
		run.lastErr = nil
		list := slots.FromCloud9(got, run.s.LocationGUID)
		run.out.list, run.out.rng, run.out.expanded, run.haveList = list, rng, w > 0, true
		if len(got) == 0 {
			continue // an empty page: retried, as the original
		}
		return len(run.s.offered(list)) > 0, nil // records, none to offer: the next window
	}
	return false, nil
}

// retryableInSearch: code 0, a rate limit, a timeout, a dropped
// connection — not a refused one (Cloud9 down: answered at once).
func retryableInSearch(err error) bool {
	var ce *cloud9.Error
	if errors.As(err, &ce) {
		switch {
		case ce.Kind == cloud9.KindStatus && ce.Code == 0:
			return true
		case ce.Unreached():
			return false
		}
		return ce.Retryable()
	}
	var le *cloud9.LimitedError
	return errors.As(err, &le)
}
