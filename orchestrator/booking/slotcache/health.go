package slotcache

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Health is cache-health: each tier's status from its list and its
// refresh record, the last refreshes, and the verdict —
//
//   - unhealthy: a tier critical_stale or expired, or failing
//     HealthFailures times in a row;
//   - degraded: a tier stale, empty, or whose last refresh failed;
//   - healthy: every tier fresh.
//
// A Redis error is returned (the caller answers 503 unavailable).
func (r *Refresher) Health(ctx context.Context) (contracts.CacheHealth, error) {
	h := contracts.CacheHealth{Timestamp: contracts.JSTime(r.cfg.Now()), Tiers: []contracts.CacheTierHealth{},
		RefreshHistory: []contracts.CacheRefreshEntry{},
		Config: contracts.CacheHealthConfig{RefreshIntervalMs: r.cfg.Interval.Milliseconds(), MaxCacheAgeMs: r.cfg.Fresh.Milliseconds(),
			StaleMs: r.cfg.Stale.Milliseconds(), HardStaleMs: r.cfg.HardStale.Milliseconds(),
			BusinessHours: DescribeSchedule(r.cfg.Schedule), RefreshSchedule: r.cfg.Schedule}}
	for _, n := range r.Tiers() {
		t, err := r.tierHealth(ctx, n)
		if err != nil {
			return contracts.CacheHealth{}, err
		}
		h.Tiers = append(h.Tiers, t)
	}
	hist, err := r.history(ctx)
	if err != nil {
		return contracts.CacheHealth{}, err
	}
	h.RefreshHistory = hist
	h.RefreshStats = stats(hist)
	h.Summary, h.Status = r.verdict(h.Tiers)
	return h, nil
}

func (r *Refresher) verdict(tiers []contracts.CacheTierHealth) (contracts.CacheHealthSummary, string) {
	var s contracts.CacheHealthSummary
	status := contracts.CacheHealthy
	worse := func(to string) {
		if to == contracts.CacheUnhealthy || status == contracts.CacheHealthy {
			status = to
		}
	}
	for _, t := range tiers {
		s.TotalSlots += t.SlotCount
		s.MaxConsecutiveFailures = max(s.MaxConsecutiveFailures, t.ConsecutiveFailures)
		switch t.Status {
		case StatusStale:
			s.StaleTiers++
			worse(contracts.CacheDegraded)
		case StatusCriticalStale, StatusExpired:
			s.CriticalStaleTiers++
			worse(contracts.CacheUnhealthy)
		case StatusEmpty:
			worse(contracts.CacheDegraded)
		}
		if t.ConsecutiveFailures > 0 {
			s.FailedTiers++
			worse(contracts.CacheDegraded)
		}
		if t.ConsecutiveFailures >= r.cfg.HealthFailures {
			worse(contracts.CacheUnhealthy)
		}
	}
	return s, status
}

// tierHealth is tier n's list and refresh record.
func (r *Refresher) tierHealth(ctx context.Context, n int) (contracts.CacheTierHealth, error) {
	th := contracts.CacheTierHealth{Tier: n, TierDays: r.cfg.TierDays[n-1], Status: StatusEmpty, SlotsByDate: []contracts.DateCount{}}
	rec, err := r.cfg.Redis.HGetAll(ctx, r.keys.health(r.cfg.LocationGUID, n)).Result()
	if err != nil {
		return th, contracts.Wrap(contracts.CodeUnavailable, "slotcache.Health", err, "slot cache unavailable")
	}
	th.ConsecutiveFailures, _ = strconv.Atoi(rec["consecutiveFailures"])
	th.LastError, th.LastSuccess = nonEmpty(rec["lastError"]), nonEmpty(rec["lastSuccess"])
	t, found, err := r.cfg.Cache.GetTier(ctx, r.cfg.LocationGUID, n)
	if err != nil {
		return th, err
	}
	if found {
		age := r.cfg.Now().Sub(t.FetchedAt)
		secs := int64(age.Seconds())
		fetched := contracts.JSTime(t.FetchedAt)
		offered := r.offeredChairs(t.Slots)
		th.Status, th.SlotCount, th.AgeSeconds, th.FetchedAt = r.status(age), len(offered), &secs, &fetched
		th.SlotCountAllChairs = len(t.Slots)
		th.DateRange = &contracts.DateRange{Start: slots.Date(t.Range.From), End: slots.Date(t.Range.To)}
		th.SlotsByDate = byDate(offered)
		th.LastInvalidatedSlot, th.LastInvalidation = stampParts(t.LastInvalidated)
		th.LastRestoredSlot, th.LastRestoration = stampParts(t.LastRestored)
	}
	if th.ConsecutiveFailures > 0 && (th.Status == StatusEmpty || th.Status == StatusFresh) {
		th.Status = StatusError
	}
	return th, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// stampParts splits a {slot, at} record.
func stampParts(raw string) (slot, at *string) {
	var v struct{ Slot, At string }
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil {
		return nil, nil
	}
	return nonEmpty(v.Slot), nonEmpty(v.At)
}

func byDate(list []slots.Slot) []contracts.DateCount {
	out := []contracts.DateCount{}
	for _, s := range list { // sorted by start
		t, err := s.Start()
		if err != nil {
			continue
		}
		d := slots.Date(t)
		if len(out) > 0 && out[len(out)-1].Date == d {
			out[len(out)-1].Count++
			continue
		}
		out = append(out, contracts.DateCount{Date: d, Count: 1})
	}
	return out
}

func (r *Refresher) history(ctx context.Context) ([]contracts.CacheRefreshEntry, error) {
	raws, err := r.cfg.Redis.LRange(ctx, r.keys.history(r.cfg.LocationGUID), 0, int64(r.cfg.HistoryLen)-1).Result()
	if err != nil {
		return nil, contracts.Wrap(contracts.CodeUnavailable, "slotcache.Health", err, "slot cache unavailable")
	}
	out := make([]contracts.CacheRefreshEntry, 0, len(raws))
	for _, raw := range raws {
		var e contracts.CacheRefreshEntry
		if json.Unmarshal([]byte(raw), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

func stats(hist []contracts.CacheRefreshEntry) contracts.CacheRefreshStats {
	var c contracts.CacheRefreshCounts
	for i := 0; i < len(hist) && i < 20; i++ {
		if hist[i].Success {
			c.Success++
		} else {
			c.Failure++
		}
	}
	c.SuccessRate = "0.0%"
	if total := c.Success + c.Failure; total > 0 {
		c.SuccessRate = fmt.Sprintf("%.1f%%", 100*float64(c.Success)/float64(total))
	}
	return contracts.CacheRefreshStats{Last20Refreshes: c}
}

// TierKey names tier n's Redis key, for the operation answers.
func (r *Refresher) TierKey(n int) string {
	return r.cfg.KeyPrefix + ":{slots}:t:" + upper(r.cfg.LocationGUID) + ":" + strconv.Itoa(n)
}

// Clear deletes the tiers named (all when none) and their refresh
// records, and returns the tiers that existed.
func (r *Refresher) Clear(ctx context.Context, tiers []int) ([]int, error) {
	if len(tiers) == 0 {
		tiers = r.Tiers()
	}
	var gone []int
	for _, n := range tiers {
		if n < 1 || n > len(r.cfg.TierDays) {
			return nil, contracts.Errorf(contracts.CodeInvalid, "tier %d is not 1..%d", n, len(r.cfg.TierDays))
		}
	}
	for _, n := range tiers {
		ok, err := r.cfg.Cache.DeleteTier(ctx, r.cfg.LocationGUID, n)
		if err != nil {
			return gone, err
		}
		if err := r.cfg.Redis.Del(ctx, r.keys.health(r.cfg.LocationGUID, n)).Err(); err != nil {
			return gone, contracts.Wrap(contracts.CodeUnavailable, "slotcache.Clear", err, "slot cache unavailable")
		}
		if ok {
			gone = append(gone, n)
		}
	}
	return gone, nil
}

// ClearLists deletes the location's search-range lists (the fallback's
// cached answers, slots.Cache.DeleteLists), so DELETE cache leaves no list
// the booking path could offer; it returns how many it deleted.
func (r *Refresher) ClearLists(ctx context.Context) (int, error) {
	n, err := r.cfg.Cache.DeleteLists(ctx, r.cfg.LocationGUID)
	if err != nil {
		return 0, fmt.Errorf("slotcache.ClearLists: %w", err)
	}
	return n, nil
}

// Tier returns tier n (for the operation endpoints).
func (r *Refresher) Tier(ctx context.Context, n int) (slots.Tier, bool, error) {
	if n < 1 || n > len(r.cfg.TierDays) {
		return slots.Tier{}, false, contracts.Errorf(contracts.CodeInvalid, "tier %d is not 1..%d", n, len(r.cfg.TierDays))
	}
	return r.cfg.Cache.GetTier(ctx, r.cfg.LocationGUID, n)
}

// HardStale is the configured hard limit (expiresAt of a tier).
func (r *Refresher) HardStale() time.Duration { return r.cfg.HardStale }

// Now is the refresher's clock.
func (r *Refresher) Now() time.Time { return r.cfg.Now() }
