package cloud9_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestRates(t *testing.T) {
	t.Parallel()
	require.Equal(t, cloud9.Rate{N: 1, Per: 10 * time.Second}, cloud9.SpacingToRate(10000), "the seed's BOOKING_SPACING_MS")
	require.True(t, cloud9.SpacingToRate(0).IsZero())
	require.Equal(t, 12*time.Second, cloud9.Rate{N: 5, Per: time.Minute}.Interval())
	require.Equal(t, 1200*time.Millisecond, cloud9.Rate{N: 5, Per: 6 * time.Second}.Interval())
	require.Equal(t, "5/1m0s", cloud9.Rate{N: 5, Per: time.Minute}.String())
	require.Equal(t, "unlimited", cloud9.Rate{}.String())
	w := cloud9.WriteRates(cloud9.Rate{N: 5, Per: time.Minute})
	require.Len(t, w, 5)
	for _, p := range []string{"SetAppointment", "SetPatient", "SetPatientComment", "SetAppointmentStatusCanceled", "SetAppointmentStatusConfirmed"} {
		require.Equal(t, cloud9.Rate{N: 5, Per: time.Minute}, w[p], p)
	}
}

func TestRedisLimiterAllow(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ctx := context.Background()
	l := cloud9.NewRedisLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 1, Per: time.Second}), cloud9.Rate{}, cloud9.WithMargin(0))
	require.Equal(t, "flowgate:cloud9:rl:{SetAppointment}", l.Key("SetAppointment"))

	ok, after, err := l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, after)
	ttl, err := db.Client.PTTL(ctx, "rate:flowgate:cloud9:rl:{SetAppointment}").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "redis_rate keeps the key under its own rate: prefix, with a TTL")
	require.LessOrEqual(t, ttl, time.Second)

	ok, after, err = l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.False(t, ok, "burst 1: the second call must wait a full interval")
	require.Greater(t, after, 800*time.Millisecond)
	require.LessOrEqual(t, after, time.Second)

	ok, _, err = l.Allow(ctx, "SetPatient")
	require.NoError(t, err)
	require.True(t, ok, "each procedure has its own limiter")

	for range 5 {
		ok, _, err = l.Allow(ctx, "GetOnlineReservations")
		require.NoError(t, err)
		require.True(t, ok, "reads are not limited by default")
	}
	n, err := db.Client.Exists(ctx, "rate:flowgate:cloud9:rl:{GetOnlineReservations}").Result()
	require.NoError(t, err)
	require.Zero(t, n, "an unlimited procedure costs no Redis call")

	time.Sleep(after) // redis_rate runs on Redis's own clock: RetryAfter is real time
	ok, _, err = l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.True(t, ok, "after RetryAfter the call may go")

	require.NoError(t, l.Reset(ctx, "SetAppointment"))
	ok, _, err = l.Allow(ctx, "SetAppointment")
	require.NoError(t, err)
	require.True(t, ok)

	// The margin lengthens the interval.
	m := cloud9.NewRedisLimiter(db.Client, nil, cloud9.Rate{N: 1, Per: time.Second}, cloud9.WithMargin(500*time.Millisecond), cloud9.WithKeyPrefix("other:"))
	require.Equal(t, "other:{X}", m.Key("X"))
	ok, _, err = m.Allow(ctx, "X")
	require.NoError(t, err)
	require.True(t, ok)
	_, after, err = m.Allow(ctx, "X")
	require.NoError(t, err)
	require.Greater(t, after, 1300*time.Millisecond)
	require.Equal(t, cloud9.Rate{N: 1, Per: time.Second}, m.RateFor("X"), "def applies to procedures not named")
}

// TestSharedLimiterNeverExceedsRate: two clients (two instances) with
// limiters of their own on one Redis, three callers each, all hammering
// SetAppointment at 5/6s through Wait, against a server that answers code
// 8 as soon as a 6 s window holds a sixth call.
func TestSharedLimiterNeverExceedsRate(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	const limit, window = 5, 6 * time.Second
	var mu sync.Mutex
	var seen []time.Time
	srv := newServer(t, func(*cloud9.Request) []byte {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		seen = append(seen, now)
		n := 0
		for _, at := range seen {
			if now.Sub(at) < window {
				n++
			}
		}
		if n > limit {
			return answer(t, failure(8, "Too many requests within the timeframe for procedure SetAppointment"))
		}
		return answer(t, result("Appointment GUID Added: "+apptGUID))
	})
	reg := prometheus.NewRegistry()
	rate := cloud9.Rate{N: limit, Per: window}
	clients := make([]*cloud9.Client, 2)
	for i := range clients {
		l := cloud9.NewRedisLimiter(db.Client, cloud9.WriteRates(rate), cloud9.Rate{})
		clients[i] = newClient(t, srv.URL, func(c *cloud9.Config) { c.Limiter = l; c.Registerer = reg })
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var booked atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					admitted, _, err := c.Wait(ctx, cloud9.ProcSetAppointment, 30*time.Second)
					if err != nil {
						continue
					}
					// Once admitted, the call is finished even if the run ends.
					if _, _, err := c.SetAppointment(context.WithoutCancel(admitted), validAppointment()); err != nil {
						t.Errorf("booking failed: %v", err)
						return
					}
					booked.Add(1)
				}
			}()
		}
	}
	wg.Wait()

	arrivals := srv.arrivals()
	require.GreaterOrEqual(t, len(arrivals), limit+1, "the run must span more than one window")
	for i := range arrivals {
		n := 0
		for j := i; j < len(arrivals) && arrivals[j].Sub(arrivals[i]) < window; j++ {
			n++
		}
		require.LessOrEqual(t, n, limit, "a %s window from call %d holds %d calls", window, i, n)
	}
	for i := 1; i < len(arrivals); i++ {
		require.Greater(t, arrivals[i].Sub(arrivals[i-1]), rate.Interval()-100*time.Millisecond, "calls are spaced, not burst")
	}
	require.Equal(t, int64(len(arrivals)), booked.Load())
	require.Zero(t, metricValue(t, reg, "flowgate_cloud9_rate_limited_total", map[string]string{"procedure": "SetAppointment"}),
		"flowgate never provokes Too many requests")
}

// script is a Limiter answering from a list, counting its calls.
type script struct {
	mu      sync.Mutex
	answers []time.Duration // 0: allowed; >0: retry after
	calls   int
	err     error
}

func (s *script) Allow(context.Context, string) (bool, time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return false, 0, s.err
	}
	if len(s.answers) == 0 {
		return true, 0, nil
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a == 0, a, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// sleeps records the waits of Client.Wait instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func TestWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T, answers ...time.Duration) (*cloud9.Client, *script, *sleeps, *server, *prometheus.Registry) {
		lim := &script{answers: answers}
		sl := &sleeps{}
		reg := prometheus.NewRegistry()
		srv := newServer(t, func(*cloud9.Request) []byte { return answer(t, result("Appointment GUID Added: "+apptGUID)) })
		c := newClient(t, srv.URL, func(c *cloud9.Config) { c.Limiter = lim; c.Sleep = sl.Sleep; c.Registerer = reg })
		return c, lim, sl, srv, reg
	}

	t.Run("within budget", func(t *testing.T) {
		t.Parallel()
		c, lim, sl, srv, _ := setup(t, 3*time.Second, 2*time.Second, 0)
		admitted, waited, err := c.Wait(ctx, "SetAppointment", 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 5*time.Second, waited)
		require.Equal(t, []time.Duration{3 * time.Second, 2 * time.Second}, sl.d)
		require.Equal(t, 3, lim.count())

		_, _, err = c.SetAppointment(admitted, validAppointment())
		require.NoError(t, err)
		require.Equal(t, 3, lim.count(), "the admission is not asked for twice")
		require.Len(t, srv.requests(), 1)

		_, _, err = c.SetAppointment(admitted, validAppointment())
		require.NoError(t, err)
		require.Equal(t, 4, lim.count(), "an admission is used once")

		admitted, _, err = c.Wait(ctx, "SetAppointment", 0)
		require.NoError(t, err)
		_, _, _ = c.SetPatientComment(admitted, patientGUID, "note")
		require.Equal(t, 6, lim.count(), "an admission is for its procedure only")
	})

	t.Run("beyond budget", func(t *testing.T) {
		t.Parallel()
		c, lim, sl, srv, _ := setup(t, 4*time.Second, 7*time.Second)
		admitted, waited, err := c.Wait(ctx, "SetAppointment", 10*time.Second)
		var le *cloud9.LimitedError
		require.ErrorAs(t, err, &le)
		require.Equal(t, 7*time.Second, le.RetryAfter)
		require.Equal(t, "SetAppointment", le.Procedure)
		require.Equal(t, 4*time.Second, waited, "it waited what fitted, then gave up")
		require.Equal(t, []time.Duration{4 * time.Second}, sl.d)
		require.Equal(t, ctx, admitted)
		require.Equal(t, 2, lim.count())
		require.Empty(t, srv.requests())
	})

	t.Run("zero budget", func(t *testing.T) {
		t.Parallel()
		c, _, sl, _, _ := setup(t, 12*time.Second)
		_, waited, err := c.Wait(ctx, "SetAppointment", 0)
		require.Equal(t, 12*time.Second, cloud9.RetryAfter(err))
		require.Zero(t, waited)
		require.Empty(t, sl.d)
	})

	t.Run("call without wait is held back, not sent", func(t *testing.T) {
		t.Parallel()
		c, _, sl, srv, reg := setup(t, 9*time.Second)
		_, _, err := c.SetAppointment(ctx, validAppointment())
		var le *cloud9.LimitedError
		require.ErrorAs(t, err, &le)
		require.Equal(t, 9*time.Second, le.RetryAfter, "the Asynq handler turns this into asynqrt.Defer")
		require.Empty(t, srv.requests())
		require.Empty(t, sl.d, "Call never waits")
		require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "limited"}))
		require.Zero(t, metricValue(t, reg, "flowgate_cloud9_request_duration_seconds", map[string]string{"procedure": "SetAppointment"}))
	})

	t.Run("limiter down fails open", func(t *testing.T) {
		t.Parallel()
		c, lim, _, srv, _ := setup(t)
		lim.err = errors.New("redis: connection refused")
		_, _, err := c.SetAppointment(ctx, validAppointment())
		require.NoError(t, err)
		admitted, waited, err := c.Wait(ctx, "SetAppointment", time.Second)
		require.NoError(t, err)
		require.Zero(t, waited)
		_, _, err = c.SetAppointment(admitted, validAppointment())
		require.NoError(t, err)
		require.Len(t, srv.requests(), 2)
	})

	t.Run("canceled while waiting", func(t *testing.T) {
		t.Parallel()
		c, _, _, _, _ := setup(t, time.Second)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err := c.Wait(cctx, "SetAppointment", 10*time.Second)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("no limiter", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, "https://x/GetData.ashx")
		admitted, waited, err := c.Wait(ctx, "SetAppointment", 0)
		require.NoError(t, err)
		require.Zero(t, waited)
		require.Equal(t, ctx, admitted)
	})
}

// TestWaitOnRedis waits for real on the Redis limiter.
func TestWaitOnRedis(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	l := cloud9.NewRedisLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 1, Per: 300 * time.Millisecond}), cloud9.Rate{}, cloud9.WithMargin(0))
	c := newClient(t, "https://x/GetData.ashx", func(c *cloud9.Config) { c.Limiter = l })
	ctx := context.Background()
	_, waited, err := c.Wait(ctx, "SetAppointment", time.Second)
	require.NoError(t, err)
	require.Zero(t, waited)
	began := time.Now()
	_, waited, err = c.Wait(ctx, "SetAppointment", time.Second)
	require.NoError(t, err)
	require.Greater(t, waited, 200*time.Millisecond)
	require.LessOrEqual(t, waited, 300*time.Millisecond+50*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond)
	_, _, err = c.Wait(ctx, "SetAppointment", 100*time.Millisecond)
	require.Greater(t, cloud9.RetryAfter(err), 200*time.Millisecond, "the next slot is beyond a 100 ms budget")
}
