package holds_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// ivaAdopt is the IVA reservation a booking makes of web hold h.
func ivaAdopt(session string, h holds.Hold) holds.AdoptRequest {
	r := claimReq(session, h.SpecialistID, h.SlotStartDate)
	r.Face, r.TTL, r.FaceKey, r.FaceValue, r.Refresh = holds.FaceIVA, 90*time.Second, "SlotReservation:loc:x", `{"sessionId":"`+session+`"}`, true
	return holds.AdoptRequest{ClaimRequest: r, FromClientID: h.ClientID, FromHoldID: h.HoldID, Memo: `{"patient":"p1"}`}
}

// A web hold handed over to a booking's reservation: the slot is never
// free between the two (one script), the web hold is gone without a
// "release" (its heartbeat and release find nothing), the new hold is
// announced, and the hand-over is recorded for a retried /book.
func TestAdoptHandsTheWebHoldOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := b.subscribe(t)
	web, err := b.eng.Claim(b.ctx, claimReq("web-client", specX, slot9))
	require.NoError(t, err)
	require.Equal(t, holds.EventHold, next(t, events).Type)

	c, err := b.eng.Adopt(b.ctx, ivaAdopt("web-"+web.HoldID, web))
	require.NoError(t, err)
	require.True(t, c.New)
	require.Equal(t, holds.FaceIVA, c.Face)
	ev := next(t, events)
	require.Equal(t, holds.EventHold, ev.Type, "the new holder is announced, no release in between")
	require.Equal(t, "web-"+web.HoldID, ev.ClientID)

	h, ttl, found, err := b.eng.HolderOf(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, c.HoldID, h.HoldID)
	require.Equal(t, 90*time.Second, ttl.Round(time.Second))
	_, ok, err := b.eng.Heartbeat(b.ctx, "web-client", web.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "the web hold is gone")
	released, err := b.eng.Release(b.ctx, "web-client", web.HoldID)
	require.NoError(t, err)
	require.False(t, released, "and cannot release the booking's reservation")
	require.Zero(t, b.rdb.Exists(b.ctx, b.p+"hold:"+typeA+":"+holds.FormatStart(slot9)+":"+specX).Val(), "web face key gone")
	require.Zero(t, b.rdb.ZCard(b.ctx, b.p+"client:web-client:holds").Val(), "no longer counts against the client's quota")
	active, err := b.eng.Active(b.ctx, typeA)
	require.NoError(t, err)
	require.Len(t, active, 1)
	require.Equal(t, c.HoldID, active[0].HoldID)
	_, err = b.eng.Claim(b.ctx, claimReq("other", specX, slot9))
	require.ErrorIs(t, err, holds.ErrSlotTaken)

	a, found, err := b.eng.Adopted(b.ctx, "web-client", web.HoldID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, web.HoldID, a.From.HoldID)
	require.Equal(t, c.HoldID, a.Hold.HoldID)
	require.Equal(t, `{"patient":"p1"}`, a.Memo)
	_, found, err = b.eng.Adopted(b.ctx, "someone-else", web.HoldID)
	require.NoError(t, err)
	require.False(t, found, "only the web hold's client reads it")

	// Adopting again (a retried /book) is the owner's own hold: not new.
	again, err := b.eng.Adopt(b.ctx, ivaAdopt("web-"+web.HoldID, web))
	require.NoError(t, err)
	require.False(t, again.New)
	require.Equal(t, c.HoldID, again.HoldID)
}

// Adopt refuses a slot held by anyone but the web hold, or booked, and
// changes nothing; a slot the web hold no longer holds and nobody else
// does is claimed.
func TestAdoptRefusesOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	web, err := b.eng.Claim(b.ctx, claimReq("web-client", specX, slot9))
	require.NoError(t, err)
	forged := web
	forged.HoldID = "not-the-hold"
	before := b.snapshot(t)
	_, err = b.eng.Adopt(b.ctx, ivaAdopt("sess-1", forged))
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	forged = web
	forged.ClientID = "another-client"
	_, err = b.eng.Adopt(b.ctx, ivaAdopt("sess-1", forged))
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	require.Equal(t, before, b.snapshot(t), "a refusal changes nothing")

	// booked on the web face: the booked claim is not a live hold
	_, err = b.eng.Confirm(b.ctx, "web-client", web.HoldID, "appt-1", 0)
	require.NoError(t, err)
	_, err = b.eng.Adopt(b.ctx, ivaAdopt("sess-1", web))
	require.ErrorIs(t, err, holds.ErrSlotTaken)

	// released (or expired) and free: taken for the booking
	other, err := b.eng.Claim(b.ctx, claimReq("web-2", specY, slot9))
	require.NoError(t, err)
	ok, err := b.eng.Release(b.ctx, "web-2", other.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
	c, err := b.eng.Adopt(b.ctx, ivaAdopt("sess-2", other))
	require.NoError(t, err)
	require.True(t, c.New)
	_, found, err := b.eng.Adopted(b.ctx, "web-2", other.HoldID)
	require.NoError(t, err)
	require.True(t, found)
}

// StartCooldown sets the cooldown Confirm would have set, found by
// ClearCooldown through its appointment id.
func TestStartCooldown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.eng.StartCooldown(b.ctx, "c1", typeA, "appt-9", time.Hour))
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Equal(t, time.Hour, left.Round(time.Minute))
	_, err = b.eng.Claim(b.ctx, claimReq("c1", specX, slot9))
	var ce *holds.CooldownError
	require.ErrorAs(t, err, &ce)
	cleared, err := b.eng.ClearCooldown(b.ctx, "appt-9")
	require.NoError(t, err)
	require.True(t, cleared)
	require.NoError(t, b.eng.StartCooldown(b.ctx, "c1", typeA, "appt-10", -1))
	left, err = b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Zero(t, left, "a negative cooldown sets none")
}
