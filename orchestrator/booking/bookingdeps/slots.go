package bookingdeps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// ErrUnknownSlot is a well-formed bookingToken whose slot is not (or no
// longer) in the slot cache: the caller must fetch slots again.
var ErrUnknownSlot = errors.New("bookingToken names a slot that is not offered (fetch the slots again)")

// BookingTokens is booking.BookingTokens: the opaque token of
// docs/booking.md#the-booking-calls, checked on decode against the slot cache (fail open when Redis
// cannot answer: the booking itself still goes through Cloud9's checks).
type BookingTokens struct {
	Cache  *slots.Cache
	Logger *slog.Logger
}

var _ booking.BookingTokens = BookingTokens{}

// Encode implements booking.BookingTokens.
func (b BookingTokens) Encode(r booking.SlotRef) (string, error) {
	return slots.EncodeToken(slots.Slot{StartTime: r.StartTime, ScheduleViewGUID: r.ScheduleViewGUID,
		ScheduleColumnGUID: r.ScheduleColumnGUID, AppointmentTypeGUID: r.AppointmentTypeGUID, Minutes: r.Minutes}), nil
}

// Decode implements booking.BookingTokens.
func (b BookingTokens) Decode(ctx context.Context, token string) (booking.SlotRef, error) {
	ts, err := slots.DecodeToken(token)
	if err != nil {
		return booking.SlotRef{}, err
	}
	ref := booking.SlotRef{StartTime: ts.StartTime, ScheduleViewGUID: ts.ScheduleViewGUID,
		ScheduleColumnGUID: ts.ScheduleColumnGUID, AppointmentTypeGUID: ts.AppointmentTypeGUID, Minutes: ts.Minutes}
	if b.Cache == nil {
		return ref, nil
	}
	ctx, cancel := context.WithTimeout(ctx, decodeCheckTimeout)
	defer cancel()
	found, err := b.Cache.Contains(ctx, ts)
	switch {
	case err != nil:
		if b.Logger != nil {
			b.Logger.Warn("bookingToken: slot cache unavailable; accepting the token unchecked", "err", err)
		}
		return ref, nil
	case !found:
		return booking.SlotRef{}, ErrUnknownSlot
	}
	return ref, nil
}

// FindSlot implements booking.SlotFinder: the slot at r's view, column
// and start in the slot cache's registry — a slot of a cached list, or one
// booked here lately (slots.Cache.Booked) — with its length; the rule a
// bookingToken's decode applies, for a booking named by raw fields.
func (b BookingTokens) FindSlot(ctx context.Context, r booking.SlotRef) (booking.SlotRef, bool, error) {
	if b.Cache == nil {
		return booking.SlotRef{}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, decodeCheckTimeout)
	defer cancel()
	sl, found, err := b.Cache.Find(ctx, slots.TokenSlot{StartTime: r.StartTime, ScheduleViewGUID: r.ScheduleViewGUID,
		ScheduleColumnGUID: r.ScheduleColumnGUID})
	if err != nil || !found {
		return booking.SlotRef{}, false, err
	}
	return booking.SlotRef{StartTime: sl.StartTime, ScheduleViewGUID: sl.ScheduleViewGUID, ScheduleColumnGUID: sl.ScheduleColumnGUID,
		AppointmentTypeGUID: sl.AppointmentTypeGUID, Minutes: sl.Minutes}, true, nil
}

var _ booking.SlotFinder = BookingTokens{}

// decodeCheckTimeout bounds Decode's slot-cache check (within the
// caller's own deadline); past it the token is accepted unchecked.
const decodeCheckTimeout = 2 * time.Second

// SlotSource is booking.SlotSource: GetOnlineReservations through the
// Redis slot cache shared by every instance.
type SlotSource struct {
	Cloud9       *cloud9.Client
	Cache        *slots.Cache
	LocationGUID string // only this location's slots; empty: all
	// Columns are the schedule columns (chairs) whose slots are offered
	// (CLOUD9_SLOT_COLUMNS; the original offers its one configured
	// column); empty: every chair. The cache keeps every chair, so a
	// request naming another column is still booked.
	Columns  []string
	Days     int           // search window; default 30 (docs/reference/nodered-endpoints.md §1.4)
	FreshFor time.Duration // a cached list younger than this is used as is; default 5 min
	// MaxStale bounds the age of a cached list answered when Cloud9 fails
	// (SLOT_CACHE_MAX_STALE, default 5 min): an older one is never offered,
	// the caller is transferred instead (issue 36: a slot offered from an
	// old list during an outage could not be booked).
	MaxStale time.Duration
	// Search is how a range the cache does not answer is asked of Cloud9:
	// tries, windows, the delay between tries and the caller's budget
	// (SLOT_SEARCH_*; slots_search.go).
	Search SearchPolicy
	// Outage remembers that Cloud9 failed a whole search lately, so the
	// searches after it answer at once (nil: no memory).
	Outage *Outage
	// CacheTimeout bounds each slot-cache call (Redis); past it the cache
	// is skipped (fail open: Cloud9 answers). Default
	// booking.DefaultRedisTimeout (BOOKING_REDIS_TIMEOUT).
	CacheTimeout time.Duration
	// Now and Sleep are the clock (default time.Now, timeutil.Sleep).
	Now    func() time.Time
	Sleep  func(context.Context, time.Duration) error
	Logger *slog.Logger
}

var _ booking.SlotSource = SlotSource{}

// Slots implements booking.SlotSource.
func (s SlotSource) Slots(ctx context.Context, q booking.SlotQuery) (booking.SlotSearch, error) {
	s = s.withDefaults()
	from, err := time.Parse("01/02/2006", q.StartDate)
	if err != nil {
		return booking.SlotSearch{}, fmt.Errorf("slot search: startDate %q: %w", q.StartDate, err)
	}
	to := from.AddDate(0, 0, s.Days)
	if q.EndDate != "" {
		if end, err := time.Parse("01/02/2006", q.EndDate); err == nil && end.After(from) && end.Before(from.AddDate(0, 0, 7*28)) {
			to = end
		}
	}
	res := booking.SlotSearch{SearchRange: contracts.SearchRange{StartDate: from.Format("01/02/2006"), EndDate: to.Format("01/02/2006")}}
	r := slots.Range{LocationGUID: s.LocationGUID, ScheduleViewGUID: strings.Join(q.ScheduleViewGUIDs, ","), From: from, To: to}
	cctx, cancel := context.WithTimeout(ctx, s.CacheTimeout)
	cached, found, cerr := s.Cache.Get(cctx, r)
	cancel()
	found = cerr == nil && found
	res.Cache = booking.SlotCacheCheck{Checked: cerr == nil, Found: found}
	if found {
		res.Cache.Slots, res.Cache.Age = len(cached.Slots), s.Now().Sub(cached.FetchedAt)
		res.Cache.Stale = res.Cache.Age >= s.FreshFor
	}
	if found && !res.Cache.Stale {
		res.Cache.Used = true
		res.Slots = s.offered(cached.Slots)
		return res, nil
	}
	got, err := s.search(ctx, q.ScheduleViewGUIDs, r)
	res.Attempts, res.Retries, res.Expanded = got.attempts, max(got.attempts-1, 0), got.expanded
	if err != nil {
		if found && res.Cache.Age < s.MaxStale { // Cloud9 failing: a list this young still stands
			s.Logger.Warn("slot search: Cloud9 failed, answering from a recent cached list", "err", err, "age", res.Cache.Age)
			res.Cache.Used = true
			res.Slots = s.offered(cached.Slots)
			return res, nil
		}
		if found {
			s.Logger.Warn("slot search: Cloud9 failed and the cached list is too old to offer (SLOT_CACHE_MAX_STALE)",
				"err", err, "age", res.Cache.Age, "max_stale", s.MaxStale)
		}
		return res, err
	}
	if got.expanded {
		r = got.rng
		res.SearchRange = contracts.SearchRange{StartDate: r.From.Format("01/02/2006"), EndDate: r.To.Format("01/02/2006")}
	}
	pctx, cancel := context.WithTimeout(ctx, s.CacheTimeout)
	defer cancel()
	if err := s.Cache.Put(pctx, r, got.list); err != nil {
		s.Logger.Warn("slot search: cannot cache slots; bookingTokens of this answer are checked leniently", "err", err)
	}
	slots.Sort(got.list)
	res.Slots = s.offered(got.list)
	return res, nil
}

// offered are the slots of the offered columns, as answered.
func (s SlotSource) offered(list []slots.Slot) []contracts.ApptSlot {
	if len(s.Columns) == 0 {
		return slots.ApptSlots(list)
	}
	keep := make([]slots.Slot, 0, len(list))
	for _, sl := range list {
		for _, c := range s.Columns {
			if strings.EqualFold(sl.ScheduleColumnGUID, c) {
				keep = append(keep, sl)
				break
			}
		}
	}
	return slots.ApptSlots(keep)
}

// Invalidate implements booking.SlotInvalidator: the slot leaves every
// cached list (one Lua script), so it is neither offered nor accepted as a
// bookingToken any more.
func (s SlotSource) Invalidate(ctx context.Context, r booking.SlotRef) error {
	_, err := s.Cache.Invalidate(ctx, slots.Slot{StartTime: r.StartTime, ScheduleViewGUID: r.ScheduleViewGUID,
		ScheduleColumnGUID: r.ScheduleColumnGUID, AppointmentTypeGUID: r.AppointmentTypeGUID, Minutes: r.Minutes})
	return err
}

var _ booking.SlotInvalidator = SlotSource{}

// GroupedSlots implements booking.SlotSource; the service groups. The
// cache metadata (_cacheSource, _cacheInfo, _cacheDecision) describe the
// one tier flowgate has, its Redis slot cache.
func (s SlotSource) GroupedSlots(ctx context.Context, q booking.GroupQuery) (booking.GroupSearch, error) {
	flat, err := s.Slots(ctx, q.SlotQuery)
	g := booking.GroupSearch{Slots: flat.Slots, SearchRange: flat.SearchRange, Tier: 1, TiersSearched: []int{1},
		FromCache: flat.Cache.Used, CacheSource: SourceCloud9, Retries: flat.Retries}
	c := flat.Cache
	tier := contracts.TierCheck{Checked: c.Checked, Found: c.Found, Slots: c.Slots}
	d := &contracts.CacheDecision{Checked: c.Checked, Tiers: map[string]contracts.TierCheck{}}
	switch {
	case c.Found:
		tier.Age, tier.Status = contracts.NullString(c.Age.Round(time.Second).String()), "fresh"
		if c.Stale {
			tier.Status = "stale"
		}
	case c.Checked:
		tier.Skipped = "not_cached"
	default:
		tier.Skipped = "cache_unavailable"
	}
	d.Tiers["1"] = tier
	switch {
	case err != nil:
		d.FallbackReason = "api_error"
	case c.Used:
		one := 1
		d.UsedTier, g.CacheSource = &one, SourceSlotCache
	default:
		d.FallbackReason = "cache_miss"
		if c.Stale {
			d.FallbackReason = "cache_stale"
		}
	}
	if err == nil && len(flat.Slots) == 0 {
		d.FallbackReason, d.UsedTier = "no_slots", nil
		t := d.Tiers["1"]
		t.Skipped = "no_slots"
		d.Tiers["1"] = t
	}
	if d.UsedTier == nil {
		// The original looks further, in its tiers 2 and 3 (longer date
		// ranges); flowgate's one cache has none: listed, never checked.
		for _, n := range []string{"2", "3"} {
			d.Tiers[n] = contracts.TierCheck{Skipped: "single_tier_cache"}
		}
	}
	g.CacheDecision = d
	if err == nil {
		g.CacheInfo = &contracts.CacheInfo{Source: g.CacheSource, Tier: 1}
	}
	return g, err
}

// Sources named in _cacheSource.
const (
	SourceSlotCache = "redis_slot_cache"
	SourceCloud9    = "cloud9_api"
)

func (s SlotSource) withDefaults() SlotSource {
	s.Days = valutil.PositiveOrDefault(s.Days, 30)
	s.FreshFor = valutil.PositiveOrDefault(s.FreshFor, 5*time.Minute)
	s.MaxStale = valutil.PositiveOrDefault(s.MaxStale, DefaultMaxStale)
	s.Search = s.Search.WithDefaults()
	s.CacheTimeout = valutil.PositiveOrDefault(s.CacheTimeout, booking.DefaultRedisTimeout)
	s.Now = valutil.FuncOrDefault(s.Now, time.Now)
	s.Sleep = valutil.FuncOrDefault(s.Sleep, timeutil.Sleep)
	s.Logger = valutil.ValOrDefault(s.Logger, slog.Default())
	return s
}

// DefaultMaxStale is SLOT_CACHE_MAX_STALE's default: a cached list older
// than this is never offered in place of a failed Cloud9 read.
const DefaultMaxStale = 5 * time.Minute
