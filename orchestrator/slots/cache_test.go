package slots_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

type cacheBundle struct {
	ctx   context.Context
	cache *slots.Cache
	rdb   redis.UniversalClient
	now   time.Time
}

func setupCache(t *testing.T, mod ...func(*slots.CacheConfig)) *cacheBundle {
	t.Helper()
	db := redistest.New(t)
	b := &cacheBundle{ctx: context.Background(), rdb: db.Client, now: time.Date(2026, 1, 19, 12, 0, 0, 0, time.UTC)}
	cfg := slots.CacheConfig{KeyPrefix: "test", Now: func() time.Time { return b.now }}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := slots.NewCache(db.Client, cfg)
	require.NoError(t, err)
	b.cache = c
	return b
}

var (
	tier1   = slots.Range{LocationGUID: loc, From: day(2026, 1, 20), To: day(2026, 2, 18)}
	tier1V  = slots.Range{LocationGUID: loc, ScheduleViewGUID: view, From: day(2026, 1, 20), To: day(2026, 2, 18)}
	tier2   = slots.Range{LocationGUID: loc, From: day(2026, 1, 20), To: day(2026, 3, 20)}
	janList = []slots.Slot{slot("1/21/2026 9:00:00 AM"), slot("1/20/2026 8:00:00 AM"), slot("1/20/2026 8:45:00 AM")}
)

func TestNewCacheConfig(t *testing.T) {
	t.Parallel()
	_, err := slots.NewCache(nil, slots.CacheConfig{KeyPrefix: "a{b}"})
	require.Error(t, err)
	_, err = slots.NewCache(nil, slots.CacheConfig{TTL: -time.Second})
	require.Error(t, err)
}

func TestCachePutGet(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	_, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.False(t, found)

	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	e, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, b.now.UnixMilli(), e.FetchedAt.UnixMilli())
	require.Equal(t, []string{"1/20/2026 8:00:00 AM", "1/20/2026 8:45:00 AM", "1/21/2026 9:00:00 AM"}, starts(e.Slots), "sorted")
	require.Equal(t, janList[1], e.Slots[0], "every field kept")

	_, found, err = b.cache.Get(b.ctx, tier1V)
	require.NoError(t, err)
	require.False(t, found, "a view's list is another list")

	keys, err := b.rdb.Keys(b.ctx, "test:{slots}:*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"test:{slots}:entries", "test:{slots}:entries:ver",
		"test:{slots}:e:1FEF9297-7C8B-426B-B0D1-F2275136E48B:*:20260120:20260218"}, keys)
	ttl := b.rdb.PTTL(b.ctx, "test:{slots}:entries").Val()
	require.Greater(t, ttl, 59*time.Minute)

	// Put replaces; an empty list is a cached answer.
	b.now = b.now.Add(time.Minute)
	require.NoError(t, b.cache.Put(b.ctx, tier1, nil))
	e, found, err = b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.True(t, found)
	require.Empty(t, e.Slots)
	require.Equal(t, b.now.UnixMilli(), e.FetchedAt.UnixMilli())

	ok, err := b.cache.Delete(b.ctx, tier1)
	require.NoError(t, err)
	require.True(t, ok)
	_, found, err = b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.False(t, found)
	ok, err = b.cache.Delete(b.ctx, tier1)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestCachePutSkipsUnbookableSlotsAndDuplicates(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	b := setupCache(t, func(c *slots.CacheConfig) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	noCol := slot("1/20/2026 9:00 AM")
	noCol.ScheduleColumnGUID = ""
	dupA, dupB := slot("1/20/2026 8:00 AM"), slot("01/20/2026 08:00:00 AM")
	dupB.AppointmentTypeDescription = "the last one"
	require.NoError(t, b.cache.Put(b.ctx, tier1, []slots.Slot{slot("never"), noCol, dupA, dupB}))
	e, _, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.Len(t, e.Slots, 1)
	require.Equal(t, "the last one", e.Slots[0].AppointmentTypeDescription)
	require.Contains(t, logs.String(), "slot left out")
}

func TestCachePutManySlots(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	var list []slots.Slot
	for d := range 30 {
		for m := 0; m < 10*60; m += 5 {
			start := day(2026, 1, 20).AddDate(0, 0, d).Add(7*time.Hour + time.Duration(m)*time.Minute)
			list = append(list, slot(slots.FormatTime(start)))
		}
	}
	require.NoError(t, b.cache.Put(b.ctx, tier2, list)) // 3600 slots: chunked HSET
	e, found, err := b.cache.Get(b.ctx, tier2)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, e.Slots, len(list))
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	b := setupCache(t, func(c *slots.CacheConfig) { c.TTL = 150 * time.Millisecond })
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	ok, err := b.cache.Contains(b.ctx, janList[0].TokenSlot())
	require.NoError(t, err)
	require.True(t, ok)
	b.now = b.now.Add(300 * time.Millisecond)
	require.Eventually(t, func() bool { // Redis drops the keys
		_, found, err := b.cache.Get(b.ctx, tier1)
		ok, err2 := b.cache.Contains(b.ctx, janList[0].TokenSlot())
		return err == nil && err2 == nil && !found && !ok
	}, 5*time.Second, 10*time.Millisecond, "the cache's TTL runs out")
	_, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.False(t, found)
	ok, err = b.cache.Contains(b.ctx, janList[0].TokenSlot())
	require.NoError(t, err)
	require.False(t, ok)
}

func TestCacheInvalidateRemovesTheSlotEverywhere(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	require.NoError(t, b.cache.Put(b.ctx, tier1V, janList[:2]))
	require.NoError(t, b.cache.Put(b.ctx, tier2, janList[1:]))

	booked := slot("01/20/2026 08:00 AM") // the same slot, spelled otherwise
	booked.AppointmentTypeGUID = ""       // whatever the type
	n, err := b.cache.Invalidate(b.ctx, booked)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, r := range []slots.Range{tier1, tier1V, tier2} {
		e, found, err := b.cache.Get(b.ctx, r)
		require.NoError(t, err)
		require.True(t, found)
		require.NotContains(t, starts(e.Slots), "1/20/2026 8:00:00 AM", r.String())
	}
	ok, err := b.cache.Contains(b.ctx, janList[1].TokenSlot())
	require.NoError(t, err)
	require.False(t, ok)

	n, err = b.cache.Invalidate(b.ctx, booked)
	require.NoError(t, err)
	require.Zero(t, n, "idempotent")

	other := slot("1/20/2026 8:45 AM")
	other.ScheduleColumnGUID = chair9 // same time, another chair: not cached
	n, err = b.cache.Invalidate(b.ctx, other)
	require.NoError(t, err)
	require.Zero(t, n)

	_, err = b.cache.Invalidate(b.ctx, slot("later"))
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
}

func TestCacheFind(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))

	ts, err := slots.DecodeToken(slots.EncodeToken(janList[0]))
	require.NoError(t, err)
	got, found, err := b.cache.Find(b.ctx, ts)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, janList[0], got, "the cached slot, with its location")

	ts.StartTime = "1/21/2026 9:05 AM"
	ok, err := b.cache.Contains(b.ctx, ts)
	require.NoError(t, err)
	require.False(t, ok)

	_, err = b.cache.Contains(b.ctx, slots.TokenSlot{})
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
}

func TestCacheRangesAreChecked(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	for name, r := range map[string]slots.Range{
		"no location":   {From: day(2026, 1, 1), To: day(2026, 1, 2)},
		"colon":         {LocationGUID: "a:b", From: day(2026, 1, 1), To: day(2026, 1, 2)},
		"no dates":      {LocationGUID: loc},
		"backwards":     {LocationGUID: loc, From: day(2026, 1, 2), To: day(2026, 1, 1)},
		"brace in view": {LocationGUID: loc, ScheduleViewGUID: "{x}", From: day(2026, 1, 1), To: day(2026, 1, 2)},
	} {
		require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(b.cache.Put(b.ctx, r, nil)), name)
		_, _, err := b.cache.Get(b.ctx, r)
		require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err), name)
	}
	one := slots.Range{LocationGUID: loc, From: day(2026, 1, 1), To: time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)}
	require.NoError(t, b.cache.Put(b.ctx, one, nil), "a one-day range")
}

func TestCacheCorruptEntry(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	id, err := janList[0].ID()
	require.NoError(t, err)
	require.NoError(t, b.rdb.HSet(b.ctx, "test:{slots}:e:1FEF9297-7C8B-426B-B0D1-F2275136E48B:*:20260120:20260218", id, "{not json").Err())
	_, _, err = b.cache.Get(b.ctx, tier1)
	require.Equal(t, contracts.CodeInternal, contracts.ErrorCode(err))
	_, _, err = b.cache.Find(b.ctx, janList[0].TokenSlot())
	require.Equal(t, contracts.CodeInternal, contracts.ErrorCode(err))
}

// Concurrent invalidations of different slots each remove their slot from
// every list: no update is lost, since each is one script.
func TestCacheConcurrentInvalidate(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	var list []slots.Slot
	for i := range 20 {
		list = append(list, slot(fmt.Sprintf("1/20/2026 %d:00 AM", 1+i%12)))
		list[i].ScheduleColumnGUID = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
	}
	require.NoError(t, b.cache.Put(b.ctx, tier1, list))
	require.NoError(t, b.cache.Put(b.ctx, tier2, list))
	var wg sync.WaitGroup
	counts := make([]int, len(list))
	for i := range list {
		wg.Go(func() {
			n, err := b.cache.Invalidate(b.ctx, list[i])
			assert.NoError(t, err)
			counts[i] = n
		})
	}
	wg.Wait()
	for i, n := range counts {
		require.Equal(t, 2, n, "slot %d removed from both lists", i)
	}
	for _, r := range []slots.Range{tier1, tier2} {
		e, found, err := b.cache.Get(b.ctx, r)
		require.NoError(t, err)
		require.True(t, found)
		require.Empty(t, e.Slots)
	}
}

func TestCacheRedisDown(t *testing.T) {
	t.Parallel()
	c, err := slots.NewCache(redistest.Dead(t), slots.CacheConfig{})
	require.NoError(t, err)
	ctx := context.Background()
	check := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, slots.ErrUnavailable)
		require.Equal(t, contracts.CodeUnavailable, contracts.ErrorCode(err))
	}
	check(c.Put(ctx, tier1, janList))
	_, _, err = c.Get(ctx, tier1)
	check(err)
	_, err = c.Invalidate(ctx, janList[0])
	check(err)
	_, err = c.Contains(ctx, janList[0].TokenSlot())
	check(err)
	_, err = c.Delete(ctx, tier1)
	check(err)
}

// TestCachePutSkipsBookedSlots: a refresh fetched before a booking landed
// does not put the booked slot back (its booked key is set), nor a
// pre-grouped value that may pair it. Fails without the booked-key check
// in putScript.
func TestCachePutSkipsBookedSlots(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	_, err := b.cache.Booked(b.ctx, janList[1], time.Hour)
	require.NoError(t, err)

	b.now = b.now.Add(time.Minute)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList)) // fetched before the booking
	e, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []string{"1/20/2026 8:45:00 AM", "1/21/2026 9:00:00 AM"}, starts(e.Slots))

	pg := slots.PreGrouped{FetchedAt: b.now, Tier: 1}
	require.NoError(t, b.cache.PutTier(b.ctx, 1, tier1, janList, slots.TierStats{Days: 30}, &pg))
	tr, found, err := b.cache.GetTier(b.ctx, loc, 1)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []string{"1/20/2026 8:45:00 AM", "1/21/2026 9:00:00 AM"}, starts(tr.Slots))
	_, found, err = b.cache.GetPreGrouped(b.ctx, loc, 1)
	require.NoError(t, err)
	require.False(t, found, "a pre-grouped value built with the booked slot is not stored")

	_, err = b.cache.Restore(b.ctx, janList[1]) // cancelled: open again
	require.NoError(t, err)
	require.NoError(t, b.cache.Put(b.ctx, tier1, janList))
	e, _, err = b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.Len(t, e.Slots, 3)
}
