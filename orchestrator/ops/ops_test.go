package ops_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/ops"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, // Fiber's clock goroutine (app.Test)
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

const base = "/chord/ortho-prd"

// fixture is the operation endpoints on a real Redis and the simulator,
// both on one fixed clock (Monday 2026-11-23 15:00 UTC), so every answer
// is the same run after run: a golden of it is exact.
type fixture struct {
	app   *fiber.App
	sim   *cloud9sim.Sim
	clock *clocktest.Clock
	db    *redistest.DB
	r     *slotcache.Refresher
}

func newFixture(t *testing.T, mod ...func(*ops.Config)) *fixture {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC))
	sim := cloud9sim.New(cloud9sim.Config{Now: clock.Now, Seed: 3, WriteLimit: cloud9sim.Unlimited})
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "x", Username: "x", Password: "x", VendorUsername: "t", Logger: log})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	db := redistest.New(t)
	cache, err := slots.NewCache(db.Client, slots.CacheConfig{Now: clock.Now, Logger: log})
	require.NoError(t, err)
	r, err := slotcache.New(slotcache.Config{Cache: cache, Redis: db.Client, Cloud9: client, LocationGUID: cloud9sim.DefaultLocationGUID,
		Attempts: 1, Schedule: "@every 5m", Columns: []string{cloud9sim.Chair8GUID}, Now: clock.Now, Logger: log})
	require.NoError(t, err)
	t.Cleanup(r.Close)
	app, err := web.New(web.Options{Logger: log})
	require.NoError(t, err)
	cfg := ops.Config{Redis: db.Client, Refresher: r, RequestTimeout: 20 * time.Second, Auth: func(c *fiber.Ctx) error { return c.Next() }, Logger: log}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := ops.New(cfg)
	require.NoError(t, err)
	h.Register(app, base)
	return &fixture{app: app, sim: sim, clock: clock, db: db, r: r}
}

func (f *fixture) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.app.Test(req, 30_000)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

var norm = contractstest.Normalizer{
	Keys:  map[string]string{"request_id": "{rid}"},
	Rules: []contractstest.Rule{{RE: contractstest.UUID, Name: "uuid", Numbered: true}},
}

func golden(t *testing.T, name string, raw []byte) {
	t.Helper()
	contractstest.Golden(t, name, norm.Normalize(t, raw))
}

func errCode(t *testing.T, raw []byte) string {
	t.Helper()
	var e struct {
		Success bool
		Error   struct{ Code string }
	}
	require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	require.False(t, e.Success)
	return e.Error.Code
}

// Every variant of the cache operations, golden, with the state each one
// leaves behind checked in Redis.
func TestCacheOperations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	st, body := f.do(t, http.MethodGet, base+"/cache-health", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_health_empty", body) // degraded: tiers empty

	st, body = f.do(t, http.MethodPost, base+"/cache/refresh", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_refresh", body)
	st, body = f.do(t, http.MethodGet, base+"/cache-health", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_health_healthy", body)

	st, body = f.do(t, http.MethodPost, base+"/cache/refresh", `{"tier":[2]}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_refresh_tier2", body)

	f.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1})
	st, body = f.do(t, http.MethodPost, "/test/redis-slot-cache/trigger", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_slot_cache_trigger_failed", body)
	st, body = f.do(t, http.MethodGet, base+"/cache-health", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_health_degraded", body)
	for range 2 {
		_, err := f.r.Refresh(ctx, nil)
		require.NoError(t, err)
	}
	st, body = f.do(t, http.MethodGet, base+"/cache-health", "")
	require.Equal(t, http.StatusServiceUnavailable, st)
	golden(t, "ops_cache_health_unhealthy", body)
	f.sim.SetFaults(cloud9sim.Faults{})

	st, body = f.do(t, http.MethodPost, "/test/slot-cache/prefetch", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_slot_cache_prefetch", body)
	st, body = f.do(t, http.MethodGet, "/test/slot-cache/status", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_slot_cache_status", body)
	st, body = f.do(t, http.MethodGet, "/test/redis-slot-cache/status", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_slot_cache_status", body)
	st, body = f.do(t, http.MethodPost, "/test/slot-cache/query", `{"startDate":"11/25/2026","endDate":"11/25/2026"}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_slot_cache_query", body)

	// A search-range list (what getApptSlots' fallback caches) beside the
	// tiers: DELETE cache naming a tier leaves it; naming none deletes it,
	// so no list the booking path could offer is left (issue 36).
	lists, err := slots.NewCache(f.db.Client, slots.CacheConfig{Now: f.clock.Now})
	require.NoError(t, err)
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	rng := slots.Range{LocationGUID: cloud9sim.DefaultLocationGUID, From: day, To: day.AddDate(0, 0, 30)}
	t1, found, err := f.r.Tier(ctx, 1)
	require.NoError(t, err)
	require.True(t, found)
	require.NoError(t, lists.Put(ctx, rng, t1.Slots[:3]))
	other := slots.Range{LocationGUID: "00000000-0000-0000-0000-0000000000aa", From: day, To: day.AddDate(0, 0, 30)}
	require.NoError(t, lists.Put(ctx, other, t1.Slots[:1]))

	st, body = f.do(t, http.MethodDelete, base+"/cache?tier=3", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_clear_tier3", body)
	_, found, err = f.r.Tier(ctx, 3)
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = lists.Get(ctx, rng)
	require.NoError(t, err)
	require.True(t, found, "naming a tier leaves the search-range lists")
	st, body = f.do(t, http.MethodDelete, "/test/slot-cache/clear", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_slot_cache_clear", body)
	require.EqualValues(t, 1, obj(t, body)["listsCleared"])
	_, found, err = lists.Get(ctx, rng)
	require.NoError(t, err)
	require.False(t, found, "DELETE cache deleted the search-range list")
	_, found, err = lists.Get(ctx, other)
	require.NoError(t, err)
	require.True(t, found, "another location's list is not this cache's")
	st, body = f.do(t, http.MethodDelete, "/test/redis-slot-cache/clear", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_slot_cache_clear_empty", body)

	st, body = f.do(t, http.MethodPost, base+"/cache/trigger", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_trigger", body)
	f.r.Wait()
	st, body = f.do(t, http.MethodPost, base+"/cache/trigger", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_cache_trigger_debounced", body)
	_, found, err = f.r.Tier(ctx, 1)
	require.NoError(t, err)
	require.True(t, found, "the triggered refresh filled the tiers")
}

// redisGet / redisSet / redisDelete: ttl honoured, foreign keys refused,
// bad input 4xx with the envelope and nothing changed.
func TestRedisOperations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rdb := f.db.Client

	st, body := f.do(t, http.MethodPost, base+"/redisSet", `{"key":"flowgate:ops:a","value":{"x":[1,2]},"ttl":120}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_set_ttl", body)
	ttl := rdb.TTL(ctx, "flowgate:ops:a").Val()
	require.InDelta(t, 120, ttl.Seconds(), 2, "the ttl is set (the original dropped it)")
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key=flowgate:ops:a", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.JSONEq(t, `{"x":[1,2]}`, string(body))

	st, body = f.do(t, http.MethodPost, base+"/redisSet", `{"key":"flowgate:ops:b","value":"plain"}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_set", body)
	require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "flowgate:ops:b").Val(), "no ttl: no expiry")
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key=flowgate:ops:missing", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.Equal(t, "null", string(body))

	st, body = f.do(t, http.MethodPost, base+"/redisDelete", `{"key":"flowgate:ops:b"}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_delete", body)
	require.Zero(t, rdb.Exists(ctx, "flowgate:ops:b").Val())
	st, body = f.do(t, http.MethodDelete, base+"/redisDelete?key=flowgate:ops:b", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	golden(t, "ops_redis_delete_missing", body)

	require.NoError(t, rdb.Set(ctx, "other:key", "keep", 0).Err())
	require.NoError(t, rdb.HSet(ctx, "flowgate:ops:h", "f", "v").Err())
	for name, c := range map[string]struct {
		method, path, body string
		status             int
		code               string
	}{
		"foreign_get":    {http.MethodGet, base + "/redisGet?key=other:key", "", 403, "forbidden"},
		"foreign_set":    {http.MethodPost, base + "/redisSet", `{"key":"other:key","value":1}`, 403, "forbidden"},
		"foreign_delete": {http.MethodPost, base + "/redisDelete", `{"key":"other:key"}`, 403, "forbidden"},
		"missing_key":    {http.MethodGet, base + "/redisGet", "", 400, "invalid"},
		"null_value":     {http.MethodPost, base + "/redisSet", `{"key":"flowgate:ops:c","value":null}`, 400, "invalid"},
		"negative_ttl":   {http.MethodPost, base + "/redisSet", `{"key":"flowgate:ops:c","value":1,"ttl":-5}`, 400, "invalid"},
		"huge_ttl":       {http.MethodPost, base + "/redisSet", `{"key":"flowgate:ops:c","value":1,"ttl":99999999999}`, 400, "invalid"},
		"ttl_string":     {http.MethodPost, base + "/redisSet", `{"key":"flowgate:ops:c","value":1,"ttl":"60"}`, 400, "invalid"},
		"malformed":      {http.MethodPost, base + "/redisSet", `{"key":`, 400, "invalid"},
		"wrong_type":     {http.MethodGet, base + "/redisGet?key=flowgate:ops:h", "", 409, "conflict"},
		"bad_tier":       {http.MethodPost, base + "/cache/refresh", `{"tier":7}`, 400, "invalid"},
		"bad_tier_query": {http.MethodDelete, base + "/cache?tier=x", "", 400, "invalid"},
		"bad_query_date": {http.MethodPost, "/test/slot-cache/query", `{"startDate":"yesterday"}`, 400, "invalid"},
	} {
		st, body := f.do(t, c.method, c.path, c.body)
		require.Equal(t, c.status, st, "%s: %s", name, body)
		require.Equal(t, c.code, errCode(t, body), name)
		golden(t, "ops_error_"+name, body)
	}
	require.Equal(t, "keep", rdb.Get(ctx, "other:key").Val(), "a refused request changed nothing")

	// The booking flow's own reservations are readable (its debugging
	// guide reads them with redisGet) but never writable.
	seedKey := "SlotReservation:1fef9297-7c8b-426b-b0d1-f2275136e48b:20260311:0910:07687884-7e37-49aa-8028-d43b751c9034"
	require.NoError(t, rdb.Set(ctx, seedKey, `{"sessionId":"s1"}`, time.Minute).Err())
	t.Cleanup(func() { rdb.Del(context.Background(), seedKey) })
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key="+seedKey, "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.JSONEq(t, `{"sessionId":"s1"}`, string(body))
	st, body = f.do(t, http.MethodPost, base+"/redisSet", `{"key":"`+seedKey+`","value":1}`)
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	st, body = f.do(t, http.MethodPost, base+"/redisDelete", `{"key":"`+seedKey+`"}`)
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	require.Equal(t, `{"sessionId":"s1"}`, rdb.Get(ctx, seedKey).Val())
	require.Zero(t, rdb.Exists(ctx, "flowgate:ops:c").Val())
	require.Zero(t, f.sim.Calls(cloud9.ProcGetOnlineReservations), "a bad tier fetched nothing")

	// A refresh already running: 409, nothing fetched.
	require.NoError(t, rdb.Set(ctx, "flowgate:{slots}:refresh:lease", "other", time.Minute).Err())
	st, body = f.do(t, http.MethodPost, base+"/cache/refresh", "")
	require.Equal(t, http.StatusConflict, st)
	golden(t, "ops_error_refresh_busy", body)
	require.Zero(t, f.sim.Calls(cloud9.ProcGetOnlineReservations))
}

// A tier asked several times (query and body) is refreshed once: the list
// never exceeds the number of tiers. Fails without the dedupe (four
// refreshes of tier 2).
func TestCacheRefreshTiersDeduped(t *testing.T) {
	f := newFixture(t)
	st, body := f.do(t, http.MethodPost, base+"/cache/refresh?tier=2,2", `{"tier":[2,2]}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	var got contracts.CacheRefreshResponse
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Results, 1, "%s", body)
	require.Equal(t, 2, got.Results[0].Tier)
}

// With ReadKey (the hold engine's FaceKey) a SlotReservation key is read
// where the engine keeps it — under a hash tag on Redis Cluster or with
// REDIS_SHARDS — though the caller names it as the booking flow does.
func TestRedisGetReadsAFaceKeyWhereTheEngineKeepsIt(t *testing.T) {
	f := newFixture(t, func(c *ops.Config) {
		c.ReadKey = func(key string) string { return "{holds:3.7}:" + key }
	})
	ctx := context.Background()
	key := "SlotReservation:loc:20260311:0910:col"
	require.NoError(t, f.db.Client.Set(ctx, "{holds:3.7}:"+key, `{"sessionId":"s2"}`, time.Minute).Err())
	st, body := f.do(t, http.MethodGet, base+"/redisGet?key="+key, "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.JSONEq(t, `{"sessionId":"s2"}`, string(body))
	// flowgate's own keys are read as named.
	require.NoError(t, f.db.Client.Set(ctx, "flowgate:ops:own", `1`, time.Minute).Err())
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key=flowgate:ops:own", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.Equal(t, "1", string(body))
}

func obj(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}
