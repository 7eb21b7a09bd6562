package holds_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
)

// A hold id is its hold's bearer secret: 128 random bits (32 hex digits,
// never the same twice). Its Ref is what events show: one-way, stable, of
// another form, and "" for "".
func TestHoldIDsAreSecretsAndRefsArePublic(t *testing.T) {
	t.Parallel()
	newID := setup(t).eng.Config().NewID // the default
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newID()
		require.Regexp(t, hexID, id, "128 bits of crypto/rand, hex")
		require.False(t, seen[id])
		seen[id] = true
	}

	id := newID()
	ref := holds.Ref(id)
	require.Equal(t, ref, holds.Ref(id), "stable: the owner matches its events")
	require.Regexp(t, `^ref-[0-9a-f]{32}$`, ref)
	require.NotContains(t, ref, id)
	require.NotEqual(t, holds.Ref(newID()), ref)
	require.Equal(t, "", holds.Ref(""))
}

// The web face's credentials act on web holds only: an IVA reservation
// (its session id as client) is neither heartbeated, nor released, nor
// confirmed through them, even with its real id and session — the IVA
// face releases it with ReleaseAs. Nothing changes on a refusal.
func TestWebOperationsActOnWebHoldsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := claimReq("call-1", specX, slot9)
	r.Face, r.TTL, r.MaxHolds, r.Cooldown = holds.FaceIVA, 90*time.Second, -1, -1
	r.FaceKey, r.FaceValue = "SlotReservation:loc:20250315:0900:"+specX, `{"sessionId":"call-1"}`
	iva, err := b.eng.Claim(b.ctx, r)
	require.NoError(t, err)
	before := b.snapshot(t)

	_, ok, err := b.eng.Heartbeat(b.ctx, "call-1", iva.HoldID)
	require.NoError(t, err)
	require.False(t, ok, "heartbeat of an IVA reservation")
	_, err = b.eng.Release(b.ctx, "call-1", iva.HoldID)
	require.ErrorIs(t, err, holds.ErrNotOwner, "web release of an IVA reservation")
	_, err = b.eng.Confirm(b.ctx, "call-1", iva.HoldID, "appt-x", time.Hour)
	require.ErrorIs(t, err, holds.ErrNotOwner, "web confirm of an IVA reservation")
	_, err = b.eng.ReleaseAs(b.ctx, holds.FaceWeb, "call-1", iva.HoldID)
	require.ErrorIs(t, err, holds.ErrNotOwner)
	require.Equal(t, before, b.snapshot(t), "nothing changed")

	_, err = b.eng.ReleaseAs(b.ctx, holds.FaceIVA, "call-2", iva.HoldID)
	require.ErrorIs(t, err, holds.ErrNotOwner, "another session")
	ok, err = b.eng.ReleaseAs(b.ctx, holds.FaceIVA, "call-1", iva.HoldID)
	require.NoError(t, err)
	require.True(t, ok, "the IVA face releases its own")

	// A web hold whose clientId an IVA session happens to share: the IVA
	// face's release leaves it alone.
	web, err := b.eng.Claim(b.ctx, claimReq("call-1", specY, slot9))
	require.NoError(t, err)
	_, err = b.eng.ReleaseAs(b.ctx, holds.FaceIVA, "call-1", web.HoldID)
	require.ErrorIs(t, err, holds.ErrNotOwner)
	ok, err = b.eng.Release(b.ctx, "call-1", web.HoldID)
	require.NoError(t, err)
	require.True(t, ok)
}
