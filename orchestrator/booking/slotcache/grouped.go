package slotcache

import (
	"context"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// _cacheSource values: the original's two tier sources, and flowgate's
// fallback (the flat slot cache, or Cloud9 itself).
const (
	SourcePreGrouped = "pre-grouped"
	SourceFlatSlots  = "flat-slots"
	SourceSlotCache  = "redis_slot_cache"
	SourceCloud9     = "cloud9_api"
)

// grouping is what a tier gave a grouped query.
type grouping struct {
	slots      []slots.Slot
	groups     []slots.Group
	preGrouped bool
}

// GroupedSlots implements booking.SlotSource (docs/reference/nodered-endpoints.md §1.5's lookup
// order): tiers 1→N, each answered from its pre-grouped pairs / triples
// when the query is for 2 or 3 siblings in the default window, else
// grouped from its list; the first tier that yields groups answers. A
// usable tier without groups still answers its slots (individual booking
// mode) when no tier has groups. Without a usable tier: Fallback's flat
// slots, grouped by the service. _cacheDecision lists every tier looked at.
func (s *Source) GroupedSlots(ctx context.Context, q booking.GroupQuery) (booking.GroupSearch, error) {
	qq, err := s.query(q.SlotQuery)
	if err != nil {
		return booking.GroupSearch{}, err
	}
	window := time.Duration(q.TimeWindowMinutes) * time.Minute
	got := map[int]grouping{}
	last := -1 // the last usable tier's index in looks
	looks, used := s.pick(ctx, qq, func(l *look) bool {
		g := s.group(ctx, l, qq, q.NumberOfPatients, window)
		got[l.tier.N] = g
		last = l.tier.N
		if len(g.groups) == 0 {
			l.check.Skipped = "no_groups"
			return false
		}
		return true
	})
	d := &contracts.CacheDecision{Checked: true, Tiers: map[string]contracts.TierCheck{}}
	searched := make([]int, 0, len(looks))
	for i, l := range looks {
		d.Tiers[strconv.Itoa(i+1)] = l.check
		searched = append(searched, i+1)
	}
	n := 0
	switch {
	case used >= 0:
		n = used + 1
	case last > 0:
		n, d.FallbackReason = last, "no_groups"
	default:
		return s.groupedFallback(ctx, q, d, looks, searched)
	}
	g := got[n]
	src := SourceFlatSlots
	if g.preGrouped {
		src = SourcePreGrouped
	}
	d.UsedTier, d.PreGroupedHit = &n, g.preGrouped
	out := booking.GroupSearch{Slots: ApptSlots(g.slots), Groups: [][]contracts.ApptSlot{}, Tier: n, TiersSearched: searched,
		FromCache: true, CacheSource: src, CacheDecision: d,
		CacheInfo:   &contracts.CacheInfo{PreGroupedHit: g.preGrouped, Source: src, Tier: n},
		SearchRange: contracts.SearchRange{StartDate: qq.from.Format("01/02/2006"), EndDate: qq.to.Format("01/02/2006")}}
	for _, gr := range g.groups {
		out.Groups = append(out.Groups, ApptSlots(gr.Slots))
	}
	return out, nil
}

// group is tier l's answer to a grouped query: its offered slots, and the
// groups — pre-grouped when the query allows it and they are stored.
func (s *Source) group(ctx context.Context, l *look, qq query, n int, window time.Duration) grouping {
	list := s.offered(l.tier.Slots, qq)
	if (n == 2 || n == 3) && window == s.R.cfg.Window {
		cctx, cancel := context.WithTimeout(ctx, s.timeout())
		pg, found, err := s.R.cfg.Cache.GetPreGrouped(cctx, s.R.cfg.LocationGUID, l.tier.N)
		cancel()
		if err == nil && found {
			keep := map[string]bool{}
			for _, sl := range list {
				id, _ := sl.ID()
				keep[id] = true
			}
			var groups []slots.Group
			for _, gr := range pg.Groups(n) {
				if allKept(gr, keep) {
					groups = append(groups, gr)
				}
			}
			return grouping{slots: list, groups: groups, preGrouped: len(groups) > 0}
		}
	}
	return grouping{slots: list, groups: slots.Groups(list, n, window)}
}

func allKept(g slots.Group, keep map[string]bool) bool {
	for _, sl := range g.Slots {
		if id, err := sl.ID(); err != nil || !keep[id] {
			return false
		}
	}
	return true
}

// groupedFallback answers from Fallback's flat slots (the service groups
// them), with the tiers' decision.
func (s *Source) groupedFallback(ctx context.Context, q booking.GroupQuery, d *contracts.CacheDecision, looks []look,
	searched []int) (booking.GroupSearch, error) {
	d.FallbackReason = "cache_miss"
	for _, l := range looks {
		switch l.check.Skipped {
		case "hard_stale":
			d.FallbackReason = "cache_hard_stale"
		case SkippedMaxStale:
			d.FallbackReason = "cache_max_stale"
		case "out_of_range":
			d.FallbackReason = "out_of_range"
		}
	}
	flat, err := s.Fallback.Slots(ctx, q.SlotQuery)
	g := booking.GroupSearch{Slots: flat.Slots, SearchRange: flat.SearchRange, Tier: 1, TiersSearched: searched,
		FromCache: flat.Cache.Used, CacheSource: SourceCloud9, CacheDecision: d, Retries: flat.Retries}
	if flat.Cache.Used {
		g.CacheSource = SourceSlotCache
	}
	if err != nil {
		d.FallbackReason = "api_error"
		return g, err
	}
	g.CacheInfo = &contracts.CacheInfo{Source: g.CacheSource, Tier: 1}
	return g, nil
}

// Invalidate implements booking.SlotInvalidator: a slot Cloud9 refused
// leaves every list (tiers included).
func (s *Source) Invalidate(ctx context.Context, r booking.SlotRef) error {
	_, err := s.R.cfg.Cache.Invalidate(ctx, slotOf(r, ""))
	return err
}

// Booked implements booking.SlotBooker: a confirmed booking's slot
// leaves every list; its bookingToken is still accepted for BookedMemory
// (the same createAppt asked again is answered from its Done mark).
func (s *Source) Booked(ctx context.Context, r booking.SlotRef) error {
	mem := s.BookedMemory
	if mem <= 0 {
		mem = s.R.cfg.HardStale
	}
	_, err := s.R.cfg.Cache.Booked(ctx, slotOf(r, s.R.cfg.LocationGUID), mem)
	return err
}

// RestoreSlot puts a cancelled appointment's slot back into every list
// that covers it (tiers and flat lists of its location; the configured
// location when the slot names none). Lists that do not cover it are left
// alone; a slot no list covers is simply offered after the next refresh.
func (s *Source) RestoreSlot(ctx context.Context, sl slots.Slot) error {
	if sl.LocationGUID == "" {
		sl.LocationGUID = s.R.cfg.LocationGUID
	}
	_, err := s.R.cfg.Cache.Restore(ctx, sl)
	return err
}

func slotOf(r booking.SlotRef, loc string) slots.Slot {
	return slots.Slot{StartTime: r.StartTime, ScheduleViewGUID: r.ScheduleViewGUID, ScheduleColumnGUID: r.ScheduleColumnGUID,
		AppointmentTypeGUID: r.AppointmentTypeGUID, Minutes: r.Minutes, LocationGUID: loc}
}
