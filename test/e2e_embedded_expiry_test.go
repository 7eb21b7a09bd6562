package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedExpiry: with no REDIS_URL (the README's quickstart) every TTL
// behaves as on a real Redis, within a second. The embedded store is
// miniredis, whose TTLs move only when it is told; the binary drives it
// from the wall clock. Through the binary: a 2 s web hold expires and is
// announced as release, a late heartbeat answers 200 {ok:false}
// (docs/holds.md) and does not renew it; a replay-guard key and a booked
// slot's SlotReservation lapse; every longer-lived key (a cooldown, the
// session and slot caches, idempotency records) counts down at the wall
// clock's pace.
// Reproduce: test/run -run TestEmbeddedExpiry ./test/
func TestEmbeddedExpiry(t *testing.T) {
	t.Parallel()
	p := startFlowgate(t, withSecrets(map[string]string{
		"HOLD_TTL": "2s", "SLOT_RESERVATION_BOOKED_TTL": "2s", "WEBHOOK_TOLERANCE": "2s",
	}))
	rdb := embeddedRedis(t, p)
	ctx := context.Background()

	// A web hold of 2 s: its release event comes by itself.
	typ, starts := webSlots(t, p)
	stream, _ := sseEvents(t, fmt.Sprintf("%s/v1/holds/stream?appointmentTypeId=%s&clientId=board-1&leaseMs=60000", p.Base, url.QueryEscape(typ)))
	nextOf(t, stream, "connected")
	body, _ := json.Marshal(map[string]string{"appointmentTypeId": typ, "slotStartDate": starts[0], "clientId": "web-1"})
	resp, err := http.Post(p.Base+"/v1/holds", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var hold struct {
		HoldID string `json:"holdId"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&hold))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	held := time.Now()
	nextOf(t, stream, "hold")
	nextOf(t, stream, "release")
	lived := time.Since(held)
	t.Logf("a 2 s hold was announced released after %s", lived.Round(time.Millisecond))
	require.Less(t, lived, 2*time.Second+1500*time.Millisecond, "HOLD_TTL 2s + the 1 s expiry job + ≤ 0.5 s")
	require.GreaterOrEqual(t, lived, 1500*time.Millisecond, "released long before its TTL")
	late, _ := json.Marshal(map[string]string{"holdId": hold.HoldID, "clientId": "web-1"})
	req, _ := http.NewRequest(http.MethodPatch, p.Base+"/v1/holds", bytes.NewReader(late))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	var hb struct {
		OK bool `json:"ok"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&hb)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "seed 002 answers a late heartbeat 200 {ok:false}")
	require.False(t, hb.OK, "a heartbeat after expiry renewed the hold")

	// A booking: its SlotReservation (SLOT_RESERVATION_BOOKED_TTL 2 s)
	// lapses; the other keys it left count down with the wall clock.
	c := newBookingClient(t, p)
	pat := c.createPatient("Ann", "Lee", "call-exp")
	list := c.slots("call-exp", 1)
	c.booked(apptReq(pat.PatientGUID, pat.BookingAuthToken, list[0], "Tom Lee", "call-exp"))
	resv := keysMatching(t, rdb, "*SlotReservation:*")
	require.NotEmpty(t, resv, "a booking keeps its slot reserved")
	requireGone(t, rdb, resv, 3500*time.Millisecond)

	// A signed request leaves a replay-guard key of a few seconds.
	a := newAPI(t, p, newSigner())
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/queue/stats", nil).Status)
	replay := keysMatching(t, rdb, "*webhook:replay:*")
	require.NotEmpty(t, replay)
	ttl, err := rdb.PTTL(ctx, replay[0]).Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "the replay guard's key has a TTL")
	requireGone(t, rdb, replay, ttl+time.Second)

	// Every other key with a TTL: 2 s later it has 2 s less (±0.7 s) —
	// but the scheduler's own keys, which its jobs rewrite every tick.
	before := map[string]time.Duration{}
	for _, k := range keysMatching(t, rdb, "*") {
		if strings.Contains(k, ":cron:") {
			continue
		}
		if d, err := rdb.PTTL(ctx, k).Result(); err == nil && d > 10*time.Second {
			before[k] = d
		}
	}
	require.NotEmpty(t, before, "a booking leaves keys that expire (session, cooldown, caches)")
	time.Sleep(2 * time.Second)
	for k, d := range before {
		now, err := rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		if now < 0 { // gone meanwhile (-2)
			continue
		}
		moved := d - now
		require.InDelta(t, float64(2*time.Second), float64(moved), float64(700*time.Millisecond),
			"%s: TTL %s then %s 2 s later", k, d, now)
	}
	names := make([]string, 0, len(before))
	for k := range before {
		names = append(names, k)
	}
	t.Logf("%d keys with longer TTLs counted down with the wall clock: %s", len(before), strings.Join(names, " "))
}

// embeddedRedis connects to the binary's embedded store (its address is in
// the EMBEDDED REDIS start line).
func embeddedRedis(t *testing.T, p *proc) *redis.Client {
	t.Helper()
	lines := p.LogLines("EMBEDDED REDIS")
	require.Len(t, lines, 1)
	var l struct {
		Addr string `json:"addr"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &l), lines[0])
	require.NotEmpty(t, l.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func keysMatching(t *testing.T, rdb *redis.Client, pattern string) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), pattern).Result()
	require.NoError(t, err)
	return keys
}

// requireGone waits until none of keys exists, at most within.
func requireGone(t *testing.T, rdb *redis.Client, keys []string, within time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		n, err := rdb.Exists(context.Background(), keys...).Result()
		require.NoError(t, err)
		if n == 0 {
			t.Logf("%s… gone %s after the check began", strings.Join(keys[:1], ""), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > within {
			t.Fatalf("%d of %v still there after %s", n, keys, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webSlots is the first /v1 appointment type of p and its open slot
// starts.
func webSlots(t *testing.T, p *proc) (typ string, starts []string) {
	t.Helper()
	var types struct {
		AppointmentTypes []struct {
			ID string `json:"id"`
		} `json:"appointmentTypes"`
	}
	getJSON(t, p.Base+"/v1/appointment-types", &types)
	require.NotEmpty(t, types.AppointmentTypes)
	typ = types.AppointmentTypes[0].ID
	var slots struct {
		Slots []struct {
			SlotStartDate string `json:"slotStartDate"`
		} `json:"slots"`
	}
	getJSON(t, p.Base+"/v1/appointment-types/"+url.PathEscape(typ)+"/timeslots", &slots)
	require.NotEmpty(t, slots.Slots)
	for _, s := range slots.Slots {
		starts = append(starts, s.SlotStartDate)
	}
	return typ, starts
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
