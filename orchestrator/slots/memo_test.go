package slots_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Get decodes a list once per change and hands out that copy while the
// list is unchanged; every change made through another instance (an
// invalidation, a restore, a new put) is seen by the next Get, and so is a
// list put again after Redis lost every key, version counter included,
// even when it is stamped with the version the decoded copy had.
func TestCacheGetDecodesAListOncePerChange(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	other, err := slots.NewCache(b.rdb, slots.CacheConfig{KeyPrefix: "test", Now: func() time.Time { return b.now }})
	require.NoError(t, err)
	get := func() slots.Entry {
		t.Helper()
		e, found, err := b.cache.Get(b.ctx, tier1)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, tier1, e.Range)
		return e
	}
	require.NoError(t, other.Put(b.ctx, tier1, janList))
	first := get()
	require.Len(t, first.Slots, 3)
	require.Same(t, &first.Slots[0], &get().Slots[0], "an unchanged list is decoded once")

	_, err = other.Invalidate(b.ctx, janList[0])
	require.NoError(t, err)
	afterInvalidate := get()
	require.Equal(t, []string{"1/20/2026 8:00:00 AM", "1/20/2026 8:45:00 AM"}, starts(afterInvalidate.Slots))
	require.Len(t, first.Slots, 3, "a copy handed out before the change is left as it was")

	_, err = other.Restore(b.ctx, janList[0])
	require.NoError(t, err)
	require.Len(t, get().Slots, 3, "a restored slot is seen at once")

	// Redis loses everything; the list is put again, a minute later, with
	// one slot, and its version set to the one this instance decoded last.
	v := b.rdb.HGet(b.ctx, "test:{slots}:e:1FEF9297-7C8B-426B-B0D1-F2275136E48B:*:20260120:20260218", "_v").Val()
	require.NotEmpty(t, v)
	require.NoError(t, b.rdb.FlushDB(b.ctx).Err())
	b.now = b.now.Add(time.Minute)
	require.NoError(t, other.Put(b.ctx, tier1, janList[1:2]))
	require.NoError(t, b.rdb.HSet(b.ctx, "test:{slots}:e:1FEF9297-7C8B-426B-B0D1-F2275136E48B:*:20260120:20260218", "_v", v).Err())
	again := get()
	require.Equal(t, []string{"1/20/2026 8:00:00 AM"}, starts(again.Slots), "the same version of another fetch is another list")
	require.Equal(t, b.now.UnixMilli(), again.FetchedAt.UnixMilli())

	require.NoError(t, b.rdb.FlushDB(b.ctx).Err())
	_, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.False(t, found, "a list gone is not answered from the decoded copy")
}

// The decoded copies Get keeps are bounded: ranges carry their dates, so
// a long-running instance meets new keys every day. Each range still gets
// its own list, and a list read between every two others (a tier, the
// holds' horizon) stays decoded while the one-off ranges come and go.
func TestCacheGetKeepsFewDecodedLists(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	require.NoError(t, b.cache.Put(b.ctx, tier2, janList))
	hot := func() *slots.Slot {
		e, found, err := b.cache.Get(b.ctx, tier2)
		require.NoError(t, err)
		require.True(t, found)
		return &e.Slots[0]
	}
	first := hot()
	var ranges []slots.Range
	for i := range 40 {
		r := slots.Range{LocationGUID: loc, From: day(2026, 1, 20).AddDate(0, 0, i), To: day(2026, 2, 18).AddDate(0, 0, i)}
		ranges = append(ranges, r)
		require.NoError(t, b.cache.Put(b.ctx, r, janList[i%3:i%3+1]))
	}
	for round := range 2 {
		for i, r := range ranges {
			e, found, err := b.cache.Get(b.ctx, r)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, starts(janList[i%3:i%3+1]), starts(e.Slots), "round %d, range %d", round, i)
			require.Same(t, first, hot(), "round %d, range %d: the list read all along was decoded again", round, i)
		}
	}
	require.LessOrEqual(t, slots.DecodedLists(b.cache), 16)
}

// Concurrent refreshes of one list run one fetch and share its answer;
// the fetch outlives the caller that started it, a caller that gives up
// stops waiting at once, a failure is everyone's, and another range is
// fetched apart.
func TestCacheRefreshRunsOneFetchPerList(t *testing.T) {
	t.Parallel()
	b := setupCache(t)
	var fetches atomic.Int32
	release := make(chan struct{})
	fetch := func(ctx context.Context) ([]slots.Slot, error) {
		fetches.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return janList, nil
	}
	starter, cancelStarter := context.WithCancel(b.ctx)
	startErr := make(chan error, 1)
	go func() {
		_, err := b.cache.Refresh(starter, tier1, fetch)
		startErr <- err
	}()
	require.Eventually(t, func() bool { return fetches.Load() == 1 }, 5*time.Second, time.Millisecond)

	var wg sync.WaitGroup
	got := make([][]slots.Slot, 32)
	errs := make([]error, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = b.cache.Refresh(b.ctx, tier1, fetch)
		}()
	}
	impatient, cancelImpatient := context.WithTimeout(b.ctx, 20*time.Millisecond)
	defer cancelImpatient()
	_, err := b.cache.Refresh(impatient, tier1, fetch)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a caller that gives up stops waiting")

	cancelStarter() // the caller that started the fetch goes away
	require.ErrorIs(t, <-startErr, context.Canceled)
	time.Sleep(10 * time.Millisecond) // the others are still waiting, the fetch still running
	close(release)
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i], "caller %d", i)
		require.Equal(t, starts(janList), starts(got[i]), "caller %d", i)
	}
	require.EqualValues(t, 1, fetches.Load(), "one fetch for every caller")

	boom := errors.New("cloud9 down")
	_, err = b.cache.Refresh(b.ctx, tier1, func(context.Context) ([]slots.Slot, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	other, err := b.cache.Refresh(b.ctx, tier2, func(context.Context) ([]slots.Slot, error) { return janList[:1], nil })
	require.NoError(t, err)
	require.Len(t, other, 1)
	b.now = b.now.Add(slots.DefaultFailureHold) // the failure's hold is over
	_, err = b.cache.Refresh(b.ctx, tier1, func(context.Context) ([]slots.Slot, error) { panic("a bug in the fetch") })
	require.ErrorContains(t, err, "panicked: a bug in the fetch", "a panic is an error, not the end of the process")
	_, err = b.cache.Refresh(b.ctx, slots.Range{}, fetch)
	require.Error(t, err, "a range without a location is refused")
}

// A fetch slower than the deadline of every caller goes on after they
// stop waiting and caches its list for the next caller (a Cloud9 slower
// than a web hold's budget); it is bounded by FetchTimeout instead.
func TestCacheRefreshOutlivesItsCallersDeadlines(t *testing.T) {
	t.Parallel()
	b := setupCache(t, func(c *slots.CacheConfig) { c.FetchTimeout = 2 * time.Second })
	release := make(chan struct{})
	cached := make(chan error, 1)
	fetch := func(ctx context.Context) ([]slots.Slot, error) {
		select {
		case <-release:
		case <-ctx.Done():
			cached <- ctx.Err()
			return nil, ctx.Err()
		}
		err := b.cache.Put(ctx, tier1, janList)
		cached <- err
		return janList, err
	}
	short, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
	defer cancel()
	_, err := b.cache.Refresh(short, tier1, fetch)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the caller stops waiting at its deadline")
	close(release) // Cloud9 answers after the caller left
	require.NoError(t, <-cached, "the fetch ended with its starter's deadline")
	e, found, err := b.cache.Get(b.ctx, tier1)
	require.NoError(t, err)
	require.True(t, found, "the late answer was not cached")
	require.ElementsMatch(t, starts(janList), starts(e.Slots))

	// A fetch that never answers ends at FetchTimeout.
	t0 := time.Now()
	_, err = b.cache.Refresh(b.ctx, tier2, func(ctx context.Context) ([]slots.Slot, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(t0), 10*time.Second)
}

// A failed fetch is not run again for FailureHold: while Cloud9 refuses,
// the callers of the range get its error at once, one read per hold
// between them — an anonymous visitor's requests cannot each spend a
// Cloud9 read. Another range fetches meanwhile; past the hold the range
// is read again.
func TestCacheRefreshHoldsAFailure(t *testing.T) {
	t.Parallel()
	b := setupCache(t, func(c *slots.CacheConfig) { c.FailureHold = 10 * time.Second })
	var fetches atomic.Int32
	boom := errors.New("cloud9 code 8")
	failing := func(context.Context) ([]slots.Slot, error) { fetches.Add(1); return nil, boom }
	for range 20 {
		_, err := b.cache.Refresh(b.ctx, tier1, failing)
		require.ErrorIs(t, err, boom)
	}
	require.EqualValues(t, 1, fetches.Load(), "one fetch for 20 refreshes within the hold")

	list, err := b.cache.Refresh(b.ctx, tier2, func(context.Context) ([]slots.Slot, error) { return janList, nil })
	require.NoError(t, err, "another range is not held")
	require.Len(t, list, len(janList))

	b.now = b.now.Add(9 * time.Second)
	_, err = b.cache.Refresh(b.ctx, tier1, failing)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, slots.ErrFailureHeld)
	require.ErrorContains(t, err, "not fetched again within 10s")
	require.EqualValues(t, 1, fetches.Load())

	b.now = b.now.Add(time.Second) // the hold is over: one more read, failing again
	_, err = b.cache.Refresh(b.ctx, tier1, failing)
	require.ErrorIs(t, err, boom)
	require.EqualValues(t, 2, fetches.Load())

	b.now = b.now.Add(10 * time.Second)
	ok := func(context.Context) ([]slots.Slot, error) { fetches.Add(1); return janList, nil }
	_, err = b.cache.Refresh(b.ctx, tier1, ok)
	require.NoError(t, err)
	_, err = b.cache.Refresh(b.ctx, tier1, ok)
	require.NoError(t, err, "after a success the range is answered")
	require.EqualValues(t, 4, fetches.Load())
}
