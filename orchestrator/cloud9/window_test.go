package cloud9_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

// A family's writes go through at once: N calls together are admitted,
// the N+1st waits until the first leaves the window (Per + margin).
func TestWindowLimiterAdmitsABurstOfN(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	l := cloud9.NewWindowLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 5, Per: time.Minute}), cloud9.Rate{},
		cloud9.WithMargin(250*time.Millisecond))
	require.Equal(t, "flowgate:cloud9:rl:{SetAppointment}:window", l.Key("SetAppointment"))
	require.Equal(t, time.Minute+250*time.Millisecond, l.Window("SetAppointment"))
	for i := range 5 {
		ok, after, err := l.Allow(ctx, "SetAppointment")
		require.NoError(t, err)
		require.True(t, ok, "call %d of a burst of 5", i+1)
		require.Zero(t, after)
	}
	ok, after, err := l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.False(t, ok, "the sixth call in the window")
	require.Greater(t, after, time.Minute, "until the first admission leaves the window")
	require.LessOrEqual(t, after, time.Minute+250*time.Millisecond)

	ok, _, err = l.Allow(ctx, "SetPatient")
	require.NoError(t, err)
	require.True(t, ok, "each procedure has its own log")
	for range 10 {
		ok, _, err = l.Allow(ctx, "GetOnlineReservations")
		require.NoError(t, err)
		require.True(t, ok, "reads are not limited")
	}
	ttl, err := db.Client.PTTL(ctx, l.Key("SetAppointment")).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Minute, "the log lives as long as its window")
	require.NoError(t, l.Reset(ctx, "SetAppointment"))
	ok, _, err = l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.True(t, ok, "after Reset")
}

// Property: for random arrival patterns (bursts, gaps, concurrent callers
// on one clock), no window of length Per holds more than N admitted
// calls, and a call is refused only when N admissions are younger than
// Per + margin (the limiter never refuses more than it must).
func TestWindowLimiterNeverExceedsNInAnyWindow(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		rate := cloud9.Rate{N: 1 + r.IntN(6), Per: time.Duration(1+r.IntN(60)) * time.Second}
		margin := time.Duration(r.IntN(500)) * time.Millisecond
		var mu sync.Mutex
		now := time.Unix(1_800_000_000, 0)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		l := cloud9.NewWindowLimiter(db.Client, cloud9.WriteRates(rate), cloud9.Rate{}, cloud9.WithMargin(margin),
			cloud9.WithKeyPrefix("prop:"+time.Duration(seed).String()+":")).WithWindowClock(clock)
		win := rate.Per + margin
		var admitted []time.Time
		for range 300 {
			// Next arrival: mostly bursts (0 gap), sometimes a fraction of
			// the window, sometimes more than it.
			var gap time.Duration
			switch r.IntN(4) {
			case 0:
				gap = 0
			case 1:
				gap = time.Duration(r.Int64N(int64(rate.Per) / int64(rate.N)))
			case 2:
				gap = time.Duration(r.Int64N(int64(win)))
			default:
				gap = time.Duration(r.Int64N(2 * int64(win)))
			}
			gap = gap.Truncate(time.Microsecond)
			mu.Lock()
			now = now.Add(gap)
			at := now
			mu.Unlock()
			ok, after, err := l.Allow(ctx, "SetAppointment")
			require.NoError(t, err)
			young := 0
			for _, a := range admitted {
				if at.Sub(a) < win {
					young++
				}
			}
			if ok {
				require.Less(t, young, rate.N, "seed %d: admitted with %d admissions younger than %s", seed, young, win)
				admitted = append(admitted, at)
			} else {
				require.Equal(t, rate.N, young, "seed %d: refused with only %d admissions in the window", seed, young)
				require.Positive(t, after)
			}
		}
		sort.Slice(admitted, func(i, j int) bool { return admitted[i].Before(admitted[j]) })
		for i := 0; i+rate.N < len(admitted); i++ {
			require.GreaterOrEqual(t, admitted[i+rate.N].Sub(admitted[i]), rate.Per,
				"seed %d (%s, margin %s): %d calls within %s", seed, rate, margin, rate.N+1, admitted[i+rate.N].Sub(admitted[i]))
		}
	}
}

// Concurrent callers on Redis TIME: of 40 calls at once under 5/min,
// exactly 5 are admitted, whatever the interleaving.
func TestWindowLimiterIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	l := cloud9.NewWindowLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 5, Per: time.Minute}), cloud9.Rate{})
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := l.Allow(context.Background(), "SetPatient")
			require.NoError(t, err)
			if ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 5, admitted)
}

// CLOUD9_COMMENT_RESERVE (issue 43.3): a family's comments (the parent's
// insurance comment and one per child; here a parent and four children,
// five) go through the reserve-less copy, which stops one place short of
// the window, so an editInsurance right after (the whole window) is sent
// at once, not starved for a minute. Both share one log.
func TestWindowLimiterReserveKeepsAPlaceForACallerComment(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	full := cloud9.NewWindowLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 5, Per: time.Minute}), cloud9.Rate{})
	notes := full.WithReserve(cloud9.ProcSetPatientComment, cloud9.DefaultCommentReserve)
	require.Equal(t, full.Key(cloud9.ProcSetPatientComment), notes.Key(cloud9.ProcSetPatientComment), "one log")
	admitted := 0
	for range 5 {
		ok, _, err := notes.Allow(ctx, cloud9.ProcSetPatientComment)
		require.NoError(t, err)
		if ok {
			admitted++
		}
	}
	require.Equal(t, 4, admitted, "the family's comments leave the reserved place")
	ok, _, err := full.Allow(ctx, cloud9.ProcSetPatientComment)
	require.NoError(t, err)
	require.True(t, ok, "editInsurance at once: sent")
	ok, after, err := notes.Allow(ctx, cloud9.ProcSetPatientComment)
	require.NoError(t, err)
	require.False(t, ok)
	require.Greater(t, after, time.Duration(0))

	ok, _, err = notes.Allow(ctx, cloud9.ProcSetAppointment)
	require.NoError(t, err)
	require.True(t, ok, "other procedures keep their whole window")
	require.Equal(t, 1, full.WithReserve(cloud9.ProcSetPatientComment, 9).RateFor(cloud9.ProcSetPatientComment).N, "never below one place")
}
