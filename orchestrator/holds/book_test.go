package holds_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// The rules of booking a web hold (book.go), unit by unit, on the engine
// with the bundle's injected clock and a booker that takes the hold over
// as the real one does (Adopt) and makes one booking per hold.

const (
	patient1 = "0f6a4b2e-1111-4222-8333-444455556666"
	typeB    = "660e8400-e29b-41d4-a716-446655440000"
)

// fakeBooker books through Adopt; Resume finds the booking by the
// adoption record. queued makes it queue; err refuses every Book.
type fakeBooker struct {
	eng    *holds.Engine
	queued bool
	err    error

	mu      sync.Mutex
	books   []holds.ExternalBooking
	resumes []holds.ExternalBooking
	ctxErrs []error                 // each Book's ctx.Err() when called
	ends    []time.Time             // each Book's ctx deadline
	made    map[string]holds.Booked // by hold id
}

func newFakeBooker(eng *holds.Engine) *fakeBooker {
	return &fakeBooker{eng: eng, made: map[string]holds.Booked{}}
}

func (f *fakeBooker) Book(ctx context.Context, b holds.ExternalBooking) (holds.Booked, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end, _ := ctx.Deadline()
	f.books, f.ctxErrs, f.ends = append(f.books, b), append(f.ctxErrs, ctx.Err()), append(f.ends, end)
	if f.err != nil {
		return holds.Booked{}, f.err
	}
	h := b.Hold
	r := claimReq("web-"+h.HoldID, h.SpecialistID, h.SlotStartDate)
	r.AppointmentTypeID, r.Face, r.TTL, r.FaceKey, r.Refresh = h.AppointmentTypeID, holds.FaceIVA, 90*time.Second, "SlotReservation:t:"+h.HoldID, true
	if _, err := f.eng.Adopt(ctx, holds.AdoptRequest{ClaimRequest: r, FromClientID: h.ClientID, FromHoldID: h.HoldID,
		Memo: b.PatientGUID}); err != nil {
		return holds.Booked{}, err
	}
	out := holds.Booked{Hold: h}
	if f.queued {
		out.Operation = &contracts.QueueOperation{ID: "op-" + h.HoldID, Status: contracts.OpPending}
	} else {
		out.Cloud9AppointmentGUID = "c9-" + h.HoldID
	}
	f.made[h.HoldID] = out
	return out, nil
}

func (f *fakeBooker) Resume(ctx context.Context, b holds.ExternalBooking) (holds.Booked, bool, error) {
	f.mu.Lock()
	f.resumes = append(f.resumes, b)
	f.mu.Unlock()
	a, found, err := f.eng.Adopted(ctx, b.Hold.ClientID, b.Hold.HoldID)
	if err != nil || !found {
		return holds.Booked{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.made[b.Hold.HoldID]
	out.Hold = a.From
	return out, true, nil
}

// booking is b's engine's Booking with booker.
func (b *bundle) booking(t *testing.T, booker holds.Booker, mod ...func(*holds.BookingConfig)) *holds.Booking {
	t.Helper()
	cfg := holds.BookingConfig{Engine: b.eng, Booker: booker, Now: b.clock.Now, Logger: slog.New(slog.NewTextHandler(b.logs, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	bk, err := holds.NewBooking(cfg)
	require.NoError(t, err)
	return bk
}

// held is client's live hold on specX at slot9.
func (b *bundle) held(t *testing.T, client string) holds.Hold {
	t.Helper()
	hd, err := b.eng.Claim(b.ctx, claimReq(client, specX, slot9))
	require.NoError(t, err)
	return hd
}

func bookReq(client, holdID string) holds.BookRequest {
	return holds.BookRequest{AppointmentTypeID: typeA, Cooldown: time.Hour, ClientID: client, HoldID: holdID,
		PatientGUID: patient1, AppointmentID: "appt-" + holdID}
}

func codeOf(t *testing.T, err error) *contracts.Error {
	t.Helper()
	var ce *contracts.Error
	require.ErrorAs(t, err, &ce)
	return ce
}

// Heartbeat before booking: the booker gets the client's live hold just
// extended by a heartbeat (a full HoldTTL from now); a hold that is not
// live or not the client's is 409 (details.field holdId) and nothing is
// booked. LiveHold, the local /book's first step, is the same rule.
func TestBookingHeartbeatsTheHoldFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := newFakeBooker(b.eng)
	bk := b.booking(t, fb)
	hd := b.held(t, "c1")
	now := b.clock.Advance(20 * time.Second)

	for _, r := range []holds.BookRequest{bookReq("c2", hd.HoldID), bookReq("c1", "never-held")} {
		_, err := bk.BookExternal(b.ctx, r)
		ce := codeOf(t, err)
		require.Equal(t, contracts.CodeConflict, ce.Code)
		require.Equal(t, "holdId", ce.Details["field"])
		_, err = bk.LiveHold(b.ctx, r.ClientID, r.HoldID, typeA)
		require.Equal(t, contracts.CodeConflict, codeOf(t, err).Code)
	}
	require.Empty(t, fb.books, "nothing booked for a hold that is not the client's")

	live, err := bk.LiveHold(b.ctx, "c1", hd.HoldID, typeA)
	require.NoError(t, err)
	require.Equal(t, now.Add(holds.DefaultHoldTTL).UTC(), live.HoldExpiresAt, "LiveHold heartbeats")

	now = b.clock.Advance(10 * time.Second)
	out, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
	require.NoError(t, err)
	require.Len(t, fb.books, 1)
	got := fb.books[0]
	require.Equal(t, hd.HoldID, got.Hold.HoldID)
	require.Equal(t, now.Add(holds.DefaultHoldTTL).UTC(), got.Hold.HoldExpiresAt, "the booker gets the hold as heartbeated now")
	require.Equal(t, holds.ExternalBooking{AppointmentTypeID: typeA, Hold: got.Hold, PatientGUID: patient1,
		AppointmentID: "appt-" + hd.HoldID}, got)
	require.Equal(t, "c9-"+hd.HoldID, out.Cloud9AppointmentGUID)
	require.Equal(t, now.UTC(), out.BookedAt, "stamped by the injected clock")
	require.False(t, out.Queued())
}

// Type check: a hold of another appointment type is 400 invalid (field
// holdId) — for a live hold before the booker is asked, for a resumed one
// after — and the hold is kept.
func TestBookingChecksTheType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := newFakeBooker(b.eng)
	bk := b.booking(t, fb)
	hd := b.held(t, "c1")
	other := bookReq("c1", hd.HoldID)
	other.AppointmentTypeID = typeB

	_, err := bk.BookExternal(b.ctx, other)
	ce := codeOf(t, err)
	require.Equal(t, contracts.CodeInvalid, ce.Code)
	require.Equal(t, "holdId", ce.Details["field"])
	require.Empty(t, fb.books)
	_, err = bk.LiveHold(b.ctx, "c1", hd.HoldID, typeB)
	require.Equal(t, contracts.CodeInvalid, codeOf(t, err).Code)
	_, live, err := b.eng.Heartbeat(b.ctx, "c1", hd.HoldID)
	require.NoError(t, err)
	require.True(t, live, "the hold is kept")

	_, err = bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
	require.NoError(t, err)
	_, err = bk.BookExternal(b.ctx, other)
	require.Equal(t, contracts.CodeInvalid, codeOf(t, err).Code, "a resumed booking of another type")
	require.Len(t, fb.resumes, 1)
}

// Resume of an earlier attempt: once the hold was taken over, a retry is
// answered by Booker.Resume (only the hold id and client are known) with
// the same booking, not booked again, its cooldown not set again; a hold
// that was never taken over is 409.
func TestBookingResumesAnEarlierAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := newFakeBooker(b.eng)
	bk := b.booking(t, fb)
	hd := b.held(t, "c1")
	first, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
	require.NoError(t, err)
	cleared, err := b.eng.ClearCooldown(b.ctx, first.Cloud9AppointmentGUID)
	require.NoError(t, err)
	require.True(t, cleared)

	b.clock.Advance(time.Minute)
	again, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
	require.NoError(t, err)
	require.Len(t, fb.books, 1, "not booked again")
	require.Len(t, fb.resumes, 1)
	require.Equal(t, holds.ExternalBooking{AppointmentTypeID: typeA, Hold: holds.Hold{HoldID: hd.HoldID, ClientID: "c1"},
		PatientGUID: patient1, AppointmentID: "appt-" + hd.HoldID}, fb.resumes[0])
	require.Equal(t, first.Cloud9AppointmentGUID, again.Cloud9AppointmentGUID)
	require.Equal(t, hd.SlotStartDate, again.Hold.SlotStartDate, "the slot as the hold was taken over")
	require.Equal(t, specX, again.Hold.SpecialistID)
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Zero(t, left, "a resumed booking sets no cooldown (its first attempt did)")

	_, err = bk.BookExternal(b.ctx, bookReq("c2", hd.HoldID))
	ce := codeOf(t, err)
	require.Equal(t, contracts.CodeConflict, ce.Code, "another client's retry finds nothing")
	require.Equal(t, "holdId", ce.Details["field"])
}

// Cooldown: a booking made sets the type's cooldown under the Cloud9
// appointment, a queued one under the operation id (what a cancel finds
// it by); one that cannot be set is logged and the booking stands; a
// refused booking sets none.
func TestBookingSetsTheCooldown(t *testing.T) {
	t.Parallel()
	t.Run("made", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bk := b.booking(t, newFakeBooker(b.eng))
		hd := b.held(t, "c1")
		_, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
		require.NoError(t, err)
		left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
		require.NoError(t, err)
		require.Equal(t, time.Hour, left.Round(time.Minute), "the type's cooldown")
		cleared, err := b.eng.ClearCooldown(b.ctx, "c9-"+hd.HoldID)
		require.NoError(t, err)
		require.True(t, cleared, "found by the Cloud9 appointment")
	})
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fb := newFakeBooker(b.eng)
		fb.queued = true
		bk := b.booking(t, fb)
		hd := b.held(t, "c1")
		out, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
		require.NoError(t, err)
		require.True(t, out.Queued())
		cleared, err := b.eng.ClearCooldown(b.ctx, "op-"+hd.HoldID)
		require.NoError(t, err)
		require.True(t, cleared, "found by the operation id")
	})
	t.Run("not set", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bk := b.booking(t, newFakeBooker(b.eng), func(c *holds.BookingConfig) {
			c.Engine = failingCooldown{b.eng}
		})
		hd := b.held(t, "c1")
		out, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
		require.NoError(t, err, "the booking stands")
		require.Equal(t, "c9-"+hd.HoldID, out.Cloud9AppointmentGUID)
		require.Len(t, b.logs.Lines("the cooldown could not be set"), 1)
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fb := newFakeBooker(b.eng)
		fb.err = contracts.Errorf(contracts.CodeNotFound, "Cloud9 does not know this patient")
		bk := b.booking(t, fb)
		hd := b.held(t, "c1")
		_, err := bk.BookExternal(b.ctx, bookReq("c1", hd.HoldID))
		require.ErrorIs(t, err, fb.err, "the booker's refusal is answered as it is")
		left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
		require.NoError(t, err)
		require.Zero(t, left)
	})
}

// failingCooldown is the engine with StartCooldown failing.
type failingCooldown struct{ *holds.Engine }

func (failingCooldown) StartCooldown(context.Context, string, string, string, time.Duration) error {
	return errors.New("redis down")
}

// The patient is required before anything else (422, the hold kept),
// then a booker (503); the booking is not cut when the caller goes away,
// but bound by Timeout.
func TestBookingNeedsPatientAndBookerAndOutlivesTheCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fb := newFakeBooker(b.eng)
	bk := b.booking(t, fb, func(c *holds.BookingConfig) { c.Timeout = time.Minute })
	hd := b.held(t, "c1")
	before := b.snapshot(t)
	r := bookReq("c1", hd.HoldID)
	r.PatientGUID = ""
	_, err := bk.BookExternal(b.ctx, r)
	ce := codeOf(t, err)
	require.Equal(t, contracts.CodePatientRequired, ce.Code)
	require.Equal(t, "patientGUID", ce.Details["field"])
	_, err = b.booking(t, nil).BookExternal(b.ctx, r)
	require.Equal(t, contracts.CodePatientRequired, codeOf(t, err).Code, "the patient first")
	_, err = b.booking(t, nil).BookExternal(b.ctx, bookReq("c1", hd.HoldID))
	require.Equal(t, contracts.CodeUnavailable, codeOf(t, err).Code, "no booker")
	require.Equal(t, before, b.snapshot(t), "nothing changed: the hold is kept")

	gone, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err = bk.BookExternal(gone, bookReq("c1", hd.HoldID))
	require.NoError(t, err, "a caller gone does not cut the booking")
	require.Len(t, fb.ctxErrs, 1)
	require.NoError(t, fb.ctxErrs[0])
	require.WithinDuration(t, time.Now().Add(time.Minute), fb.ends[0], 5*time.Second, "bound by Timeout")

	_, err = holds.NewBooking(holds.BookingConfig{})
	require.Error(t, err, "an Engine is required")
}
