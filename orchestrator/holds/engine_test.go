package holds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestClaimWritesTheSeedKeysAndPublishes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("sess_xyz", specX, slot9))
	require.NoError(t, err)
	require.Equal(t, "sess_xyz", h.ClientID)
	require.Equal(t, specX, h.SpecialistID)
	require.Equal(t, t0.Add(30*time.Second), h.HoldExpiresAt)
	require.Equal(t, holds.FaceWeb, h.Face)

	face := b.p + "hold:" + typeA + ":2025-03-15T09:00:00Z:" + specX
	raw, err := b.rdb.Get(b.ctx, face).Result()
	require.NoError(t, err)
	var stored holds.Hold
	require.NoError(t, json.Unmarshal([]byte(raw), &stored))
	require.Equal(t, h, stored)
	ttl := b.rdb.PTTL(b.ctx, face).Val()
	require.InDelta(t, 30*time.Second, ttl, float64(time.Second))
	require.Equal(t, raw, b.rdb.Get(b.ctx, b.p+"holds:slot:"+specX+":2025-03-15T09:00:00Z").Val())
	members := b.rdb.ZRange(b.ctx, b.p+"client:sess_xyz:holds", 0, -1).Val()
	require.Equal(t, []string{h.HoldID}, members)
	require.Positive(t, b.rdb.PTTL(b.ctx, b.p+"client:sess_xyz:holds").Val())

	ev := next(t, events)
	require.Equal(t, holds.Event{Type: "hold", Hold: h}, ev)

	active, err := b.eng.Active(b.ctx, typeA)
	require.NoError(t, err)
	require.Equal(t, []holds.Hold{h}, active)
}

func TestSecondClaimantIsRefusedAndNothingChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	before := b.snapshot(t)
	_, err = b.eng.Claim(b.ctx, claimReq("b", specX, slot9))
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	var te *holds.TakenError
	require.ErrorAs(t, err, &te)
	require.Equal(t, h.HoldID, te.Holder.HoldID)
	require.Positive(t, te.ExpiresIn)
	require.Equal(t, before, b.snapshot(t))

	again, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err, "same client, same slot: idempotent")
	require.Equal(t, h.HoldID, again.HoldID)
	require.Equal(t, before, b.snapshot(t))
}

func TestBadClaimsAreInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, r := range map[string]holds.ClaimRequest{
		"no client":    claimReq("", specX, slot9),
		"colon client": claimReq("a:b", specX, slot9),
		"brace spec":   claimReq("a", "x{y}", slot9),
		"no start":     claimReq("a", specX, time.Time{}),
		"end before":   {AppointmentTypeID: typeA, ClientID: "a", SlotStart: slot9, SlotEnd: slot9, SpecialistID: specX},
		"no type":      {ClientID: "a", SlotStart: slot9, SlotEnd: slot9.Add(time.Hour), SpecialistID: specX},
	} {
		_, err := b.eng.Claim(b.ctx, r)
		require.ErrorIs(t, err, holds.ErrInvalid, name)
		require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err), name)
	}
	require.Empty(t, b.snapshot(t))
}

func TestAssignmentTriesCandidatesInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cands := []holds.Candidate{{SpecialistID: "spec-a"}, {SpecialistID: "spec-b"}, {SpecialistID: "spec-c"},
		{SpecialistID: "spec-d"}, {SpecialistID: "spec-e"}}
	// the same order as TestOrderVectors: e, d, a, c, b
	var got []string
	for i := range 5 {
		r := claimReq(fmt.Sprint("c", i), "", slot9)
		r.Candidates = cands
		h, err := b.eng.Claim(b.ctx, r)
		require.NoError(t, err)
		got = append(got, h.SpecialistID)
	}
	require.Equal(t, []string{"spec-e", "spec-d", "spec-a", "spec-c", "spec-b"}, got)
	r := claimReq("c9", "", slot9)
	r.Candidates = cands
	_, err := b.eng.Claim(b.ctx, r)
	require.ErrorIs(t, err, holds.ErrSlotTaken, "all taken: the last refusal")
	r.Candidates = nil
	_, err = b.eng.Claim(b.ctx, r)
	require.ErrorIs(t, err, holds.ErrNoCandidates)
}

// Vectors computed independently (Python, FNV-1a 32 over
// "550e8400-e29b-41d4-a716-446655440000:2025-03-15T09:00:00Z:spec-x"):
// a 1a8e99fc, b 1d8e9eb5, c 1c8e9d22, d 178e9543, e 168e93b0.
func TestOrderVectors(t *testing.T) {
	t.Parallel()
	cands := []holds.Candidate{{SpecialistID: "spec-a"}, {SpecialistID: "spec-b"}, {SpecialistID: "spec-c"},
		{SpecialistID: "spec-d"}, {SpecialistID: "spec-e"}}
	ids := func(cs []holds.Candidate) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.SpecialistID
		}
		return out
	}
	require.Equal(t, []string{"spec-e", "spec-d", "spec-a", "spec-c", "spec-b"}, ids(holds.Order(typeA, slot9, cands)))
	require.Equal(t, []string{"spec-d", "spec-e", "spec-b", "spec-c", "spec-a"},
		ids(holds.Order(typeA, slot9.Add(30*time.Minute), cands)), "another slot, another order")
	// priority first: b and c at priority 2 come before the rest, in hash order c, b
	pri := append([]holds.Candidate(nil), cands...)
	pri[1].Priority, pri[2].Priority = 2, 2
	require.Equal(t, []string{"spec-c", "spec-b", "spec-e", "spec-d", "spec-a"}, ids(holds.Order(typeA, slot9, pri)))
	require.Equal(t, "spec-a", cands[0].SpecialistID, "input untouched")
	dup := append(append([]holds.Candidate(nil), cands...), holds.Candidate{SpecialistID: "spec-a", Priority: 9})
	require.Len(t, holds.Order(typeA, slot9, dup), 5, "duplicates keep their first entry")
}

// bothModes runs f with the engine's scripts auto-pipelined (the default)
// and with Config.PlainRedis (one round trip each).
func bothModes(t *testing.T, f func(t *testing.T, mode func(*holds.Config))) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			f(t, func(c *holds.Config) { c.PlainRedis = plain })
		})
	}
}

func TestQuotaIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	bothModes(t, testQuotaIsExactUnderConcurrency)
}

func testQuotaIsExactUnderConcurrency(t *testing.T, mode func(*holds.Config)) {
	b := setup(t, mode)
	const n = 3
	var won, quota atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := claimReq("greedy", specX, slot9.Add(time.Duration(i)*30*time.Minute))
			r.MaxHolds = n
			_, err := b.eng.Claim(b.ctx, r)
			var qe *holds.QuotaError
			switch {
			case err == nil:
				won.Add(1)
			case errors.As(err, &qe):
				require.Equal(t, n, qe.Limit)
				require.Positive(t, qe.RetryAfter)
				quota.Add(1)
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, n, won.Load())
	require.EqualValues(t, 200-n, quota.Load())
	require.EqualValues(t, n, b.rdb.ZCard(b.ctx, b.p+"client:greedy:holds").Val())
}

func TestOneWinnerAmongAThousand(t *testing.T) {
	t.Parallel()
	bothModes(t, testOneWinnerAmongAThousand)
}

func testOneWinnerAmongAThousand(t *testing.T, mode func(*holds.Config)) {
	b := setup(t, mode)
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := claimReq(fmt.Sprint("c", i), specX, slot9)
			if i%2 == 1 { // the other face: another key of its own, the same canonical slot
				r.Face, r.FaceKey, r.TTL = "iva", fmt.Sprint("SlotReservation:loc:20250315:0400:", specX), 90*time.Second
			}
			_, err := b.eng.Claim(b.ctx, r)
			if err == nil {
				won.Add(1)
			} else if !errors.Is(err, holds.ErrSlotTaken) {
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, won.Load())
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	next(t, events)
	b.clock.Advance(20 * time.Second)
	ext, ok, err := b.eng.Heartbeat(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(50*time.Second), ext.HoldExpiresAt)
	ev := next(t, events)
	require.Equal(t, "heartbeat", ev.Type)
	require.Equal(t, ext, ev.Hold)
	score := b.rdb.ZScore(b.ctx, b.p+"client:a:holds", h.HoldID).Val()
	require.EqualValues(t, t0.Add(50*time.Second).UnixMilli(), score)

	before := b.snapshot(t)
	_, ok, err = b.eng.Heartbeat(b.ctx, "b", h.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "another client's hold")
	_, ok, err = b.eng.Heartbeat(b.ctx, "a", "nosuchhold")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, before, b.snapshot(t))

	require.NoError(t, b.rdb.Del(b.ctx, b.eng.SlotKey(specX, slot9)).Err()) // as if expired
	_, ok, err = b.eng.Heartbeat(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "expired")
}

func TestReleaseIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	next(t, events)
	_, err = b.eng.Release(b.ctx, "b", h.HoldID)
	require.ErrorIs(t, err, holds.ErrNotOwner)
	ok, err := b.eng.Release(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	ev := next(t, events)
	require.Equal(t, holds.Event{Type: "release", Hold: h}, ev)
	ok, err = b.eng.Release(b.ctx, "a", h.HoldID)
	require.NoError(t, err)
	require.False(t, ok)
	require.Empty(t, b.snapshot(t), "every key and index gone")
	_, err = b.eng.Claim(b.ctx, claimReq("b", specX, slot9))
	require.NoError(t, err, "free again")
}

func TestConfirmSetsCooldownAndCancelClearsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	next(t, events)

	_, err = b.eng.Confirm(b.ctx, "b", h.HoldID, "appt1", 0)
	require.ErrorIs(t, err, holds.ErrNotOwner)
	_, err = b.eng.Confirm(b.ctx, "a", "nosuch", "appt1", 0)
	require.ErrorIs(t, err, holds.ErrHoldNotFound)

	got, err := b.eng.Confirm(b.ctx, "a", h.HoldID, "appt1", 0)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.Equal(t, holds.Event{Type: "confirm", Hold: h}, next(t, events))
	holder, ttl, found, err := b.eng.HolderOf(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.True(t, found, "the booking keeps the slot key")
	require.Equal(t, h, holder)
	require.Equal(t, slot9.Add(30*time.Minute).Sub(t0), ttl.Round(time.Second), "until the slot ends")
	// A cancel knows the slot, not the hold: the release event is the
	// booked hold all the same (its id, real slot times and expiry).
	slot := holds.Hold{AppointmentTypeID: typeA, SpecialistID: specX, SlotStartDate: slot9}
	ok, err := b.eng.ReleaseBooking(b.ctx, "other", slot)
	require.NoError(t, err)
	require.False(t, ok, "another appointment's cancel leaves it")
	ok, err = b.eng.ReleaseBooking(b.ctx, "appt1", slot)
	require.NoError(t, err)
	require.True(t, ok)
	rel := next(t, events)
	require.Equal(t, holds.Event{Type: "release", Hold: h}, rel)
	require.False(t, rel.HoldExpiresAt.IsZero() || rel.SlotEndDate.IsZero() || rel.HoldID == "")
	require.Zero(t, b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val())

	cd := b.p + "client_limit:a:" + typeA
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.rdb.Get(b.ctx, cd).Val()), &v))
	require.Equal(t, map[string]any{"bookedAt": "2025-03-15T08:55:00.000Z", "appointmentTypeId": typeA,
		"cooldownMinutes": float64(1440), "appointmentId": "appt1"}, v)
	require.InDelta(t, 24*time.Hour, b.rdb.PTTL(b.ctx, cd).Val(), float64(time.Second))
	require.Equal(t, cd, b.rdb.Get(b.ctx, b.p+"client_limit:appointment:appt1").Val())

	left, err := b.eng.CooldownRemaining(b.ctx, "a", typeA)
	require.NoError(t, err)
	require.InDelta(t, 24*time.Hour, left, float64(time.Second))
	before := b.snapshot(t)
	_, err = b.eng.Claim(b.ctx, claimReq("a", specY, slot9))
	var ce *holds.CooldownError
	require.ErrorAs(t, err, &ce)
	require.InDelta(t, 24*time.Hour, ce.Remaining, float64(time.Second))
	require.Equal(t, before, b.snapshot(t), "a refusal changes nothing")

	r := claimReq("a", specY, slot9)
	r.Cooldown = -1 // a type without cooldown
	_, err = b.eng.Claim(b.ctx, r)
	require.NoError(t, err)

	ok, err = b.eng.ClearCooldown(b.ctx, "appt1")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.eng.ClearCooldown(b.ctx, "appt1")
	require.NoError(t, err)
	require.False(t, ok)
	left, err = b.eng.CooldownRemaining(b.ctx, "a", typeA)
	require.NoError(t, err)
	require.Zero(t, left)
}

func TestExpiredHoldsAreAnnouncedAsRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, realClock, func(c *holds.Config) { c.HoldTTL = 150 * time.Millisecond })
	events := b.subscribe(t)
	h, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	next(t, events)
	n, err := b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "still live")
	require.Eventually(t, func() bool { // Redis drops the key, the clock passes the expiry
		return b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val() == 0 && time.Now().After(h.HoldExpiresAt)
	}, 5*time.Second, 20*time.Millisecond)
	n, err = b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ev := next(t, events)
	require.Equal(t, "release", ev.Type)
	require.Equal(t, h.HoldID, ev.HoldID)
	require.Empty(t, b.snapshot(t), "indexes cleaned")
	n, err = b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestReleaseSlotAndKeep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	iva := claimReq("sess1", specX, slot9)
	iva.Face, iva.TTL, iva.FaceKey, iva.FaceValue = "iva", 90*time.Second, "SlotReservation:k", `{"sessionId":"sess1"}`
	h, err := b.eng.Claim(b.ctx, iva)
	require.NoError(t, err)
	next(t, events)
	_, err = b.eng.Claim(b.ctx, claimReq("web", specX, slot9))
	require.ErrorIs(t, err, holds.ErrSlotTaken, "an IVA reservation refuses a web claim")

	kept, out, left, err := b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: func() holds.ClaimRequest {
		r := iva
		r.TTL = 300 * time.Second
		return r
	}()})
	require.NoError(t, err)
	require.Equal(t, holds.Kept, out)
	require.Equal(t, h.HoldID, kept.HoldID)
	require.Equal(t, 300*time.Second, left)
	require.Equal(t, "confirm", next(t, events).Type)
	require.InDelta(t, 300*time.Second, b.rdb.PTTL(b.ctx, b.p+"SlotReservation:k").Val(), float64(time.Second))
	require.Equal(t, `{"sessionId":"sess1"}`, b.rdb.Get(b.ctx, b.p+"SlotReservation:k").Val())

	ok, err := b.eng.ReleaseSlot(b.ctx, typeA, specX, slot9)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "release", next(t, events).Type)
	require.Empty(t, b.snapshot(t))

	kept, out, _, err = b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: iva})
	require.NoError(t, err)
	require.Equal(t, holds.Retaken, out)
	require.NotEqual(t, h.HoldID, kept.HoldID)
	_, _, _, err = b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: func() holds.ClaimRequest {
		r := iva
		r.ClientID = "sess2"
		return r
	}()})
	require.ErrorIs(t, err, holds.ErrSlotTaken)
}

func TestRedisDownIsUnavailable(t *testing.T) {
	t.Parallel()
	bothModes(t, testRedisDownIsUnavailable)
}

func testRedisDownIsUnavailable(t *testing.T, mode func(*holds.Config)) {
	b := setupOn(t, redistest.Dead(t), mode)
	_, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.ErrorIs(t, err, holds.ErrUnavailable)
	require.Equal(t, contracts.CodeUnavailable, contracts.ErrorCode(err))
	_, _, err = b.eng.Heartbeat(b.ctx, "a", "h")
	require.ErrorIs(t, err, holds.ErrUnavailable)
	_, err = b.eng.Release(b.ctx, "a", "h")
	require.ErrorIs(t, err, holds.ErrUnavailable)
	_, err = b.eng.Active(b.ctx, typeA)
	require.ErrorIs(t, err, holds.ErrUnavailable)
	_, err = b.eng.Sweep(b.ctx)
	require.ErrorIs(t, err, holds.ErrUnavailable)
	_, err = b.eng.ClearCooldown(b.ctx, "x")
	require.ErrorIs(t, err, holds.ErrUnavailable)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []holds.Config{{KeyPrefix: "{x}"}, {HashTag: "x"}, {HashTag: "{a}{b}"}, {HoldTTL: -1},
		{MaxHolds: -1}, {Cooldown: -1}} {
		_, err := holds.New(redistest.Dead(t), c)
		require.Error(t, err, "%+v", c)
	}
}

// A late release or expiry of a hold whose slot key a newer hold now has
// cleans its indexes without announcing "release": the slot is not free.
func TestLateReleaseOfATakenSlotIsSilent(t *testing.T) {
	t.Parallel()
	b := setup(t, realClock, func(c *holds.Config) { c.HoldTTL = 150 * time.Millisecond })
	events := b.subscribe(t)
	slot10 := slot9.Add(time.Hour)
	old1, err := b.eng.Claim(b.ctx, claimReq("a", specX, slot9))
	require.NoError(t, err)
	old2, err := b.eng.Claim(b.ctx, claimReq("c", specX, slot10))
	require.NoError(t, err)
	next(t, events)
	next(t, events)
	require.Eventually(t, func() bool { // Redis drops the keys, the clock passes the expiries
		return b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9), b.eng.SlotKey(specX, slot10)).Val() == 0 &&
			time.Now().After(old1.HoldExpiresAt) && time.Now().After(old2.HoldExpiresAt)
	}, 5*time.Second, 10*time.Millisecond)
	r := claimReq("b", specX, slot9)
	r.TTL = time.Minute
	newer, err := b.eng.Claim(b.ctx, r)
	require.NoError(t, err)
	r = claimReq("d", specX, slot10)
	r.TTL = time.Minute
	_, err = b.eng.Claim(b.ctx, r)
	require.NoError(t, err)
	require.Equal(t, "hold", next(t, events).Type)
	require.Equal(t, "hold", next(t, events).Type)

	ok, err := b.eng.Release(b.ctx, "a", old1.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "the slot is b's now")
	n, err := b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "old2's slot is d's now: nothing announced")
	holder, _, found, err := b.eng.HolderOf(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, newer.HoldID, holder.HoldID, "the newer hold is untouched")

	ok, err = b.eng.Release(b.ctx, "b", newer.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	ev := next(t, events)
	require.Equal(t, "release", ev.Type)
	require.Equal(t, newer.HoldID, ev.HoldID, "no release of %s or %s came first", old1.HoldID, old2.HoldID)
}

// roundTrips counts what a client sends: single commands and pipelines.
type roundTrips struct{ single, pipelines atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.single.Add(1); return next(ctx, cmd) }
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.pipelines.Add(1); return next(ctx, cmds) }
}

// Concurrent claims share round trips through the AutoPipeliner by
// default; PlainRedis sends one script per claim.
func TestConcurrentClaimsShareRoundTrips(t *testing.T) {
	t.Parallel()
	const n = 200
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			rdb := redistest.New(t).Client
			rt := &roundTrips{}
			b := setupOn(t, rdb, func(c *holds.Config) { c.PlainRedis = plain })
			rdb.AddHook(rt)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := b.eng.Claim(b.ctx, claimReq(fmt.Sprint("c", i), specX, slot9.Add(time.Duration(i)*30*time.Minute)))
					assert.NoError(t, err)
				}()
			}
			wg.Wait()
			require.EqualValues(t, n, b.rdb.ZCard(b.ctx, b.p+"holds:active:"+typeA).Val(), "every claim landed")
			sent := rt.single.Load() + rt.pipelines.Load()
			t.Logf("%d claims: %d single commands, %d pipelines", n, rt.single.Load(), rt.pipelines.Load())
			if plain {
				require.GreaterOrEqual(t, rt.single.Load(), int64(n))
				return
			}
			require.Less(t, sent, int64(n), "concurrent claims must share round trips")
		})
	}
}
