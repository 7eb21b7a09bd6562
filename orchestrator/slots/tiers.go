package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// MaxTier bounds a tier number: docs/reference/nodered-endpoints.md has three (30 / 60 / 90 days).
const MaxTier = 9

// TierStats is what one tier fetch cost, kept with the tier.
type TierStats struct {
	Days          int
	FetchDuration time.Duration
	Attempts      int
}

// Tier is one cached tier: the slots of every schedule view of a location
// over Range, as the last successful refresh found them (minus booked
// slots, plus restored ones).
type Tier struct {
	Entry
	N     int
	Stats TierStats
	// LastInvalidated / LastRestored are the JSON {slot, at} of the last
	// slot this tier lost (booked, refused) or regained (cancelled); ""
	// when none since the last refresh.
	LastInvalidated, LastRestored string
}

// PreGrouped are a tier's consecutive pairs and triples (the default
// window), computed once per refresh (docs/reference/nodered-endpoints.md §3): getGroupedApptSlots
// for two or three siblings reads them instead of regrouping.
type PreGrouped struct {
	FetchedAt time.Time `json:"fetchedAt"`
	Tier      int       `json:"tier"`
	Pairs     []Group   `json:"pairs"`
	Triples   []Group   `json:"triples"`
}

// NewPreGrouped groups list into pairs and triples within window.
func NewPreGrouped(tier int, fetchedAt time.Time, list []Slot, window time.Duration) PreGrouped {
	return PreGrouped{FetchedAt: fetchedAt, Tier: tier, Pairs: nonNil(Groups(list, 2, window)), Triples: nonNil(Groups(list, 3, window))}
}

func nonNil(g []Group) []Group {
	if g == nil {
		return []Group{}
	}
	return g
}

// Groups returns the pairs (n = 2) or triples (n = 3); nil otherwise.
func (p PreGrouped) Groups(n int) []Group {
	switch n {
	case 2:
		return p.Pairs
	case 3:
		return p.Triples
	}
	return nil
}

func checkTier(op, loc string, n int) error {
	if loc == "" || strings.ContainsAny(loc, ":{}|") {
		return invalid(op, "a tier needs a locationGUID without ':', '|' or braces")
	}
	if n < 1 || n > MaxTier {
		return invalid(op, "tier %d is not 1..%d", n, MaxTier)
	}
	return nil
}

// PutTier replaces tier n of r's location with list (every schedule view:
// r.ScheduleViewGUID must be empty) and its pre-grouped pairs and triples,
// in one script, kept for the cache TTL. The tier is in the registry like
// any list, so Invalidate, Restore and Find reach it.
func (c *Cache) PutTier(ctx context.Context, n int, r Range, list []Slot, st TierStats, pg *PreGrouped) error {
	const op = "slots.Cache.PutTier"
	if err := checkRange(op, r); err != nil {
		return err
	}
	if err := checkTier(op, r.LocationGUID, n); err != nil {
		return err
	}
	if r.ScheduleViewGUID != "" {
		return invalid(op, "a tier holds every schedule view of its location")
	}
	var raw []byte
	if pg != nil {
		var err error
		if raw, err = json.Marshal(pg); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	m := meta{Tier: n, FetchDurationMs: st.FetchDuration.Milliseconds(), Attempts: st.Attempts}
	return c.put(ctx, op, c.keys.tier(r.LocationGUID, n), r, m, list, c.cfg.TTL, raw)
}

// GetTier returns tier n of location loc; found is false when it was
// never put, expired or was deleted. A tier is decoded once per change:
// while its stamp (Cache.stamp: "_v" and "_meta") is unchanged the decoded
// copy of this process is returned — treat its Slots as read-only.
func (c *Cache) GetTier(ctx context.Context, loc string, n int) (t Tier, found bool, err error) {
	const op = "slots.Cache.GetTier"
	if err := checkTier(op, loc, n); err != nil {
		return Tier{}, false, err
	}
	key := c.keys.tier(loc, n)
	st, err := c.stamp(ctx, op, key)
	if err != nil {
		return Tier{}, false, err
	}
	if st == "" {
		return Tier{}, false, nil
	}
	e, m, ok := c.recall(key, st)
	if !ok {
		if e, m, found, err = c.get(ctx, op, key); err != nil || !found {
			return Tier{}, found, err
		}
		c.keep(key, e, m)
	}
	days := int(dateOf(e.Range.To).Sub(dateOf(e.Range.From)).Hours() / 24)
	return Tier{Entry: e, N: n, Stats: TierStats{Days: days, FetchDuration: time.Duration(m.FetchDurationMs) * time.Millisecond,
		Attempts: m.Attempts}, LastInvalidated: m.LastInvalidated, LastRestored: m.LastRestored}, true, nil
}

// GetPreGrouped returns tier n's pairs and triples; found is false when
// none are stored (never, expired, or dropped because a slot of the tier
// was booked or restored since: regroup the tier's list then).
func (c *Cache) GetPreGrouped(ctx context.Context, loc string, n int) (p PreGrouped, found bool, err error) {
	const op = "slots.Cache.GetPreGrouped"
	if err := checkTier(op, loc, n); err != nil {
		return PreGrouped{}, false, err
	}
	raw, err := c.rdb.Get(ctx, c.keys.tier(loc, n)+pgSuffix).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return PreGrouped{}, false, nil
	case err != nil:
		return PreGrouped{}, false, unavailable(op, err)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return PreGrouped{}, false, contracts.Wrap(contracts.CodeInternal, op, err, "corrupt pre-grouped entry")
	}
	return p, true, nil
}

// DeleteTier drops tier n of loc (and its pre-grouped entry); it reports
// whether there was one.
func (c *Cache) DeleteTier(ctx context.Context, loc string, n int) (bool, error) {
	const op = "slots.Cache.DeleteTier"
	if err := checkTier(op, loc, n); err != nil {
		return false, err
	}
	key := c.keys.tier(loc, n)
	got, err := deleteScript.Run(ctx, c.rdb, []string{c.keys.registry(), key, key + pgSuffix}).Int()
	if err != nil {
		return false, unavailable(op, err)
	}
	return got == listDeleted, nil
}

// Restore puts slot s back into every cached list that covers it (its
// location, its schedule view or all views, its date), in one script, and
// returns how many lists took it: a cancelled appointment's slot is
// offered again at once instead of after the next refresh. A list that
// does not cover it (another location, a range that ended) is left alone.
func (c *Cache) Restore(ctx context.Context, s Slot) (int, error) {
	const op = "slots.Cache.Restore"
	id, err := s.ID()
	if err != nil {
		return 0, invalid(op, "cannot identify the slot: %v", err)
	}
	if s.LocationGUID == "" {
		return 0, invalid(op, "the slot needs a locationGUID")
	}
	start, _ := s.Start() // parsed by ID
	raw, err := json.Marshal(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	now := c.cfg.Now()
	n, err := restoreScript.Run(ctx, c.rdb, []string{c.keys.registry(), c.keys.booked(id)}, now.UnixMilli(), id, raw,
		strings.ToUpper(s.LocationGUID), strings.ToUpper(s.ScheduleViewGUID), start.Format(dateISO), stamp(id, now)).Int()
	if err != nil {
		return 0, unavailable(op, err)
	}
	return n, nil
}

// stamp is the {slot, at} record of a slot that left or rejoined a list.
func stamp(id string, at time.Time) string {
	b, _ := json.Marshal(struct {
		Slot string `json:"slot"`
		At   string `json:"at"`
	}{id, at.UTC().Format(time.RFC3339Nano)})
	return string(b)
}

// Booked removes slot s from every cached list once its booking is
// confirmed (so no list offers it any more) and remembers it for
// remember, so Find still answers the slot of a bookingToken that was just
// booked: the same createAppt asked again is answered from its Done mark,
// not refused as an unknown slot. Restore forgets it. One script; it
// returns how many lists held the slot.
func (c *Cache) Booked(ctx context.Context, s Slot, remember time.Duration) (int, error) {
	const op = "slots.Cache.Booked"
	id, err := s.ID()
	if err != nil {
		return 0, invalid(op, "cannot identify the slot: %v", err)
	}
	if remember < time.Millisecond {
		return 0, invalid(op, "remember %s must be at least 1ms", remember)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	now := c.cfg.Now()
	n, err := bookedScript.Run(ctx, c.rdb, []string{c.keys.registry(), c.keys.booked(id)}, now.UnixMilli(), id,
		stamp(id, now), raw, remember.Milliseconds()).Int()
	if err != nil {
		return 0, unavailable(op, err)
	}
	return n, nil
}
