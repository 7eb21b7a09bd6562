package slotcache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/scheduler"
)

// A refresh fills every tier (growing ranges, pre-grouped pairs and
// triples) and cache-health is healthy with each tier fresh.
func TestRefreshFillsTiers(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil)
	ctx := context.Background()
	rep, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, rep.Tiers, 3)
	require.Equal(t, 3, e.reads(), "one GetOnlineReservations per tier")
	prev := 0
	for i, days := range []int{30, 60, 90} {
		tr := rep.Tiers[i]
		require.Equal(t, days, tr.Days)
		require.Greater(t, tr.SlotCount, prev, "tier %d spans more days than the one before", i+1)
		prev = tr.SlotCount
		tier, found, err := a.r.Tier(ctx, i+1)
		require.NoError(t, err)
		require.True(t, found)
		require.Len(t, tier.Slots, tr.AllChairs, "the tier keeps every chair")
		require.Less(t, tr.SlotCount, tr.AllChairs, "slotCount counts the configured chair only, as the original")
	}
	h, err := a.r.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, contracts.CacheHealthy, h.Status)
	require.Len(t, h.Tiers, 3)
	for i, th := range h.Tiers {
		require.Equal(t, slotcache.StatusFresh, th.Status)
		require.NotEmpty(t, th.SlotsByDate)
		require.Equal(t, rep.Tiers[i].SlotCount, th.SlotCount)
		require.Equal(t, rep.Tiers[i].AllChairs, th.SlotCountAllChairs)
		sum := 0
		for _, d := range th.SlotsByDate {
			sum += d.Count
		}
		require.Equal(t, th.SlotCount, sum, "slotsByDate counts the same chair")
	}
	require.Equal(t, 3, h.RefreshStats.Last20Refreshes.Success)
	require.Equal(t, "100.0%", h.RefreshStats.Last20Refreshes.SuccessRate)
	require.Len(t, h.RefreshHistory, 3)
}

// Refresh failures degrade cache-health: healthy → degraded (one failed
// refresh, the tiers keep their lists and are still answered) →
// unhealthy (SLOT_CACHE_HEALTH_FAILURES failures in a row); a good
// refresh makes it healthy again. Age alone does the same: stale →
// degraded, critical_stale → unhealthy.
func TestHealthDegradesWithFailuresAndAge(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, func(c *slotcache.Config) { c.Attempts = 1 })
	ctx := context.Background()
	status := func() (string, contracts.CacheHealth) {
		h, err := a.r.Health(ctx)
		require.NoError(t, err)
		return h.Status, h
	}
	_, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	st, _ := status()
	require.Equal(t, contracts.CacheHealthy, st)

	e.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1, Procedures: []string{cloud9.ProcGetOnlineReservations}})
	rep, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	require.False(t, rep.OK())
	st, h := status()
	require.Equal(t, contracts.CacheDegraded, st)
	require.Equal(t, 3, h.Summary.FailedTiers)
	require.Equal(t, 1, h.Summary.MaxConsecutiveFailures)
	require.NotNil(t, h.Tiers[0].LastError)
	require.Positive(t, h.Tiers[0].SlotCount, "a failed refresh keeps the last list")
	got, err := a.src.Slots(ctx, booking.SlotQuery{StartDate: e.day(1)})
	require.NoError(t, err)
	require.True(t, got.Cache.Used, "the kept list is still answered")

	for range 2 {
		_, err = a.r.Refresh(ctx, nil)
		require.NoError(t, err)
	}
	st, h = status()
	require.Equal(t, contracts.CacheUnhealthy, st)
	require.Equal(t, 3, h.Summary.MaxConsecutiveFailures)
	require.Equal(t, 3, h.RefreshStats.Last20Refreshes.Success)
	require.Equal(t, 9, h.RefreshStats.Last20Refreshes.Failure)

	e.sim.SetFaults(cloud9sim.Faults{})
	_, err = a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	st, _ = status()
	require.Equal(t, contracts.CacheHealthy, st, "one good refresh clears the failures")

	e.clock.Advance(6 * time.Minute)
	st, h = status()
	require.Equal(t, contracts.CacheDegraded, st)
	require.Equal(t, 3, h.Summary.StaleTiers)
	e.clock.Advance(10 * time.Minute)
	st, h = status()
	require.Equal(t, contracts.CacheUnhealthy, st)
	require.Equal(t, 3, h.Summary.CriticalStaleTiers)
}

// A stale tier is still answered while younger than SLOT_CACHE_MAX_STALE
// (raised here to the hard limit), and however many requests see it on
// however many instances, exactly one background refresh runs.
func TestStaleTierAnswersAndRefreshesOnce(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a, b := e.instance(t, nil), e.instance(t, nil)
	a.src.MaxStale, b.src.MaxStale = slotcache.DefaultHardStale, slotcache.DefaultHardStale
	// 40 requests at once on a shared machine: a Redis read slower than
	// the default bound would send one to Cloud9 (fail open).
	a.src.CacheTimeout, b.src.CacheTimeout = 10*time.Second, 10*time.Second
	ctx := context.Background()
	_, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	before := e.reads()
	e.clock.Advance(6 * time.Minute) // stale, not past the hard limit

	var wg sync.WaitGroup
	for i := range 40 {
		src := a.src
		if i%2 == 1 {
			src = b.src
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := src.Slots(ctx, booking.SlotQuery{StartDate: e.day(1)})
			if err != nil || !got.Cache.Used || !got.Cache.Stale || len(got.Slots) == 0 {
				t.Errorf("a stale tier must be answered: err %v, cache %+v, %d slots", err, got.Cache, len(got.Slots))
			}
		}()
	}
	wg.Wait()
	a.r.Wait()
	b.r.Wait()
	require.Equal(t, before+3, e.reads(), "one background refresh of 3 tiers, not one per request or per instance")
	h, err := a.r.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, contracts.CacheHealthy, h.Status, "the background refresh made the tiers fresh")
}

// Two instances whose refresh job fires on the same ticks refresh once
// per tick (the scheduler's lock), and the refresh lease is released
// after each run (the original's lock lingered 120 s).
func TestTwoInstancesRefreshOncePerTick(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	scheds := make([]*scheduler.Scheduler, 2)
	for i := range scheds {
		in := e.instance(t, nil)
		s, err := scheduler.New(scheduler.Config{Redis: e.db.Client, Now: e.clock.Now})
		require.NoError(t, err)
		require.NoError(t, s.Register("slot_cache_refresh", "@every 5m", in.r))
		scheds[i] = s
	}
	ctx := context.Background()
	for tick := range 3 {
		at := e.clock.Now()
		var wg sync.WaitGroup
		ran := make([]bool, 2)
		for i, s := range scheds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.RunNow(ctx, "slot_cache_refresh", at)
				require.NoError(t, err)
				ran[i] = r
			}()
		}
		wg.Wait()
		require.NotEqual(t, ran[0], ran[1], "tick %d ran on exactly one instance", tick)
		require.Equal(t, 3*(tick+1), e.reads(), "tick %d: 3 tiers once", tick)
		require.Zero(t, e.db.Client.Exists(ctx, "flowgate:{slots}:refresh:lease").Val(), "the refresh lease is released")
		e.clock.Advance(5 * time.Minute)
	}
}

// Refreshes of two instances, back to back, against a simulator that
// answers code 8 past 5 reads per minute (time-scaled: 5 per second):
// through the shared limiter not one code 8; without it, code 8.
func TestRefreshesProvokeNoCode8(t *testing.T) {
	limit := cloud9sim.Rate{N: 5, Per: time.Minute}
	e := newEnv(t, cloud9sim.Config{Scale: 60, ReadLimit: limit})
	shared := cloud9.NewRedisLimiter(e.db.Client, map[string]cloud9.Rate{cloud9.ProcGetOnlineReservations: {N: 5, Per: time.Second}},
		cloud9.Rate{}, cloud9.WithMargin(20*time.Millisecond))
	// Short tiers: each read takes milliseconds, so only the limiter
	// spaces them.
	limited := func(c *slotcache.Config) { c.Limiter, c.Attempts, c.TierDays = shared, 1, []int{1, 2, 3} }
	a, b := e.instance(t, limited), e.instance(t, limited)
	ctx := context.Background()
	for i := range 4 { // 12 reads: more than two windows' worth
		in := a
		if i%2 == 1 {
			in = b
		}
		rep, err := in.r.Refresh(ctx, nil)
		require.NoError(t, err)
		require.True(t, rep.OK(), "refresh %d: %+v", i, rep.Tiers)
	}
	require.Equal(t, 12, e.reads())
	require.Zero(t, e.sim.RateLimited(cloud9.ProcGetOnlineReservations), "no code 8 through the limiter")

	// The control: the same reads at once, without the limiter, are refused.
	var wg sync.WaitGroup
	from := e.clock.Now().AddDate(0, 0, 1)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.client.GetOnlineReservations(ctx, cloud9.ReservationQuery{StartDate: from, EndDate: from.Add(10 * time.Hour)})
		}()
	}
	wg.Wait()
	require.Positive(t, e.sim.RateLimited(cloud9.ProcGetOnlineReservations), "the drill detects code 8")
}

// getGroupedApptSlots' lookup: pre-grouped pairs of tier 1; a range past
// tier 1 from tier 2 (tier 1 listed out_of_range); no tiers: the fallback,
// every tier listed not_cached, and one background refresh.
func TestGroupedDecision(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil)
	ctx := context.Background()
	q := func(start, end string) booking.GroupQuery {
		return booking.GroupQuery{SlotQuery: booking.SlotQuery{StartDate: start, EndDate: end}, NumberOfPatients: 2, TimeWindowMinutes: 40}
	}
	g, err := a.src.GroupedSlots(ctx, q(e.day(1), ""))
	require.NoError(t, err)
	require.Equal(t, slotcache.SourceCloud9, g.CacheSource, "cold tiers: the fallback (Cloud9 through the flat cache)")
	require.Nil(t, g.CacheDecision.UsedTier)
	require.Equal(t, contracts.NullString("cache_miss"), g.CacheDecision.FallbackReason)
	for _, n := range []string{"1", "2", "3"} {
		require.Equal(t, contracts.NullString("not_cached"), g.CacheDecision.Tiers[n].Skipped)
	}
	a.r.Wait() // the background refresh it fired

	g, err = a.src.GroupedSlots(ctx, q(e.day(2), e.day(5)))
	require.NoError(t, err)
	require.Equal(t, 1, *g.CacheDecision.UsedTier)
	require.True(t, g.CacheDecision.PreGroupedHit)
	require.Equal(t, slotcache.SourcePreGrouped, g.CacheSource)
	require.NotEmpty(t, g.Groups)
	for _, grp := range g.Groups {
		require.Len(t, grp, 2)
		require.Equal(t, cloud9sim.Chair8GUID, grp[0].ScheduleColumnGUID, "only the offered chair")
	}
	require.Equal(t, contracts.NullString(slotcache.StatusFresh), g.CacheDecision.Tiers["1"].Status)

	g, err = a.src.GroupedSlots(ctx, booking.GroupQuery{SlotQuery: booking.SlotQuery{StartDate: e.day(40), EndDate: e.day(45)},
		NumberOfPatients: 3, TimeWindowMinutes: 90})
	require.NoError(t, err)
	require.Equal(t, 2, *g.CacheDecision.UsedTier)
	require.False(t, g.CacheDecision.PreGroupedHit, "another window: regrouped from the list")
	require.Equal(t, slotcache.SourceFlatSlots, g.CacheSource)
	require.Equal(t, contracts.NullString("out_of_range"), g.CacheDecision.Tiers["1"].Skipped)
	require.Equal(t, []int{1, 2}, g.TiersSearched)
}

// A confirmed booking's slot leaves every list (tiers included) but its
// bookingToken is still found; a cancellation restores it to the tiers
// that cover it; cache-health shows both.
func TestBookedAndRestored(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil)
	ctx := context.Background()
	_, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	t1, _, err := a.r.Tier(ctx, 1)
	require.NoError(t, err)
	s := t1.Slots[0]
	ref := booking.SlotRef{StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
		AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: s.Minutes}
	require.NoError(t, a.src.Booked(ctx, ref))
	for n := 1; n <= 3; n++ {
		tier, _, err := a.r.Tier(ctx, n)
		require.NoError(t, err)
		require.NotContains(t, ids(tier.Slots), id(t, s), "tier %d no longer offers the booked slot", n)
	}
	cache, err := slots.NewCache(e.db.Client, slots.CacheConfig{Now: e.clock.Now})
	require.NoError(t, err)
	found, err := cache.Contains(ctx, s.TokenSlot())
	require.NoError(t, err)
	require.True(t, found, "the booked slot's bookingToken is still accepted (idempotent repeat)")
	_, pg, err := cache.GetPreGrouped(ctx, loc, 1)
	require.NoError(t, err)
	require.False(t, pg, "the tier's pairs were dropped with the slot (regrouped on read)")

	require.NoError(t, a.src.RestoreSlot(ctx, s))
	for n := 1; n <= 3; n++ {
		tier, _, err := a.r.Tier(ctx, n)
		require.NoError(t, err)
		require.Contains(t, ids(tier.Slots), id(t, s), "tier %d offers the cancelled slot again", n)
	}
	h, err := a.r.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, id(t, s), *h.Tiers[0].LastInvalidatedSlot)
	require.Equal(t, id(t, s), *h.Tiers[0].LastRestoredSlot)
	require.NotNil(t, h.Tiers[0].LastRestoration)

	// Outside every tier (a year out) a restore changes nothing.
	far := s
	far.StartTime = "1/5/2099 9:00:00 AM"
	require.NoError(t, a.src.RestoreSlot(ctx, far))
	t1b, _, err := a.r.Tier(ctx, 1)
	require.NoError(t, err)
	require.NotContains(t, ids(t1b.Slots), id(t, far))
}

// Bad input changes nothing: an unknown tier, a refresh already running,
// a bad config.
func TestBadInput(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil)
	ctx := context.Background()
	_, err := a.r.Refresh(ctx, []int{4})
	require.ErrorContains(t, err, "tier 4")
	_, err = a.r.Clear(ctx, []int{0})
	require.Error(t, err)
	require.Zero(t, e.reads())
	require.NoError(t, e.db.Client.Set(ctx, "flowgate:{slots}:refresh:lease", "someone-else", time.Minute).Err())
	_, err = a.r.Refresh(ctx, nil)
	require.ErrorIs(t, err, slotcache.ErrBusy)
	require.NoError(t, a.r.Run(ctx), "the cron job skips quietly while another refresh runs")
	require.Zero(t, e.reads())
	require.Equal(t, "someone-else", e.db.Client.Get(ctx, "flowgate:{slots}:refresh:lease").Val(), "another run's lease is not released")

	for name, mod := range map[string]func(*slotcache.Config){
		"stale below fresh": func(c *slotcache.Config) { c.Stale = time.Minute },
		"no location":       func(c *slotcache.Config) { c.LocationGUID = "" },
		"tier days":         func(c *slotcache.Config) { c.TierDays = []int{30, 0} },
	} {
		cfg := slotcache.Config{Cache: &slots.Cache{}, Redis: e.db.Client, Cloud9: e.client, LocationGUID: loc}
		mod(&cfg)
		_, err := slotcache.New(cfg)
		require.Error(t, err, name)
	}
}

func id(t *testing.T, s slots.Slot) string {
	t.Helper()
	v, err := s.ID()
	require.NoError(t, err)
	return v
}

func ids(list []slots.Slot) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		v, _ := s.ID()
		out = append(out, v)
	}
	return out
}

// A tier older than SLOT_CACHE_MAX_STALE (5 min) is not offered: the query
// goes to Cloud9, which answers it live; Cloud9 failing, the caller gets
// the error (the transfer), never the old tier's slots. Raised, the bound
// lets the same tier answer (marked stale).
func TestOldTierNotOfferedInOutage(t *testing.T) {
	e := newEnv(t, cloud9sim.Config{})
	a := e.instance(t, nil)
	ctx := context.Background()
	_, err := a.r.Refresh(ctx, nil)
	require.NoError(t, err)
	e.clock.Advance(6 * time.Minute)
	q := booking.SlotQuery{StartDate: e.day(1)}

	e.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1, Procedures: []string{cloud9.ProcGetOnlineReservations}})
	before := e.reads()
	got, err := a.src.Slots(ctx, q)
	require.Error(t, err, "Cloud9 failing and the tier 6 min old: nothing is offered")
	require.Empty(t, got.Slots)
	require.False(t, got.Cache.Used)
	require.Greater(t, e.reads(), before, "Cloud9 was asked")
	g, err := a.src.GroupedSlots(ctx, booking.GroupQuery{SlotQuery: q, NumberOfPatients: 2, TimeWindowMinutes: 40})
	require.Error(t, err)
	require.EqualValues(t, slotcache.SkippedMaxStale, g.CacheDecision.Tiers["1"].Skipped)
	require.EqualValues(t, "api_error", g.CacheDecision.FallbackReason)
	a.r.Wait()

	e.sim.SetFaults(cloud9sim.Faults{})
	e.clock.Advance(6 * time.Minute) // past the refresh the requests fired: old again
	before = e.reads()
	got, err = a.src.Slots(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, got.Slots)
	require.False(t, got.Cache.Used, "answered by Cloud9, live")
	require.Greater(t, e.reads(), before)
	a.r.Wait()

	_, err = a.r.Refresh(ctx, nil) // the trigger key (real time) may still hold the background one back
	require.NoError(t, err)
	e.clock.Advance(6 * time.Minute)
	a.src.MaxStale = slotcache.DefaultStale
	got, err = a.src.Slots(ctx, q)
	require.NoError(t, err)
	require.True(t, got.Cache.Used && got.Cache.Stale, "within a raised SLOT_CACHE_MAX_STALE the stale tier answers")
	a.r.Wait()
}
