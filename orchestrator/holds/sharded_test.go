package holds_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

const nShards = 6

var shards6 = shard.Must("holds", nShards)

// specIn is a specialist id (upper case, as a face may spell it) whose
// resource shard is i.
func specIn(i int) string {
	for n := 0; ; n++ {
		s := fmt.Sprintf("770A1200-0000-4000-8000-%012d", n)
		if shards6.Of(strings.ToLower(s)) == i {
			return s
		}
	}
}

// clientIn is a client id of shard i, other than the ones in skip.
func clientIn(i int, tag string) string {
	for n := 0; ; n++ {
		c := fmt.Sprintf("%s%d", tag, n)
		if shards6.Of(c) == i {
			return c
		}
	}
}

// clientKey is clientID's quota index as the engine keys it with 6 shards.
func (b *bundle) clientKey(clientID string) string {
	return b.p + shards6.Tag(shards6.Of(clientID)) + ":client:" + clientID + ":holds"
}

func sharded(c *holds.Config) { c.Shards = nShards }

// The sharded engine on both backends: a 3-master cluster and one plain
// Redis (the tags are used there too).
func TestShardedEngine(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	backends := map[string]redis.UniversalClient{"cluster": c.Client(), "plain": redistest.New(t).Client}
	for name, rdb := range backends {
		t.Run(name, func(t *testing.T) {
			t.Run("BothFacesOneSlot", func(t *testing.T) { shardedBothFaces(t, rdb) })
			t.Run("OneWinnerUnderContention", func(t *testing.T) { shardedContention(t, rdb) })
			t.Run("QuotaAcrossShards", func(t *testing.T) { shardedQuota(t, rdb) })
			t.Run("QuotaUnderConcurrency", func(t *testing.T) { shardedQuotaConcurrent(t, rdb) })
			t.Run("HeartbeatKeepsQuotaEntry", func(t *testing.T) { shardedHeartbeat(t, rdb) })
			t.Run("ConfirmAndCooldown", func(t *testing.T) { shardedConfirm(t, rdb) })
			t.Run("ReleaseEveryShard", func(t *testing.T) { shardedRelease(t, rdb) })
			t.Run("SweepEveryShard", func(t *testing.T) { shardedSweep(t, rdb) })
			t.Run("Adopt", func(t *testing.T) { shardedAdopt(t, rdb) })
			t.Run("ActiveAcrossShards", func(t *testing.T) { shardedActive(t, rdb) })
		})
	}
	t.Run("EveryMasterHoldsAShard", func(t *testing.T) {
		b := setupOn(t, c.Client(), sharded)
		for i := range nShards {
			_, err := b.eng.Claim(b.ctx, claimReq(clientIn(i, "m"), specIn(i), slot9))
			require.NoError(t, err)
		}
		per, err := c.KeysOnMaster(b.ctx, b.p+"*")
		require.NoError(t, err)
		require.Len(t, per, 3)
		for addr, n := range per {
			require.Positive(t, n, "master %s holds no hold keys", addr)
		}
	})
}

func TestShardsAreValidated(t *testing.T) {
	t.Parallel()
	rdb := redistest.New(t).Client
	for _, n := range []int{-1, shard.MaxShards + 1} {
		_, err := holds.New(rdb, holds.Config{Shards: n})
		require.Error(t, err, n)
	}
	_, err := holds.New(rdb, holds.Config{Shards: 2, HashTag: "{x}"})
	require.Error(t, err)
	eng, err := holds.New(rdb, holds.Config{})
	require.NoError(t, err)
	require.Equal(t, 1, eng.Shards())
	require.Equal(t, "SlotReservation:a:b", eng.FaceKey("SlotReservation:a:b"))
}

func ivaReq(session, spec string, start time.Time) holds.ClaimRequest {
	r := claimReq(session, spec, start)
	r.Face, r.TTL, r.MaxHolds, r.Cooldown, r.Refresh = holds.FaceIVA, 90*time.Second, -1, -1, true
	r.FaceKey = "SlotReservation:loc:20250315:0900:" + strings.ToLower(spec)
	r.FaceValue = `{"sessionId":"` + session + `"}`
	return r
}

func shardedBothFaces(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	spec := specIn(2)
	iva := ivaReq(clientIn(4, "s"), spec, slot9)
	h, err := b.eng.Claim(b.ctx, iva)
	require.NoError(t, err)
	face := b.eng.FaceKey(iva.FaceKey)
	require.Equal(t, b.p+shards6.Tag(2)+":"+iva.FaceKey, face, "FaceKey finds the resource shard from the name")
	require.Equal(t, iva.FaceValue, b.rdb.Get(b.ctx, face).Val())
	_, err = b.eng.Claim(b.ctx, claimReq(clientIn(2, "w"), strings.ToLower(spec), slot9))
	require.ErrorIs(t, err, holds.ErrSlotTaken, "the web face is refused the IVA face's slot")
	again, err := b.eng.Claim(b.ctx, iva)
	require.NoError(t, err)
	require.Equal(t, h.HoldID, again.HoldID)
	require.Equal(t, []string{h.HoldID}, b.rdb.ZRange(b.ctx, b.clientKey(iva.ClientID), 0, -1).Val())

	bad := iva
	bad.FaceKey = "SlotReservation:loc:20250315:0900:" + specIn(3)
	_, err = b.eng.Claim(b.ctx, bad)
	require.ErrorIs(t, err, holds.ErrInvalid, "a face key must name its specialist")
}

func shardedContention(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	spec := specIn(5)
	var wins, taken atomic.Int64
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := claimReq(fmt.Sprintf("cc%d", i), spec, slot9)
			if i%2 == 1 {
				r = ivaReq(fmt.Sprintf("cs%d", i), spec, slot9)
			}
			_, err := b.eng.Claim(b.ctx, r)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, holds.ErrSlotTaken):
				taken.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, wins.Load())
	require.EqualValues(t, 47, taken.Load())
	var entries int64
	for i := range 48 {
		entries += b.rdb.ZCard(b.ctx, b.clientKey(fmt.Sprintf("cc%d", i))).Val() +
			b.rdb.ZCard(b.ctx, b.clientKey(fmt.Sprintf("cs%d", i))).Val()
	}
	require.EqualValues(t, 1, entries, "only the winner keeps a quota entry")
}

func shardedQuota(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	client := clientIn(0, "q")
	var got []holds.Hold
	for i := 1; i <= 3; i++ { // three holds, none in the client's shard
		h, err := b.eng.Claim(b.ctx, claimReq(client, specIn(i), slot9))
		require.NoError(t, err)
		got = append(got, h)
	}
	_, err := b.eng.Claim(b.ctx, claimReq(client, specIn(4), slot9))
	var qe *holds.QuotaError
	require.ErrorAs(t, err, &qe)
	require.Equal(t, 3, qe.Limit)
	require.Positive(t, qe.RetryAfter)
	require.EqualValues(t, 3, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val(), "the refused claim reserved nothing")
	again, err := b.eng.Claim(b.ctx, claimReq(client, specIn(2), slot9))
	require.NoError(t, err, "a held slot is answered at the quota, as with one shard")
	require.Equal(t, got[1].HoldID, again.HoldID)

	ok, err := b.eng.Release(b.ctx, client, got[0].HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.eng.Claim(b.ctx, claimReq(client, specIn(0), slot9))
	require.NoError(t, err, "a release frees its place")
}

func shardedQuotaConcurrent(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	for round := range 3 {
		client := clientIn(round, "qc")
		var wins atomic.Int64
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := slot9.Add(time.Duration(round*100+i) * time.Hour)
				_, err := b.eng.Claim(b.ctx, claimReq(client, specIn(i%nShards), start))
				var qe *holds.QuotaError
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.As(err, &qe):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 3, wins.Load(), "round %d", round)
		require.EqualValues(t, 3, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val())
	}
}

func shardedHeartbeat(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded, func(c *holds.Config) { c.MaxHolds = 1 })
	client := clientIn(1, "hb")
	h, err := b.eng.Claim(b.ctx, claimReq(client, specIn(3), slot9))
	require.NoError(t, err)
	b.clock.Advance(20 * time.Second)
	_, ok, err := b.eng.Heartbeat(b.ctx, client, h.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	score := b.rdb.ZScore(b.ctx, b.clientKey(client), h.HoldID).Val()
	require.InDelta(t, float64(t0.Add(50*time.Second).UnixMilli()), score, 1, "the quota entry moved with the hold")
	b.clock.Advance(20 * time.Second) // past the first expiry: the entry must still count
	_, err = b.eng.Claim(b.ctx, claimReq(client, specIn(4), slot9))
	var qe *holds.QuotaError
	require.ErrorAs(t, err, &qe)

	_, ok, err = b.eng.Heartbeat(b.ctx, clientIn(1, "other"), h.HoldID)
	require.NoError(t, err)
	require.False(t, ok)
}

func shardedConfirm(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	client := clientIn(0, "cf")
	appt := "appt-confirm"
	require.NotEqual(t, shards6.Of(client), shards6.Of(appt), "the index lives in a third shard")
	h, err := b.eng.Claim(b.ctx, claimReq(client, specIn(4), slot9))
	require.NoError(t, err)
	_, err = b.eng.Confirm(b.ctx, clientIn(0, "zz"), h.HoldID, appt, time.Minute)
	require.ErrorIs(t, err, holds.ErrNotOwner)
	_, err = b.eng.Confirm(b.ctx, client, h.HoldID, appt, time.Minute)
	require.NoError(t, err)
	require.Zero(t, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val(), "the confirmed hold left the quota")
	id, err := b.eng.BookedAppointment(b.ctx, specIn(4), slot9)
	require.NoError(t, err)
	require.Equal(t, appt, id)
	left, err := b.eng.CooldownRemaining(b.ctx, client, typeA)
	require.NoError(t, err)
	require.Positive(t, left)
	_, err = b.eng.Claim(b.ctx, claimReq(client, specIn(5), slot9))
	var ce *holds.CooldownError
	require.ErrorAs(t, err, &ce)
	ok, err := b.eng.ClearCooldown(b.ctx, appt)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.eng.Claim(b.ctx, claimReq(client, specIn(5), slot9))
	require.NoError(t, err)

	_, err = b.eng.Confirm(b.ctx, client, "nope", "appt-x", time.Minute)
	require.ErrorIs(t, err, holds.ErrHoldNotFound)
	require.NoError(t, b.eng.StartCooldown(b.ctx, client, "type-b", "appt-ext", time.Minute))
	left, err = b.eng.CooldownRemaining(b.ctx, client, "type-b")
	require.NoError(t, err)
	require.Positive(t, left)
	ok, err = b.eng.ClearCooldown(b.ctx, "appt-ext")
	require.NoError(t, err)
	require.True(t, ok)
}

func shardedRelease(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded, func(c *holds.Config) { c.MaxHolds = 100 })
	client := clientIn(2, "rl")
	var hs []holds.Hold
	for i := range nShards {
		h, err := b.eng.Claim(b.ctx, claimReq(client, specIn(i), slot9))
		require.NoError(t, err)
		hs = append(hs, h)
	}
	require.EqualValues(t, nShards, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val())
	for i, h := range hs {
		if i%2 == 0 {
			ok, err := b.eng.Release(b.ctx, client, h.HoldID)
			require.NoError(t, err)
			require.True(t, ok)
		} else {
			ok, err := b.eng.ReleaseSlot(b.ctx, typeA, specIn(i), slot9)
			require.NoError(t, err)
			require.True(t, ok)
		}
		_, _, found, err := b.eng.HolderOf(b.ctx, specIn(i), slot9)
		require.NoError(t, err)
		require.False(t, found)
	}
	require.Zero(t, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val())
	require.Empty(t, b.snapshotKeys(t, ":holds:records"), "no record left in any shard")
}

// snapshotKeys is the bundle's keys containing part.
func (b *bundle) snapshotKeys(t *testing.T, part string) []string {
	t.Helper()
	var out []string
	for k := range b.snapshot(t) {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}

func shardedSweep(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded, realClock, func(c *holds.Config) { c.HoldTTL = 150 * time.Millisecond; c.MaxHolds = 100 })
	client := clientIn(3, "sw")
	var expires time.Time
	for i := range nShards {
		h, err := b.eng.Claim(b.ctx, claimReq(client, specIn(i), slot9))
		require.NoError(t, err)
		if h.HoldExpiresAt.After(expires) {
			expires = h.HoldExpiresAt
		}
	}
	require.Eventually(t, func() bool { // the TTLs run out: Redis drops the keys, the clock passes the expiries
		if !time.Now().After(expires) {
			return false
		}
		for i := range nShards {
			if b.rdb.Exists(b.ctx, b.eng.SlotKey(specIn(i), slot9)).Val() != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)
	n, err := b.eng.Sweep(b.ctx)
	require.NoError(t, err)
	require.Equal(t, nShards, n, "every shard swept in one call")
	require.Zero(t, b.rdb.ZCard(b.ctx, b.clientKey(client)).Val())
	require.Empty(t, b.snapshotKeys(t, ":holds:"))
}

func shardedAdopt(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded)
	web, session, spec := clientIn(0, "aw"), clientIn(1, "as"), specIn(2)
	wh, err := b.eng.Claim(b.ctx, claimReq(web, spec, slot9))
	require.NoError(t, err)
	c, err := b.eng.Adopt(b.ctx, holds.AdoptRequest{ClaimRequest: ivaReq(session, spec, slot9),
		FromClientID: web, FromHoldID: wh.HoldID, Memo: "m"})
	require.NoError(t, err)
	require.True(t, c.New)
	require.Zero(t, b.rdb.ZCard(b.ctx, b.clientKey(web)).Val(), "the web hold left its client's quota")
	require.Equal(t, []string{c.HoldID}, b.rdb.ZRange(b.ctx, b.clientKey(session), 0, -1).Val())
	a, found, err := b.eng.Adopted(b.ctx, web, wh.HoldID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, c.HoldID, a.Hold.HoldID)
	holder, _, _, err := b.eng.HolderOf(b.ctx, spec, slot9)
	require.NoError(t, err)
	require.Equal(t, c.HoldID, holder.HoldID)

	_, err = b.eng.Adopt(b.ctx, holds.AdoptRequest{ClaimRequest: ivaReq(clientIn(4, "as"), spec, slot9),
		FromClientID: web, FromHoldID: wh.HoldID})
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	require.Zero(t, b.rdb.ZCard(b.ctx, b.clientKey(clientIn(4, "as"))).Val(), "a refused adoption keeps no entry")

	_, outcome, _, err := b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: ivaReq(session, spec, slot9)})
	require.NoError(t, err)
	require.Equal(t, holds.Kept, outcome)
	_, outcome, _, err = b.eng.Keep(b.ctx, holds.KeepRequest{ClaimRequest: ivaReq(session, specIn(5), slot9)})
	require.NoError(t, err)
	require.Equal(t, holds.Retaken, outcome)
	require.EqualValues(t, 2, b.rdb.ZCard(b.ctx, b.clientKey(session)).Val())
}

func shardedActive(t *testing.T, rdb redis.UniversalClient) {
	b := setupOn(t, rdb, sharded, func(c *holds.Config) { c.MaxHolds = 100 })
	var want []string
	for i := range nShards {
		h, err := b.eng.Claim(b.ctx, claimReq(clientIn((i+1)%nShards, "ac"), specIn(nShards-1-i), slot9))
		require.NoError(t, err)
		want = append(want, h.HoldID)
		b.clock.Advance(time.Second) // later claims expire later
	}
	active, err := b.eng.Active(b.ctx, typeA)
	require.NoError(t, err)
	var got []string
	for _, h := range active {
		got = append(got, h.HoldID)
	}
	require.Equal(t, want, got, "every shard's holds, earliest expiry first")
}
