package slotcache

import (
	"context"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Source is booking.SlotSource on the tiers: a query a usable tier
// covers is answered from it; anything else from Fallback (Cloud9 through
// the flat slot cache), firing a background refresh.
type Source struct {
	R        *Refresher
	Fallback booking.SlotSource
	// Columns are the chairs offered (CLOUD9_SLOT_COLUMNS); empty: all.
	Columns []string
	// Days is a query's span without endDate (default 30, docs/reference/nodered-endpoints.md §1.4).
	Days int
	// CacheTimeout bounds each Redis read; past it the tiers are skipped.
	CacheTimeout time.Duration
	// BookedMemory is how long a booked slot's bookingToken is still
	// accepted (slots.Cache.Booked); default the fresh-cache hard limit.
	BookedMemory time.Duration
	// MaxStale is the oldest tier answered without asking Cloud9
	// (SLOT_CACHE_MAX_STALE, default 5 min): an older one goes to
	// Fallback, which asks Cloud9 and, Cloud9 failing, offers no list older
	// than the same bound. A stale tier is never offered in an outage.
	MaxStale time.Duration
}

// SkippedMaxStale is _cacheDecision.tiers.N.skipped for a tier older than
// MaxStale.
const SkippedMaxStale = "max_stale"

var (
	_ booking.SlotSource      = (*Source)(nil)
	_ booking.SlotInvalidator = (*Source)(nil)
)

// Tier statuses (cache-health and _cacheDecision).
const (
	StatusFresh         = "fresh"
	StatusStale         = "stale"
	StatusCriticalStale = "critical_stale"
	StatusExpired       = "expired"
	StatusEmpty         = "empty"
	StatusError         = "error"
)

// status names a tier of age a.
func (r *Refresher) status(a time.Duration) string {
	switch {
	case a < r.cfg.Fresh:
		return StatusFresh
	case a < r.cfg.Stale:
		return StatusStale
	case a < r.cfg.HardStale:
		return StatusCriticalStale
	}
	return StatusExpired
}

// query is a slot query's dates.
type query struct {
	from, to time.Time
	views    []string
}

func (s *Source) query(q booking.SlotQuery) (query, error) {
	from, err := time.Parse("01/02/2006", q.StartDate)
	if err != nil {
		return query{}, contracts.Errorf(contracts.CodeInvalid, "startDate %q is not MM/DD/YYYY", q.StartDate)
	}
	days := s.Days
	if days <= 0 {
		days = 30
	}
	to := from.AddDate(0, 0, days)
	if end, err := time.Parse("01/02/2006", q.EndDate); err == nil && end.After(from) && end.Before(from.AddDate(0, 0, 7*28)) {
		to = end
	}
	return query{from: from, to: to, views: q.ScheduleViewGUIDs}, nil
}

// look is one tier looked at for a query.
type look struct {
	check  contracts.TierCheck
	tier   slots.Tier
	usable bool
	age    time.Duration
}

// lookTier reads tier n and says whether it can answer qq.
func (s *Source) lookTier(ctx context.Context, n int, qq query) look {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	t, found, err := s.R.cfg.Cache.GetTier(ctx, s.R.cfg.LocationGUID, n)
	l := look{check: contracts.TierCheck{Checked: err == nil, Found: found}}
	switch {
	case err != nil:
		l.check.Skipped = "cache_unavailable"
		return l
	case !found:
		l.check.Skipped = "not_cached"
		return l
	}
	l.tier, l.age = t, s.R.cfg.Now().Sub(t.FetchedAt)
	st := s.R.status(l.age)
	l.check.Slots, l.check.Age, l.check.Status = len(t.Slots), contracts.NullString(l.age.Round(time.Second).String()), contracts.NullString(st)
	switch {
	case st == StatusExpired:
		l.check.Skipped = "hard_stale"
	case l.age >= s.maxStale():
		l.check.Skipped = SkippedMaxStale
	case qq.from.Before(t.Range.From) || qq.to.After(t.Range.To):
		l.check.Skipped = "out_of_range"
	default:
		l.usable = true
	}
	return l
}

func (s *Source) maxStale() time.Duration {
	if s.MaxStale > 0 {
		return s.MaxStale
	}
	return bookingdeps.DefaultMaxStale
}

func (s *Source) timeout() time.Duration {
	if s.CacheTimeout > 0 {
		return s.CacheTimeout
	}
	return booking.DefaultRedisTimeout
}

// pick looks at the tiers in order and returns the first usable one (its
// index in looks, -1 when none) with every look so far. A stale, missing
// or unusable tier fires the background refresh.
func (s *Source) pick(ctx context.Context, qq query, accept func(*look) bool) ([]look, int) {
	var looks []look
	refresh := false
	for _, n := range s.R.Tiers() {
		l := s.lookTier(ctx, n, qq)
		refresh = refresh || !l.check.Found || l.check.Status != StatusFresh
		if l.usable && accept(&l) {
			looks = append(looks, l)
			if refresh {
				s.R.Trigger(ctx)
			}
			return looks, len(looks) - 1
		}
		looks = append(looks, l)
	}
	if refresh {
		s.R.Trigger(ctx)
	}
	return looks, -1
}

// offered filters a tier's slots to the query's dates, views and the
// offered columns.
func (s *Source) offered(list []slots.Slot, qq query) []slots.Slot {
	out := make([]slots.Slot, 0, len(list))
	for _, sl := range list {
		t, err := sl.Start()
		if err != nil {
			continue
		}
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		if d.Before(qq.from) || d.After(qq.to) || !anyFold(qq.views, sl.ScheduleViewGUID) || !anyFold(s.Columns, sl.ScheduleColumnGUID) {
			continue
		}
		out = append(out, sl)
	}
	return out
}

// anyFold: list empty, or v in it (case-insensitively).
func anyFold(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		for _, y := range strings.Split(x, ",") {
			if strings.EqualFold(strings.TrimSpace(y), v) {
				return true
			}
		}
	}
	return false
}

// Slots implements booking.SlotSource.
func (s *Source) Slots(ctx context.Context, q booking.SlotQuery) (booking.SlotSearch, error) {
	qq, err := s.query(q)
	if err != nil {
		return booking.SlotSearch{}, err
	}
	looks, used := s.pick(ctx, qq, func(*look) bool { return true })
	if used < 0 {
		return s.Fallback.Slots(ctx, q)
	}
	l := looks[used]
	list := s.offered(l.tier.Slots, qq)
	return booking.SlotSearch{Slots: ApptSlots(list), Attempts: 0,
		SearchRange: contracts.SearchRange{StartDate: qq.from.Format("01/02/2006"), EndDate: qq.to.Format("01/02/2006")},
		Cache: booking.SlotCacheCheck{Checked: true, Found: true, Used: true, Stale: l.check.Status != StatusFresh,
			Slots: len(l.tier.Slots), Age: l.age}}, nil
}

// ApptSlots turns cached slots into the answer's slots (slots.ApptSlots).
func ApptSlots(list []slots.Slot) []contracts.ApptSlot { return slots.ApptSlots(list) }
