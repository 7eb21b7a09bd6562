package slotcache_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const loc = cloud9sim.DefaultLocationGUID

// env is a simulator, a Redis database and a clock shared by the
// "instances" a test builds on them.
type env struct {
	sim    *cloud9sim.Sim
	client *cloud9.Client
	db     *redistest.DB
	clock  *clocktest.Clock
}

func newEnv(t *testing.T, simCfg cloud9sim.Config) *env {
	t.Helper()
	if simCfg.WriteLimit == (cloud9sim.Rate{}) {
		simCfg.WriteLimit = cloud9sim.Unlimited
	}
	simCfg.Seed = 7
	sim := cloud9sim.New(simCfg)
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "x", Username: "x", Password: "x", VendorUsername: "test",
		Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &env{sim: sim, client: c, db: redistest.New(t), clock: clocktest.New(time.Now().UTC().Truncate(time.Second))}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// instance is one flowgate process' slot cache on e: refresher and source.
type instance struct {
	r   *slotcache.Refresher
	src *slotcache.Source
}

func (e *env) instance(t *testing.T, mod func(*slotcache.Config)) instance {
	t.Helper()
	cache, err := slots.NewCache(e.db.Client, slots.CacheConfig{Now: e.clock.Now, Logger: quiet()})
	require.NoError(t, err)
	cfg := slotcache.Config{Cache: cache, Redis: e.db.Client, Cloud9: e.client, LocationGUID: loc,
		Columns: []string{cloud9sim.Chair8GUID}, RetryDelay: 10 * time.Millisecond, Now: e.clock.Now, Logger: quiet()}
	if mod != nil {
		mod(&cfg)
	}
	r, err := slotcache.New(cfg)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	flat := bookingdeps.SlotSource{Cloud9: e.client, Cache: cache, LocationGUID: loc, Columns: []string{cloud9sim.Chair8GUID},
		Search: bookingdeps.SearchPolicy{RetryDelay: 10 * time.Millisecond}, Now: e.clock.Now, Logger: quiet()}
	return instance{r: r, src: &slotcache.Source{R: r, Fallback: flat, Columns: []string{cloud9sim.Chair8GUID}}}
}

// reads is how many GetOnlineReservations the simulator answered.
func (e *env) reads() int { return e.sim.Calls(cloud9.ProcGetOnlineReservations) }

// tomorrow is the first day of every tier, MM/DD/YYYY.
func (e *env) day(offset int) string {
	n := e.clock.Now()
	return time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, offset).Format("01/02/2006")
}
