package reservation_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestKeyIsTheSeeds(t *testing.T) {
	t.Parallel()
	k, err := reservation.KeyOf(s910)
	require.NoError(t, err)
	require.Equal(t, "SlotReservation:1fef9297-7c8b-426b-b0d1-f2275136e48b:20260311:0910:07687884-7e37-49aa-8028-d43b751c9034", k)

	pm := slot("03/11/2026 01:05 PM")
	pm.LocationGUID, pm.ScheduleColumnGUID = strings.ToUpper(loc), strings.ToUpper(chair8)
	k, err = reservation.KeyOf(pm)
	require.NoError(t, err)
	require.Equal(t, "SlotReservation:1fef9297-7c8b-426b-b0d1-f2275136e48b:20260311:1305:07687884-7e37-49aa-8028-d43b751c9034", k,
		"24-hour time; GUIDs lower-cased")

	for name, s := range map[string]slots.Slot{
		"no location": {StartTime: "3/11/2026 9:10 AM", ScheduleColumnGUID: chair8},
		"no column":   {StartTime: "3/11/2026 9:10 AM", LocationGUID: loc},
		"bad time":    {StartTime: "soon", LocationGUID: loc, ScheduleColumnGUID: chair8},
		"colon":       {StartTime: "3/11/2026 9:10 AM", LocationGUID: "a:b", ScheduleColumnGUID: chair8},
	} {
		_, err := reservation.KeyOf(s)
		require.Error(t, err, name)
	}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []reservation.Config{{KeyPrefix: "{x}"}, {ReserveTTL: -1}, {ConfirmTTL: -time.Second}} {
		_, err := reservation.New(nil, cfg)
		require.Error(t, err)
	}
}

func TestReserveAndTheValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.st.Reserve(b.ctx, s910, sessA, "TestUser3 Test3")
	require.NoError(t, err)
	require.Equal(t, reservation.Reserved, res.Outcome)
	require.Equal(t, reservation.Reservation{SessionID: sessA, ReservedAt: t0, PatientName: "TestUser3 Test3",
		SlotStartTime: "3/11/2026 9:10:00 AM"}, res.Reservation)
	require.Equal(t, 90*time.Second, res.ExpiresIn)

	raw, err := b.rdb.Get(b.ctx, key910).Result()
	require.NoError(t, err)
	require.Equal(t, `{"sessionId":"3f4359de-eb9e-413e-a4e1-cefdbda373bd","reservedAt":"2026-01-22T06:37:49.000Z",`+
		`"patientName":"TestUser3 Test3","slotStartTime":"3/11/2026 9:10:00 AM"}`, raw, "the seed's value, keys in order")
	contractstest.Golden(t, "booking_slot_reservation_value", []byte(raw))
	ttl := b.rdb.PTTL(b.ctx, key910).Val()
	require.Greater(t, ttl, 89*time.Second)
	require.LessOrEqual(t, ttl, 90*time.Second)

	got, left, found, err := b.st.Get(b.ctx, s910)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, res.Reservation, got)
	require.Greater(t, left, 89*time.Second)
}

func TestReserveSameSessionIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.st.Reserve(b.ctx, s910, sessA, "Pat")
	require.NoError(t, err)
	b.clock.Advance(30 * time.Second)
	require.NoError(t, b.rdb.PExpire(b.ctx, key910, 60*time.Second).Err()) // as if 30 s had passed

	again, err := b.st.Reserve(b.ctx, s910, sessA, "Pat")
	require.NoError(t, err)
	require.Equal(t, reservation.Refreshed, again.Outcome)
	require.Equal(t, first.Reservation, again.Reservation, "the first reservedAt is kept")
	require.Equal(t, 90*time.Second, again.ExpiresIn, "TTL refreshed")

	// Seed test case 3: the session still sees its slot.
	out, err := b.st.Filter(b.ctx, []slots.Slot{s910}, sessA)
	require.NoError(t, err)
	require.Len(t, out, 1)

	// After Confirm, a late Reserve of the same session never shortens the hold.
	_, err = b.st.Confirm(b.ctx, s910, sessA, "Pat")
	require.NoError(t, err)
	again, err = b.st.Reserve(b.ctx, s910, sessA, "Pat")
	require.NoError(t, err)
	require.Equal(t, reservation.Refreshed, again.Outcome)
	require.Greater(t, again.ExpiresIn, 299*time.Second)
}

func TestReserveHeldByAnother(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.Reserve(b.ctx, s910, sessA, "Secret Name")
	require.NoError(t, err)
	b.clock.Advance(37 * time.Second)
	_, err = b.st.Reserve(b.ctx, s910, sessB, "Other")
	he := heldError(t, err)
	require.Equal(t, t0, he.ReservedAt, "the holder's reservedAt")
	require.Equal(t, "3/11/2026 9:10:00 AM", he.SlotStartTime)
	require.Greater(t, he.ExpiresIn, 80*time.Second)
	require.Equal(t, contracts.CodeConflict, he.Code())
	require.NotContains(t, err.Error(), sessA, "the holder is not named")
	require.NotContains(t, err.Error(), "Secret Name")

	got, _, _, err := b.st.Get(b.ctx, s910)
	require.NoError(t, err)
	require.Equal(t, sessA, got.SessionID, "unchanged")
}

func TestReserveRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.Reserve(b.ctx, s910, "", "x")
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
	_, err = b.st.Reserve(b.ctx, slot("whenever"), sessA, "x")
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
	_, err = b.st.Release(b.ctx, slot("whenever"), sessA)
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
	_, err = b.st.Release(b.ctx, s910, "")
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
}

// Seed test case 1 under contention: twenty sessions book one slot at once.
func TestReserveExactlyOneWins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wins, held atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 20 {
		wg.Go(func() {
			<-start
			sess := fmt.Sprintf("session-%02d", i)
			res, err := b.st.Reserve(b.ctx, s910, sess, "Patient "+sess)
			switch {
			case err == nil:
				assert.Equal(t, reservation.Reserved, res.Outcome)
				wins.Add(1)
				winner.Store(sess)
			case assert.ErrorIs(t, err, reservation.ErrReservedByOther):
				held.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, wins.Load())
	require.EqualValues(t, 19, held.Load())
	got, _, _, err := b.st.Get(b.ctx, s910)
	require.NoError(t, err)
	require.Equal(t, winner.Load(), got.SessionID)
}

func TestReserveSameSessionConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var reserved, refreshed atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			res, err := b.st.Reserve(b.ctx, s910, sessA, "Pat")
			if !assert.NoError(t, err) {
				return
			}
			if res.Outcome == reservation.Reserved {
				reserved.Add(1)
			} else {
				refreshed.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, reserved.Load())
	require.EqualValues(t, 19, refreshed.Load())
}

// Seed test case 2 with a short TTL setting.
func TestReservationExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *reservation.Config) { c.ReserveTTL = 100 * time.Millisecond })
	_, err := b.st.Reserve(b.ctx, s910, sessA, "A")
	require.NoError(t, err)
	out, err := b.st.Filter(b.ctx, []slots.Slot{s910}, sessB)
	require.NoError(t, err)
	require.Empty(t, out)

	require.Eventually(t, func() bool {
		out, err := b.st.Filter(b.ctx, []slots.Slot{s910}, sessB)
		return err == nil && len(out) == 1
	}, 5*time.Second, 10*time.Millisecond, "the reservation's TTL runs out")
	out, err = b.st.Filter(b.ctx, []slots.Slot{s910}, sessB)
	require.NoError(t, err)
	require.Len(t, out, 1, "expired: offered again")
	res, err := b.st.Reserve(b.ctx, s910, sessB, "B")
	require.NoError(t, err)
	require.Equal(t, reservation.Reserved, res.Outcome)
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.Reserve(b.ctx, s910, sessA, "A")
	require.NoError(t, err)

	_, err = b.st.Confirm(b.ctx, s910, sessB, "B")
	requireHeld(t, err)
	require.LessOrEqual(t, b.rdb.PTTL(b.ctx, key910).Val(), 90*time.Second, "another session cannot extend")

	res, err := b.st.Confirm(b.ctx, s910, sessA, "A")
	require.NoError(t, err)
	require.Equal(t, reservation.Confirmed, res.Outcome)
	require.Equal(t, t0, res.Reservation.ReservedAt)
	ttl := b.rdb.PTTL(b.ctx, key910).Val()
	require.Greater(t, ttl, 299*time.Second)
	require.LessOrEqual(t, ttl, 300*time.Second)

	// The hold expired during a slow booking: Confirm takes it again.
	other := slot("3/11/2026 10:00 AM")
	b.clock.Advance(time.Minute)
	res, err = b.st.Confirm(b.ctx, other, sessA, "A")
	require.NoError(t, err)
	require.Equal(t, reservation.Retaken, res.Outcome)
	require.Equal(t, t0.Add(time.Minute), res.Reservation.ReservedAt)
	require.Equal(t, 300*time.Second, res.ExpiresIn)
	out, err := b.st.Filter(b.ctx, []slots.Slot{other}, sessB)
	require.NoError(t, err)
	require.Empty(t, out)
}

// Seed test case 4: a failed booking releases the slot.
func TestReleaseAfterFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.Reserve(b.ctx, s910, sessA, "A")
	require.NoError(t, err)

	ok, err := b.st.Release(b.ctx, s910, sessB)
	require.NoError(t, err)
	require.False(t, ok, "compare-and-delete: not B's")
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, key910).Val())

	ok, err = b.st.Release(b.ctx, s910, sessA)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, b.rdb.Exists(b.ctx, key910).Val())

	out, err := b.st.Filter(b.ctx, []slots.Slot{s910}, sessB)
	require.NoError(t, err)
	require.Len(t, out, 1)
	_, err = b.st.Reserve(b.ctx, s910, sessB, "B")
	require.NoError(t, err)

	ok, err = b.st.Release(b.ctx, slot("3/12/2026 9:10 AM"), sessA)
	require.NoError(t, err)
	require.False(t, ok, "nothing held")
}

func TestFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list := []slots.Slot{slot("3/11/2026 8:00 AM"), s910, slot("3/11/2026 10:00 AM"), slot("unkeyable"), slot("3/11/2026 11:00 AM")}
	_, err := b.st.Reserve(b.ctx, list[1], sessA, "A")
	require.NoError(t, err)
	_, err = b.st.Reserve(b.ctx, list[2], sessB, "B")
	require.NoError(t, err)
	k, err := reservation.KeyOf(list[4])
	require.NoError(t, err)
	require.NoError(t, b.rdb.Set(b.ctx, "test:"+k, "not json", time.Minute).Err()) // another tool's value

	startsOf := func(l []slots.Slot) []string {
		var out []string
		for _, s := range l {
			out = append(out, s.StartTime)
		}
		return out
	}
	out, err := b.st.Filter(b.ctx, list, sessA)
	require.NoError(t, err)
	require.Equal(t, []string{"3/11/2026 8:00 AM", "3/11/2026 9:10:00 AM", "unkeyable"}, startsOf(out), "A keeps its own")
	out, err = b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Equal(t, []string{"3/11/2026 8:00 AM", "3/11/2026 10:00 AM", "unkeyable"}, startsOf(out))
	out, err = b.st.Filter(b.ctx, list, "")
	require.NoError(t, err)
	require.Equal(t, []string{"3/11/2026 8:00 AM", "unkeyable"}, startsOf(out), "no session: every hold is another's")

	held, err := b.st.HeldByOthers(b.ctx, "someone", list)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true, false, true}, held)

	out, err = b.st.Filter(b.ctx, nil, sessA)
	require.NoError(t, err)
	require.Empty(t, out)
	require.Len(t, list, 5, "input untouched")
}

// countHook counts what a client sends: single commands and pipelines.
type countHook struct{ cmds, pipelines, piped atomic.Int32 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" { // a new connection's handshake
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "get" { // not a connection's handshake
			h.pipelines.Add(1)
			h.piped.Add(int32(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

func TestFilterIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	b := setupOn(t, db.Client)
	var list []slots.Slot
	for i := range 200 {
		list = append(list, slot(slots.FormatTime(time.Date(2026, 3, 11, 7, 0, 0, 0, time.UTC).Add(time.Duration(i)*5*time.Minute))))
	}
	_, err := b.st.Reserve(b.ctx, list[7], sessA, "A")
	require.NoError(t, err)
	h := &countHook{}
	db.Client.AddHook(h)
	out, err := b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Len(t, out, 199)
	require.EqualValues(t, 0, h.cmds.Load())
	require.EqualValues(t, 1, h.pipelines.Load(), "one pipeline for 200 slots")
	require.EqualValues(t, 400, h.piped.Load(), "the canonical slot key and the SlotReservation key of each")
}
