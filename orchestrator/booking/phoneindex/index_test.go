package phoneindex_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/redistest"
)

// counting wraps the real client: it counts calls and the most
// GetPatientInformation calls in flight at once, and can slow each down.
type counting struct {
	*cloud9.Client
	lists, infos   atomic.Int32
	inflight, peak atomic.Int32
	delay          time.Duration
	slow           atomic.Int64           // extra delay per record, ns (set while running)
	failGUID       atomic.Pointer[string] // this patient's record fails
}

func (c *counting) GetPatientList(ctx context.Context, locs []string) ([]cloud9.Record, error) {
	c.lists.Add(1)
	return c.Client.GetPatientList(ctx, locs)
}

func (c *counting) GetPatientInformation(ctx context.Context, g string) (cloud9.Record, error) {
	c.infos.Add(1)
	n := c.inflight.Add(1)
	defer c.inflight.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if f := c.failGUID.Load(); f != nil && *f == g {
		return nil, errors.New("record unavailable")
	}
	if d := c.delay + time.Duration(c.slow.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Client.GetPatientInformation(ctx, g)
}

func seed(t *testing.T, e *familytest.Env, n int) {
	t.Helper()
	for i := range n {
		e.Patient(t, fmt.Sprintf("Kid%02d", i), "Smith", fmt.Sprintf("(412) 555-%04d", 100+i))
	}
}

func TestLookupMatchesDigitSubstrings(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 5)
	db := redistest.New(t)
	src := &counting{Client: e.Client}
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location()})
	require.NoError(t, err)
	defer x.Close()
	ctx := context.Background()

	// The first lookup builds the index; formatting does not matter.
	res, err := x.Lookup(ctx, "412-555-0102")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	require.Equal(t, "Kid02", res.Matches[0].Record["PatientFirstName"])
	require.Equal(t, []string{"(412) 555-0102"}, res.Matches[0].Phones)
	// GetPatientInformation's record, with GetPatientList's PatientID and
	// PatientStatus (the original's element kept them); the information
	// wins where both answer (PatientFullName).
	rec := res.Matches[0].Record
	require.Equal(t, "(412) 555-0102", rec["PatientPhone"])
	require.Equal(t, "10003", rec["PatientID"])
	require.Equal(t, rec["PatID"], rec["PatientID"])
	require.Equal(t, "Active", rec["PatientStatus"])
	require.Equal(t, "Kid02 Smith", rec["PatientFullName"])
	require.Equal(t, 5, res.Stats.Total)
	require.Equal(t, 5, res.Stats.Indexed)

	// A country code is dropped; a substring matches several.
	res, err = x.Lookup(ctx, "+1 412 555 0104")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	res, err = x.Lookup(ctx, "5550")
	require.NoError(t, err)
	require.Len(t, res.Matches, 5)
	res, err = x.Lookup(ctx, "9999999")
	require.NoError(t, err)
	require.Empty(t, res.Matches)

	// Later lookups read Redis: no Cloud9 call.
	require.EqualValues(t, 1, src.lists.Load())
	require.EqualValues(t, 5, src.infos.Load())

	_, err = x.Lookup(ctx, "12")
	require.ErrorIs(t, err, phoneindex.ErrTooShort)
}

func TestRefreshBoundedConcurrency(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 12)
	db := redistest.New(t)
	src := &counting{Client: e.Client, delay: 30 * time.Millisecond}
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), Concurrency: 3})
	require.NoError(t, err)
	defer x.Close()
	st, err := x.Refresh(context.Background())
	require.NoError(t, err)
	require.Equal(t, 12, st.Indexed)
	require.False(t, st.Partial)
	require.LessOrEqual(t, src.peak.Load(), int32(3), "more calls in flight than Concurrency")
	require.Equal(t, int32(3), src.peak.Load(), "the crawl should use its concurrency")
}

func TestRefreshStopsAtDeadlineAndMerges(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 10)
	db := redistest.New(t)
	src := &counting{Client: e.Client, delay: 200 * time.Millisecond}
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), Concurrency: 2,
		Deadline: 300 * time.Millisecond})
	require.NoError(t, err)
	defer x.Close()
	began := time.Now()
	st, err := x.Refresh(context.Background())
	require.NoError(t, err)
	require.Less(t, time.Since(began), 2*time.Second, "the deadline bounds the refresh")
	require.True(t, st.Partial)
	require.Less(t, st.Indexed, 10)
	first := st.Indexed

	// A second cut crawl merges: the index never shrinks.
	st, err = x.Refresh(context.Background())
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Indexed, first)
}

func TestStaleIndexTriggersOneBackgroundRefresh(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 3)
	db := redistest.New(t)
	src := &counting{Client: e.Client, delay: 600 * time.Millisecond}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), RefreshEvery: time.Hour,
		MissRefreshAge: -1, Now: clock})
	require.NoError(t, err)
	defer x.Close()
	ctx := context.Background()
	_, err = x.Refresh(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, src.lists.Load())

	// A patient added later is found only after a refresh.
	e.Patient(t, "Late", "Jones", "724-555-0199")
	mu.Lock()
	now = now.Add(2 * time.Hour) // the index is now stale
	mu.Unlock()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			res, err := x.Lookup(ctx, "7245550199")
			require.NoError(t, err)
			require.Empty(t, res.Matches, "a stale index answers at once, from what it has")
			require.Less(t, time.Since(began), 400*time.Millisecond, "no lookup waits for the crawl")
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		res, err := x.Lookup(ctx, "7245550199")
		return err == nil && len(res.Matches) == 1
	}, 5*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 2, src.lists.Load(), "ten stale lookups start one refresh, not ten")
}

// A miss in an index older than MissRefreshAge refreshes it in the
// request, once: a patient created since is found at once.
func TestMissRefreshesOldIndex(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 2)
	db := redistest.New(t)
	src := &counting{Client: e.Client}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), MissRefreshAge: time.Minute, Now: clock})
	require.NoError(t, err)
	defer x.Close()
	ctx := context.Background()
	_, err = x.Refresh(ctx)
	require.NoError(t, err)
	e.Patient(t, "New", "Caller", "814-555-0142")

	res, err := x.Lookup(ctx, "8145550142")
	require.NoError(t, err)
	require.Empty(t, res.Matches, "an index younger than MissRefreshAge answers as it is")
	require.EqualValues(t, 1, src.lists.Load())

	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	res, err = x.Lookup(ctx, "8145550142")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	require.EqualValues(t, 2, src.lists.Load())
	_, err = x.Lookup(ctx, "9999999")
	require.NoError(t, err)
	require.EqualValues(t, 2, src.lists.Load(), "a second miss right after does not crawl again")
}

func TestOneRefreshAcrossInstances(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 4)
	db := redistest.New(t)
	src := &counting{Client: e.Client, delay: 100 * time.Millisecond}
	a, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location()})
	require.NoError(t, err)
	defer a.Close()
	b, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location()})
	require.NoError(t, err)
	defer b.Close()
	errs := make(chan error, 2)
	for _, x := range []*phoneindex.Index{a, b} {
		go func() { _, err := x.Refresh(context.Background()); errs <- err }()
	}
	e1, e2 := <-errs, <-errs
	require.True(t, errors.Is(e1, phoneindex.ErrRefreshing) != errors.Is(e2, phoneindex.ErrRefreshing),
		"exactly one of two concurrent refreshes runs: %v, %v", e1, e2)
	require.EqualValues(t, 1, src.lists.Load())
	// The lock was released (compare-and-delete): the next refresh runs.
	_, err = b.Refresh(context.Background())
	require.NoError(t, err)
	require.Empty(t, db.Client.Keys(context.Background(), "flowgate:phoneidx:*:lock").Val())
}

func TestStartRefreshesInBackground(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 2)
	db := redistest.New(t)
	src := &counting{Client: e.Client}
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), RefreshEvery: 100 * time.Millisecond})
	require.NoError(t, err)
	x.Start()
	e.Patient(t, "Bg", "Added", "878-555-0123")
	require.Eventually(t, func() bool {
		res, err := x.Lookup(context.Background(), "8785550123")
		return err == nil && len(res.Matches) == 1
	}, 5*time.Second, 20*time.Millisecond)
	x.Close()
	n := src.lists.Load()
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, n, src.lists.Load(), "Close stops the loop")
}

func TestConfigValidated(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	_, err := phoneindex.New(db.Client, &counting{}, phoneindex.Config{})
	require.Error(t, err)
	_, err = phoneindex.New(db.Client, &counting{}, phoneindex.Config{LocationGUID: "x", Concurrency: -1})
	require.Error(t, err)
}

// A crawl with failed records merges (the failed patient keeps its entry)
// and, like a cut crawl, does not count as complete: an index whose last
// complete crawl is older than RefreshEvery is refreshed although partial
// crawls ran since. Fails with failed crawls replacing the index, or with
// staleness measured from the last crawl of any kind.
func TestFailedCrawlMergesAndStaysDue(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 3)
	db := redistest.New(t)
	src := &counting{Client: e.Client}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), RefreshEvery: time.Hour,
		MissRefreshAge: -1, Now: clock})
	require.NoError(t, err)
	defer x.Close()
	ctx := context.Background()
	first, err := x.Refresh(ctx)
	require.NoError(t, err)
	require.False(t, first.Partial)
	res, err := x.Lookup(ctx, "4125550101")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	g := res.Matches[0].GUID
	src.failGUID.Store(&g)

	mu.Lock()
	now = now.Add(50 * time.Minute)
	mu.Unlock()
	st, err := x.Refresh(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Failed)
	require.True(t, st.Partial)
	require.Equal(t, 3, st.Indexed, "the patient whose record failed keeps its entry")
	require.True(t, st.LastComplete.IsZero())

	// 70 min after the complete crawl, 20 after the failed one: stale.
	mu.Lock()
	now = now.Add(20 * time.Minute)
	mu.Unlock()
	res, err = x.Lookup(ctx, "4125550101")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	require.Equal(t, first.RefreshedAt.UnixMilli(), res.Stats.LastComplete.UnixMilli())
	require.Eventually(t, func() bool { return src.lists.Load() == 3 }, 5*time.Second, 10*time.Millisecond,
		"a lookup of an index whose last complete crawl is stale starts a refresh")
}

// A miss on an old index does not hold the request for the whole crawl:
// the refresh runs in the background, the lookup waits MissRefreshWait at
// most, and the patient is found once the crawl is done. Fails with the
// crawl run in the request.
func TestMissRefreshDoesNotBlock(t *testing.T) {
	t.Parallel()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, 2)
	db := redistest.New(t)
	src := &counting{Client: e.Client}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{LocationGUID: e.Location(), MissRefreshAge: time.Minute,
		MissRefreshWait: 100 * time.Millisecond, Now: clock})
	require.NoError(t, err)
	defer x.Close()
	ctx := context.Background()
	_, err = x.Refresh(ctx)
	require.NoError(t, err)
	e.Patient(t, "New", "Caller", "814-555-0142")
	src.slow.Store(int64(time.Second))
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()

	began := time.Now()
	res, err := x.Lookup(ctx, "8145550142")
	require.NoError(t, err)
	require.Less(t, time.Since(began), 700*time.Millisecond, "the lookup does not wait for the crawl")
	require.Empty(t, res.Matches)
	require.Eventually(t, func() bool {
		res, err := x.Lookup(ctx, "8145550142")
		return err == nil && len(res.Matches) == 1
	}, 5*time.Second, 20*time.Millisecond)
}
