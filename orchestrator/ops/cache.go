package ops

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// cacheHealth is GET cache-health: 503 when unhealthy (the body says why).
func (h *Handlers) cacheHealth(c *fiber.Ctx) error {
	ctx := c.UserContext()
	hl, err := h.cfg.Refresher.Health(ctx)
	if err != nil {
		return asUnavailable("ops.cacheHealth", err)
	}
	if hl.Status == contracts.CacheUnhealthy {
		c.Status(fiber.StatusServiceUnavailable)
	}
	return c.JSON(hl)
}

// asUnavailable keeps a contracts error's code, anything else is 503.
func asUnavailable(op string, err error) error {
	var ce *contracts.Error
	if errors.As(err, &ce) {
		return err
	}
	return unavailable(op, err)
}

// tiersParam reads the tiers asked for: "tier" from the query string or a
// JSON body {tier} (a number or an array); none means all. A tier asked
// twice counts once, so the list never exceeds the number of tiers.
func (h *Handlers) tiersParam(c *fiber.Ctx) ([]int, error) {
	var out []int
	if q := c.Query("tier"); q != "" {
		for _, p := range strings.Split(q, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return nil, contracts.Errorf(contracts.CodeInvalid, "tier must be a number 1..%d", len(h.cfg.Refresher.Tiers()))
			}
			out = append(out, n)
		}
	}
	if body := strings.TrimSpace(string(c.Body())); body != "" {
		var req struct {
			Tier any `json:"tier"`
		}
		if err := contracts.DecodeJSON(c.Body(), &req); err != nil {
			return nil, err
		}
		got, err := tierValues(req.Tier)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	max := len(h.cfg.Refresher.Tiers())
	seen := make([]bool, max+1)
	uniq := out[:0] // each tier once, in the order asked: never more than max
	for _, n := range out {
		if n < 1 || n > max {
			return nil, contracts.Errorf(contracts.CodeInvalid, "tier must be a number 1..%d", max)
		}
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	return uniq, nil
}

func tierValues(v any) ([]int, error) {
	bad := contracts.Errorf(contracts.CodeInvalid, "tier must be a number or an array of numbers")
	one := func(x any) (int, error) {
		n, ok := x.(interface{ Int64() (int64, error) })
		if !ok {
			return 0, bad
		}
		i, err := n.Int64()
		if err != nil || i > 1<<20 || i < -1<<20 {
			return 0, bad
		}
		return int(i), nil
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]int, 0, len(x))
		for _, e := range x {
			n, err := one(e)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	n, err := one(v)
	if err != nil {
		return nil, err
	}
	return []int{n}, nil
}

// refresh is POST cache/refresh {tier?} and POST
// /test/redis-slot-cache/trigger: the tiers fetched now, one after the
// other; 409 conflict when a refresh is already running.
func (h *Handlers) refresh(c *fiber.Ctx) error {
	tiers, err := h.tiersParam(c)
	if err != nil {
		return err
	}
	rep, err := h.cfg.Refresher.Refresh(context.WithoutCancel(c.UserContext()), tiers)
	switch {
	case errors.Is(err, slotcache.ErrBusy):
		return contracts.Errorf(contracts.CodeConflict, "a refresh is already running; try again when it is done")
	case err != nil:
		return asUnavailable("ops.refresh", err)
	}
	resp := contracts.CacheRefreshResponse{Success: rep.OK(), Timestamp: contracts.JSTime(h.cfg.Refresher.Now()),
		Results: []contracts.CacheRefreshTier{}, TotalDurationMs: rep.Duration.Milliseconds()}
	for _, t := range rep.Tiers {
		rt := contracts.CacheRefreshTier{Tier: t.Tier, TierDays: t.Days, Success: t.Success, SlotCount: t.SlotCount,
			Retries: max(t.Attempts-1, 0), FetchDurationMs: t.Duration.Milliseconds(), RedisKey: h.cfg.Refresher.TierKey(t.Tier),
			RedisStored: t.Stored}
		if t.Err != nil {
			msg := "refresh failed"
			rt.Error = &msg
		}
		resp.Results = append(resp.Results, rt)
		resp.TotalRetries += rt.Retries
		resp.TotalSlotsCached += t.SlotCount
	}
	resp.Tiers = resp.Results
	resp.Message = strconv.Itoa(len(rep.Tiers)-countFailed(rep)) + " of " + strconv.Itoa(len(rep.Tiers)) + " tiers refreshed"
	return c.JSON(resp)
}

func countFailed(rep slotcache.Report) int {
	n := 0
	for _, t := range rep.Tiers {
		if !t.Success {
			n++
		}
	}
	return n
}

// trigger is POST cache/trigger: one background refresh, at once.
func (h *Handlers) trigger(c *fiber.Ctx) error {
	ctx := c.UserContext()
	fired := h.cfg.Refresher.Trigger(ctx)
	resp := contracts.CacheTriggerResponse{Success: true, Triggered: fired, TriggeredAt: contracts.JSTime(h.cfg.Refresher.Now()),
		Message: "background refresh of every tier started", Note: "see cache-health for its outcome"}
	if !fired {
		resp.Message = "a background refresh was fired lately or is running; not started again"
	}
	return c.JSON(resp)
}

// clear is DELETE cache?tier= and the test aliases: the tiers (all when
// none named) and their refresh records are deleted; naming no tier also
// deletes the search-range lists, so nothing cached is offered after it.
func (h *Handlers) clear(c *fiber.Ctx) error {
	tiers, err := h.tiersParam(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	gone, err := h.cfg.Refresher.Clear(ctx, tiers)
	if err != nil {
		return asUnavailable("ops.clear", err)
	}
	lists := 0
	if len(tiers) == 0 {
		tiers = h.cfg.Refresher.Tiers()
		if lists, err = h.cfg.Refresher.ClearLists(ctx); err != nil {
			return asUnavailable("ops.clear", err)
		}
	}
	resp := contracts.CacheClearResponse{ListsCleared: lists, Success: true, Cleared: true, Timestamp: contracts.JSTime(h.cfg.Refresher.Now()),
		Results: []contracts.CacheClearTier{}, KeysCleared: []string{}, EntriesRemoved: len(gone),
		Message: strconv.Itoa(len(gone)) + " tiers cleared", Note: "the next refresh (or a slot request) fills them again"}
	was := map[int]bool{}
	for _, n := range gone {
		was[n] = true
		resp.KeysCleared = append(resp.KeysCleared, h.cfg.Refresher.TierKey(n))
	}
	for _, n := range tiers {
		st := "empty"
		if was[n] {
			st = "cleared"
		}
		resp.Results = append(resp.Results, contracts.CacheClearTier{Tier: n, Status: st})
	}
	resp.KeysRemoved = resp.KeysCleared
	return c.JSON(resp)
}

// status is GET /test/slot-cache/status and /test/redis-slot-cache/status.
func (h *Handlers) status(c *fiber.Ctx) error {
	ctx := c.UserContext()
	resp := contracts.CacheStatusResponse{CacheKeys: []string{}, Entries: []contracts.CacheStatusEntry{},
		Hint: "GET cache-health for freshness and refresh history"}
	now := h.cfg.Refresher.Now()
	for _, n := range h.cfg.Refresher.Tiers() {
		t, found, err := h.cfg.Refresher.Tier(ctx, n)
		if err != nil {
			return asUnavailable("ops.status", err)
		}
		if !found {
			continue
		}
		key := h.cfg.Refresher.TierKey(n)
		exp := t.FetchedAt.Add(h.cfg.Refresher.HardStale())
		e := contracts.CacheStatusEntry{CacheKey: key, LocationGUID: t.Range.LocationGUID,
			DateRange: t.Range.From.Format(time.DateOnly) + ".." + t.Range.To.Format(time.DateOnly),
			FetchedAt: contracts.JSTime(t.FetchedAt), ExpiresAt: contracts.JSTime(exp), IsExpired: !now.Before(exp),
			SlotCount: len(t.Slots), FetchDurationMs: t.Stats.FetchDuration.Milliseconds()}
		resp.CacheKeys = append(resp.CacheKeys, key)
		resp.Entries = append(resp.Entries, e)
		resp.Stats.TotalEntries++
		resp.Stats.TotalSlotsCached += e.SlotCount
		if e.IsExpired {
			resp.Stats.ExpiredEntries++
		} else {
			resp.Stats.ValidEntries++
		}
	}
	resp.Message = strconv.Itoa(resp.Stats.TotalEntries) + " tiers cached"
	return c.JSON(resp)
}

// prefetch is POST /test/slot-cache/prefetch: tier 1 fetched now.
func (h *Handlers) prefetch(c *fiber.Ctx) error {
	rep, err := h.cfg.Refresher.Refresh(context.WithoutCancel(c.UserContext()), []int{1})
	switch {
	case errors.Is(err, slotcache.ErrBusy):
		return contracts.Errorf(contracts.CodeConflict, "a refresh is already running; try again when it is done")
	case err != nil:
		return asUnavailable("ops.prefetch", err)
	case !rep.OK():
		return contracts.Errorf(contracts.CodeUnavailable, "Cloud9 could not be read; see cache-health")
	}
	t := rep.Tiers[0]
	return c.JSON(contracts.CachePrefetchResponse{Success: true, CacheKey: h.cfg.Refresher.TierKey(1), SlotCount: t.SlotCount,
		FetchDurationMs: t.Duration.Milliseconds(), ExpiresAt: contracts.JSTime(h.cfg.Refresher.Now().Add(h.cfg.Refresher.HardStale())),
		Debug: contracts.PrefetchDebug{RawRecords: t.AllChairs, AfterLocationFilter: t.AllChairs, AfterChairFilter: t.SlotCount}})
}

// query is POST /test/slot-cache/query {tier?, startDate?, endDate?,
// scheduleViewGUIDs?}: a tier's slots (tier 1 by default), filtered.
func (h *Handlers) query(c *fiber.Ctx) error {
	start := h.cfg.Refresher.Now()
	var req contracts.CacheQueryRequest
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		if err := contracts.DecodeJSON(c.Body(), &req); err != nil {
			return err
		}
	}
	n := max(req.Tier, 1)
	if n > len(h.cfg.Refresher.Tiers()) || req.Tier < 0 {
		return contracts.Errorf(contracts.CodeInvalid, "tier must be a number 1..%d", len(h.cfg.Refresher.Tiers()))
	}
	from, to, err := dates(req.StartDate, req.EndDate)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	t, found, err := h.cfg.Refresher.Tier(ctx, n)
	if err != nil {
		return asUnavailable("ops.query", err)
	}
	resp := contracts.CacheQueryResponse{FromCache: found, CacheKey: h.cfg.Refresher.TierKey(n), Slots: []contracts.ApptSlot{}}
	if found {
		list := filter(t.Slots, from, to, req.ScheduleViewGUIDs)
		resp.Slots, resp.SlotCount = slotcache.ApptSlots(list), len(list)
		resp.CachedAt, resp.ExpiresAt = contracts.JSTime(t.FetchedAt), contracts.JSTime(t.FetchedAt.Add(h.cfg.Refresher.HardStale()))
		resp.OriginalFetchDurationMs = t.Stats.FetchDuration.Milliseconds()
	}
	resp.QueryDurationMs = h.cfg.Refresher.Now().Sub(start).Milliseconds()
	return c.JSON(resp)
}

func dates(start, end string) (from, to time.Time, err error) {
	parse := func(field, s string) (time.Time, error) {
		if s == "" {
			return time.Time{}, nil
		}
		for _, l := range []string{"01/02/2006", "1/2/2006", time.DateOnly} {
			if t, err := time.Parse(l, s); err == nil {
				return t, nil
			}
		}
		return time.Time{}, contracts.Errorf(contracts.CodeInvalid, "%s must be MM/DD/YYYY or YYYY-MM-DD", field)
	}
	if from, err = parse("startDate", start); err != nil {
		return
	}
	to, err = parse("endDate", end)
	return
}

func filter(list []slots.Slot, from, to time.Time, views []string) []slots.Slot {
	out := make([]slots.Slot, 0, len(list))
	for _, s := range list {
		t, err := s.Start()
		if err != nil {
			continue
		}
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		if (!from.IsZero() && d.Before(from)) || (!to.IsZero() && d.After(to)) || !inFold(views, s.ScheduleViewGUID) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func inFold(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
