package bookingdeps_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/clocktest"
)

// searchEnv is a slot source on the simulator whose waits advance a fake
// clock (nothing sleeps): slept sums them, onSleep runs at each.
type searchEnv struct {
	env
	src     bookingdeps.SlotSource
	clock   *clocktest.Clock
	slept   time.Duration
	onSleep func()
}

func newSearchEnv(t *testing.T, p bookingdeps.SearchPolicy) *searchEnv {
	t.Helper()
	se := &searchEnv{env: setup(t), clock: clocktest.New(time.Now())}
	se.src = bookingdeps.SlotSource{Cloud9: se.client, Cache: se.cache, LocationGUID: cloud9sim.DefaultLocationGUID,
		Search: p, Now: se.clock.Now, Outage: &bookingdeps.Outage{Hold: time.Minute},
		Sleep: func(ctx context.Context, d time.Duration) error {
			se.clock.Advance(d)
			se.slept += d
			if se.onSleep != nil {
				se.onSleep()
			}
			return ctx.Err()
		}}
	return se
}

func (se *searchEnv) reads() int { return se.sim.Calls(cloud9.ProcGetOnlineReservations) }

func onlyReads(f cloud9sim.Faults) cloud9sim.Faults {
	f.Procedures = []string{cloud9.ProcGetOnlineReservations}
	return f
}

// Empty <Records/> pages are retried as the original retries them: 4 tries
// in each of 2 windows, 5 s apart — 8 calls, 35 s (of the fake clock) —
// and the answer says so (7 retries, expanded to the second window).
func TestRangeSearchRetriesEmptyPagesAsOriginal(t *testing.T) {
	se := newSearchEnv(t, bookingdeps.SearchPolicy{})
	se.sim.SetFaults(onlyReads(cloud9sim.Faults{EmptyRecordsRate: 1}))
	res, err := se.src.Slots(context.Background(), booking.SlotQuery{StartDate: tomorrow()})
	require.NoError(t, err, "empty pages are no slots, not a failure")
	require.Empty(t, res.Slots)
	require.Equal(t, 8, se.reads(), "4 tries × 2 windows")
	require.Equal(t, 8, res.Attempts)
	require.Equal(t, 7, res.Retries)
	require.True(t, res.Expanded, "the second window was searched")
	require.Equal(t, 35*time.Second, se.slept, "7 waits of 5 s: the original's 35 s")
	from, err := time.Parse("01/02/2006", tomorrow())
	require.NoError(t, err)
	require.Equal(t, from.AddDate(0, 0, 30).Format("01/02/2006"), res.SearchRange.StartDate, "the answer names the window searched last")
}

// Code 0 ("An unknown error occurred.") is retried; the try after it
// answers, one retry is reported, and the first window's slots are
// offered.
func TestRangeSearchRetriesCode0(t *testing.T) {
	se := newSearchEnv(t, bookingdeps.SearchPolicy{})
	se.sim.SetFaults(onlyReads(cloud9sim.Faults{ErrorRate: 1}))
	se.onSleep = func() { se.sim.SetFaults(cloud9sim.Faults{}) }
	res, err := se.src.Slots(context.Background(), booking.SlotQuery{StartDate: tomorrow()})
	require.NoError(t, err)
	require.NotEmpty(t, res.Slots)
	require.Equal(t, 2, se.reads())
	require.Equal(t, 1, res.Retries)
	require.False(t, res.Expanded)
	require.Equal(t, 5*time.Second, se.slept)
}

// The search stays within its budget (SLOT_SEARCH_BUDGET) and the
// caller's deadline: no retry is made whose wait would end past either.
// A search that failed for good is remembered: the next one makes one try
// and answers at once; a successful call ends the memory.
func TestRangeSearchBudgetAndOutageMemory(t *testing.T) {
	se := newSearchEnv(t, bookingdeps.SearchPolicy{Budget: 12 * time.Second})
	se.sim.SetFaults(onlyReads(cloud9sim.Faults{ErrorRate: 1}))
	ctx := context.Background()
	q := booking.SlotQuery{StartDate: tomorrow()}
	res, err := se.src.Slots(ctx, q)
	var ce *cloud9.Error
	require.ErrorAs(t, err, &ce, "Cloud9's code 0 after every try")
	require.Equal(t, 0, ce.Code)
	require.Equal(t, 3, se.reads(), "tries at 0, 5 and 10 s; the next would start past 12 s")
	require.Equal(t, 2, res.Retries)
	require.Equal(t, 10*time.Second, se.slept)
	require.True(t, se.src.Outage.Active(se.clock.Now()))

	se.slept = 0
	_, err = se.src.Slots(ctx, q)
	require.Error(t, err)
	require.Equal(t, 4, se.reads(), "Cloud9 failed a search lately: one try")
	require.Zero(t, se.slept, "answered at once")

	se.sim.SetFaults(cloud9sim.Faults{})
	res, err = se.src.Slots(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, res.Slots)
	require.False(t, se.src.Outage.Active(se.clock.Now()), "a call that answers ends the memory")

	// The caller's deadline (7 s) is shorter than the budget: 2 tries.
	se.src.Outage = nil
	se.sim.SetFaults(onlyReads(cloud9sim.Faults{ErrorRate: 1}))
	before := se.reads()
	dctx, cancel := context.WithTimeout(ctx, 7*time.Second)
	defer cancel()
	_, err = se.src.Slots(dctx, booking.SlotQuery{StartDate: time.Now().AddDate(0, 0, 40).Format("01/02/2006")})
	require.Error(t, err)
	require.Equal(t, before+2, se.reads(), "tries at 0 and 5 s within the caller's 7 s")
}

// A refused connection is Cloud9 down: the search answers at once, without
// retries (the caller is transferred now, not after 35 s).
func TestRangeSearchCloud9DownAnswersAtOnce(t *testing.T) {
	se := newSearchEnv(t, bookingdeps.SearchPolicy{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String() + "/GetData.ashx"
	require.NoError(t, l.Close())
	c, err := cloud9.New(cloud9.Config{Endpoint: dead, ClientID: "x", Username: "x", Password: "x", VendorUsername: "test"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	se.src.Cloud9 = c
	res, err := se.src.Slots(context.Background(), booking.SlotQuery{StartDate: tomorrow()})
	require.Error(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Zero(t, se.slept)
}

// The policy's bounds: at most the original's 35 s, tries 1..10, windows
// 1..4, a delay within the budget.
func TestSearchPolicyValidate(t *testing.T) {
	require.NoError(t, bookingdeps.SearchPolicy{}.WithDefaults().Validate())
	for _, p := range []bookingdeps.SearchPolicy{
		{Budget: 36 * time.Second}, {Attempts: 11}, {Windows: 5}, {RetryDelay: time.Minute, Budget: 30 * time.Second},
	} {
		require.Error(t, p.WithDefaults().Validate(), "%+v", p)
	}
}
