package availability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// ReservationReader is the Cloud9 call Cloud9Slots makes (the
// *cloud9.Client without limiter satisfies it).
type ReservationReader interface {
	GetOnlineReservations(ctx context.Context, q cloud9.ReservationQuery) ([]cloud9.Slot, error)
}

// Cloud9Slots is an OpenSlotsReader on today's Cloud9 slot path: the
// shared slot cache (slots.Cache, the same lists the IVA's getApptSlots
// reads and invalidates) in front of GetOnlineReservations. A cached list
// younger than FreshFor is used as is; Cloud9 failing, an older one is
// used only while younger than MaxStale (SLOT_CACHE_MAX_STALE): past it the
// error is answered, so no slot of an old list is offered in an outage.
type Cloud9Slots struct {
	Cloud9       ReservationReader
	Cache        *slots.Cache // optional
	LocationGUID string       // only this location's slots; empty: all
	Loc          *time.Location
	FreshFor     time.Duration // default 5 min (SLOT_CACHE_FRESH)
	MaxStale     time.Duration // default 5 min (SLOT_CACHE_MAX_STALE)
	CacheTimeout time.Duration // each cache call; past it the cache is skipped. Default 1 s
	Now          func() time.Time
	Logger       *slog.Logger
}

var _ OpenSlotsReader = Cloud9Slots{}

func (c Cloud9Slots) withDefaults() Cloud9Slots {
	c.Loc = valutil.ValOrDefault(c.Loc, time.UTC)
	c.FreshFor = valutil.PositiveOrDefault(c.FreshFor, 5*time.Minute)
	c.MaxStale = valutil.PositiveOrDefault(c.MaxStale, 5*time.Minute)
	c.CacheTimeout = valutil.PositiveOrDefault(c.CacheTimeout, time.Second)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

// OpenSlots implements OpenSlotsReader: the open slots on the calendar
// dates (in Loc) from from's to to's, whole days.
func (c Cloud9Slots) OpenSlots(ctx context.Context, from, to time.Time) ([]slots.Slot, error) {
	c = c.withDefaults()
	fromD, toD := DateIn(from, c.Loc), DateIn(to, c.Loc)
	if toD.Before(fromD) {
		return nil, nil
	}
	r := slots.Range{LocationGUID: c.LocationGUID, From: fromD, To: toD}
	var cached slots.Entry
	found := false
	if c.Cache != nil && c.LocationGUID != "" {
		cctx, cancel := context.WithTimeout(ctx, c.CacheTimeout)
		e, ok, err := c.Cache.Get(cctx, r)
		cancel()
		if err != nil {
			c.Logger.Warn("availability: slot cache unavailable; asking Cloud9", "err", err)
		}
		cached, found = e, ok && err == nil
		if found && c.Now().Sub(e.FetchedAt) < c.FreshFor {
			return e.Slots, nil
		}
	}
	fetch := func(ctx context.Context) ([]slots.Slot, error) {
		got, err := c.Cloud9.GetOnlineReservations(ctx, cloud9.ReservationQuery{StartDate: fromD, EndDate: toD.Add(24*time.Hour - time.Minute)})
		if err != nil {
			return nil, fmt.Errorf("availability: GetOnlineReservations: %w", err)
		}
		out := slots.FromCloud9(got, c.LocationGUID)
		if c.Cache != nil && c.LocationGUID != "" {
			cctx, cancel := context.WithTimeout(ctx, c.CacheTimeout)
			if err := c.Cache.Put(cctx, r, out); err != nil {
				c.Logger.Warn("availability: slot cache write failed", "err", err)
			}
			cancel()
		}
		return out, nil
	}
	var out []slots.Slot
	var err error
	if c.Cache != nil && c.LocationGUID != "" {
		out, err = c.Cache.Refresh(ctx, r, fetch) // one Cloud9 read for the callers that missed together
	} else {
		out, err = fetch(ctx)
	}
	if err != nil && found && c.Now().Sub(cached.FetchedAt) < c.MaxStale {
		level := slog.LevelWarn
		if errors.Is(err, slots.ErrFailureHeld) {
			level = slog.LevelDebug // Cloud9 was not asked: its failure was logged when it happened
		}
		c.Logger.Log(ctx, level, "availability: Cloud9 failed; answering from a recent cached list", "err", err)
		return cached.Slots, nil
	}
	return out, err
}
