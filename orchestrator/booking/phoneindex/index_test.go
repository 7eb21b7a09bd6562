package phoneindex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

// counting wraps the real client: it counts calls and the most
// GetPatientInformation calls in flight at once, and can slow each down.
type counting struct {
	*cloud9.Client
	lists, infos   atomic.Int32
	inflight, peak atomic.Int32
	delay          time.Duration
	failGUID       atomic.Pointer[string] // this patient's record fails
	mu             sync.Mutex
	locs           [][]string // GetPatientList's LocGUIDs, per call
}

func (c *counting) GetPatientList(ctx context.Context, locs []string) ([]cloud9.Record, error) {
	c.lists.Add(1)
	c.mu.Lock()
	c.locs = append(c.locs, locs)
	c.mu.Unlock()
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
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Client.GetPatientInformation(ctx, g)
}

func seed(t *testing.T, e *familytest.Env, n int) []string {
	t.Helper()
	guids := make([]string, n)
	for i := range n {
		guids[i] = e.Patient(t, fmt.Sprintf("Kid%03d", i), "Smith", fmt.Sprintf("(412) 555-%04d", 100+i))
	}
	return guids
}

type setup struct {
	e     *familytest.Env
	db    *redistest.DB
	src   *counting
	clock *clocktest.Clock
}

func newSetup(t *testing.T, patients int) *setup {
	t.Helper()
	e := familytest.New(t, cloud9sim.Config{})
	seed(t, e, patients)
	return &setup{e: e, db: redistest.New(t), src: &counting{Client: e.Client}, clock: clocktest.New(time.Now())}
}

func (s *setup) index(t *testing.T, cfg phoneindex.Config) *phoneindex.Index {
	t.Helper()
	cfg.Now = s.clock.Now
	x, err := phoneindex.New(s.db.Client, s.src, cfg)
	require.NoError(t, err)
	return x
}

func TestLookupMatchesDigitSubstrings(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 5)
	x := s.index(t, phoneindex.Config{})
	ctx := context.Background()

	// The first search reads every record; formatting does not matter.
	res, err := x.Lookup(ctx, "412-555-0102", "")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	require.Equal(t, "Kid002", res.Matches[0].Record["PatientFirstName"])
	require.Equal(t, []string{"(412) 555-0102"}, res.Matches[0].Phones)
	// GetPatientInformation's record, with GetPatientList's PatientID and
	// PatientStatus (the original's element kept them); the information
	// wins where both answer (PatientFullName).
	rec := res.Matches[0].Record
	require.Equal(t, "(412) 555-0102", rec["PatientPhone"])
	require.Equal(t, "10003", rec["PatientID"])
	require.Equal(t, rec["PatID"], rec["PatientID"])
	require.Equal(t, "Active", rec["PatientStatus"])
	require.Equal(t, "Kid002 Smith", rec["PatientFullName"])
	require.Equal(t, phoneindex.Stats{Total: 5, Searched: 5, Read: 5}, res.Stats)

	// A country code is dropped; a substring matches several.
	res, err = x.Lookup(ctx, "+1 412 555 0104", "")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	res, err = x.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Len(t, res.Matches, 5)
	res, err = x.Lookup(ctx, "9999999", "")
	require.NoError(t, err)
	require.Empty(t, res.Matches)
	require.Equal(t, phoneindex.Stats{Total: 5, Searched: 5}, res.Stats)

	// Later searches list the patients (one read each) and read no record
	// they hold.
	require.EqualValues(t, 4, s.src.lists.Load())
	require.EqualValues(t, 5, s.src.infos.Load())

	_, err = x.Lookup(ctx, "12", "")
	require.ErrorIs(t, err, phoneindex.ErrTooShort)
	require.EqualValues(t, 4, s.src.lists.Load(), "a refused query asks Cloud9 nothing")
}

// Cloud9's reads follow the callers, counted at the simulator: a search
// reads the list and at most ReadsPerSearch records; a second search reads
// only the list; an idle hour reads nothing; records older than
// RecordMaxAge are read again, by a search. These are docs/booking.md's
// figures.
func TestReadsFollowCallers(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 300)
	sim := s.e.Sim
	reads := func() (list, info int) {
		return sim.Calls(cloud9.ProcGetPatientList), sim.Calls(cloud9.ProcGetPatientInformation)
	}
	x := s.index(t, phoneindex.Config{ReadsPerMinute: 10_000})
	ctx := context.Background()
	l0, i0 := reads()
	require.Zero(t, i0, "New reads nothing")

	res, err := x.Lookup(ctx, "4125550399", "")
	require.NoError(t, err)
	l1, i1 := reads()
	require.Equal(t, [2]int{1, 200}, [2]int{l1 - l0, i1 - i0}, "first search on 300 patients: the list + the original's 200")
	require.Equal(t, phoneindex.Stats{Total: 300, Searched: 200, Read: 200, Deferred: 100}, res.Stats)
	require.Empty(t, res.Matches, "patient 300 is beyond the first 200, as in the original")

	res, err = x.Lookup(ctx, "4125550399", "")
	require.NoError(t, err)
	l2, i2 := reads()
	require.Equal(t, [2]int{1, 100}, [2]int{l2 - l1, i2 - i1}, "the second search reads the 100 it lacked")
	require.Len(t, res.Matches, 1)

	_, err = x.Lookup(ctx, "4125550100", "")
	require.NoError(t, err)
	l3, i3 := reads()
	require.Equal(t, [2]int{1, 0}, [2]int{l3 - l2, i3 - i2}, "then a search costs one GetPatientList")

	// An idle hour: nothing runs in the background.
	s.clock.Advance(time.Hour)
	require.Never(t, func() bool { l, i := reads(); return l != l3 || i != i3 }, 200*time.Millisecond, 10*time.Millisecond,
		"a read in the background")
	l4, i4 := reads()
	require.Equal(t, [2]int{l3, i3}, [2]int{l4, i4}, "an idle hour reads nothing")

	// Past RecordMaxAge (1 h) the next search reads records again, within
	// its bound: a changed phone is seen.
	s.clock.Advance(time.Minute)
	_, err = x.Lookup(ctx, "4125550100", "")
	require.NoError(t, err)
	l5, i5 := reads()
	require.Equal(t, [2]int{1, 200}, [2]int{l5 - l4, i5 - i4})
}

func TestReadsBoundedPerSearchAndConcurrency(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30)
	s.src.delay = 20 * time.Millisecond
	x := s.index(t, phoneindex.Config{ReadsPerSearch: 12, Concurrency: 3})
	ctx := context.Background()
	res, err := x.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, phoneindex.Stats{Total: 30, Searched: 12, Read: 12, Deferred: 18}, res.Stats)
	require.Len(t, res.Matches, 12)
	require.EqualValues(t, 3, s.src.peak.Load(), "at most Concurrency in flight")
	for range 2 {
		_, err = x.Lookup(ctx, "5550", "")
		require.NoError(t, err)
	}
	res, err = x.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, phoneindex.Stats{Total: 30, Searched: 30}, res.Stats, "three searches read everyone once")
	require.EqualValues(t, 30, s.src.infos.Load())
}

// ReadsPerMinute is shared by every instance on the Redis and renews each
// minute.
func TestReadsPerMinuteAcrossInstances(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30)
	cfg := phoneindex.Config{ReadsPerSearch: 10, ReadsPerMinute: 15}
	a, b := s.index(t, cfg), s.index(t, cfg)
	ctx := context.Background()
	s.clock.Set(s.clock.Now().Truncate(time.Minute))
	ra, err := a.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	rb, err := b.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	rc, err := a.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, []int{10, 5, 0}, []int{ra.Stats.Read, rb.Stats.Read, rc.Stats.Read})
	require.Equal(t, 15, rc.Stats.Searched, "the budget spent, a search answers from what is kept")
	s.clock.Advance(time.Minute)
	rd, err := b.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, 10, rd.Stats.Read)
	require.EqualValues(t, 25, s.src.infos.Load())
}

// A patient created since the last search is read first by the next one.
func TestNewPatientReadFirst(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 5)
	x := s.index(t, phoneindex.Config{ReadsPerSearch: 1})
	ctx := context.Background()
	for range 5 {
		_, err := x.Lookup(ctx, "5550", "")
		require.NoError(t, err)
	}
	s.clock.Advance(2 * time.Hour) // every record is stale too
	s.e.Patient(t, "New", "Caller", "814-555-0142")
	res, err := x.Lookup(ctx, "8145550142", "")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1, "the missing record goes before the stale ones")
}

// Every location of the client unless the caller names one, as the
// original: a patient registered at another location is found.
func TestEveryLocationUnlessNamed(t *testing.T) {
	t.Parallel()
	src := twoLocations{}
	db := redistest.New(t)
	x, err := phoneindex.New(db.Client, src, phoneindex.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	res, err := x.Lookup(ctx, "724-555-0199", "")
	require.NoError(t, err)
	require.Len(t, res.Matches, 1)
	require.Equal(t, "B", res.Matches[0].Record["LocationGUID"])
	res, err = x.Lookup(ctx, "724-555-0199", "A")
	require.NoError(t, err)
	require.Empty(t, res.Matches, "the caller named location A")
	require.Equal(t, 1, res.Stats.Total)

	// Against the simulator: LocGUIDs only when the caller names one.
	s := newSetup(t, 1)
	y := s.index(t, phoneindex.Config{})
	_, err = y.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	_, err = y.Lookup(ctx, "5550", s.e.Location())
	require.NoError(t, err)
	require.Equal(t, [][]string{nil, {s.e.Location()}}, s.src.locs)
}

// twoLocations is a client with one patient at each of locations A and B.
type twoLocations struct{}

var twoPatients = []cloud9.Record{
	{{Name: "PatientGUID", Value: "P-A"}, {Name: "LocationGUID", Value: "A"}},
	{{Name: "PatientGUID", Value: "P-B"}, {Name: "LocationGUID", Value: "B"}},
}

func (twoLocations) GetPatientList(_ context.Context, locs []string) ([]cloud9.Record, error) {
	var out []cloud9.Record
	for _, r := range twoPatients {
		if len(locs) == 0 || slices.Contains(locs, r.Get("LocationGUID")) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (twoLocations) GetPatientInformation(_ context.Context, g string) (cloud9.Record, error) {
	phone := "412-555-0100"
	if strings.HasSuffix(g, "B") {
		phone = "724-555-0199"
	}
	return cloud9.Record{{Name: "PatientPhone", Value: phone}}, nil
}

// A record Cloud9 did not give is read again by the next search; the
// request's deadline cuts the reads, and what came back is kept.
func TestFailedAndCutReadsRetriedLater(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 8)
	guids := []string{}
	x := s.index(t, phoneindex.Config{Concurrency: 1})
	ctx := context.Background()
	list, err := s.e.Client.GetPatientList(ctx, nil)
	require.NoError(t, err)
	for _, r := range list {
		guids = append(guids, r.Get("PatientGUID"))
	}
	s.src.failGUID.Store(&guids[3])
	res, err := x.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, phoneindex.Stats{Total: 8, Searched: 7, Read: 8, Failed: 1}, res.Stats)
	s.src.failGUID.Store(nil)
	res, err = x.Lookup(ctx, "5550", "")
	require.NoError(t, err)
	require.Equal(t, phoneindex.Stats{Total: 8, Searched: 8, Read: 1}, res.Stats)

	s.clock.Advance(2 * time.Hour)
	s.src.delay = 100 * time.Millisecond
	cctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	res, err = x.Lookup(cctx, "5550", "")
	require.NoError(t, err)
	require.Less(t, res.Stats.Read, 8)
	require.Positive(t, res.Stats.Deferred)
	require.Equal(t, 8, res.Stats.Searched, "stale records are still matched")
}

func TestConfigValidated(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	_, err := phoneindex.New(db.Client, &counting{}, phoneindex.Config{Concurrency: -1})
	require.Error(t, err)
	_, err = phoneindex.New(db.Client, &counting{}, phoneindex.Config{RecordMaxAge: -time.Second})
	require.Error(t, err)
	_, err = phoneindex.New(nil, &counting{}, phoneindex.Config{})
	require.Error(t, err)
}
