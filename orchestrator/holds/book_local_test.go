package holds_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// The local /book (BookLocal, book_local.go): record, confirm with the
// cooldown, and undo what a failed confirm leaves.

// fakeRecord records in memory; fail refuses Record.
type fakeRecord struct {
	fail      error
	recorded  map[string]holds.Hold
	cancelled []string
}

func (f *fakeRecord) Record(_ context.Context, h holds.Hold, id string) error {
	if f.fail != nil {
		return f.fail
	}
	if f.recorded == nil {
		f.recorded = map[string]holds.Hold{}
	}
	f.recorded[id] = h
	return nil
}

func (f *fakeRecord) Cancel(_ context.Context, id string) error {
	f.cancelled = append(f.cancelled, id)
	delete(f.recorded, id)
	return nil
}

func localReq(client, holdID string) holds.LocalBooking {
	return holds.LocalBooking{ClientID: client, HoldID: holdID, AppointmentTypeID: typeA,
		AppointmentID: "appt-" + holdID, Cooldown: time.Hour}
}

// Recorded, then confirmed: the slot stays booked and the type's cooldown
// is set under the appointment id; a retry of the same /book is the same
// booking (the concurrent-retry rule finds it confirmed).
func TestBookLocalRecordsThenConfirms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bk := b.booking(t, nil)
	hd := b.held(t, "c1")
	rec := &fakeRecord{}
	got, err := bk.BookLocal(b.ctx, localReq("c1", hd.HoldID), rec)
	require.NoError(t, err)
	require.Equal(t, hd.HoldID, got.HoldID)
	require.Contains(t, rec.recorded, "appt-"+hd.HoldID)
	id, err := b.eng.BookedAppointment(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.Equal(t, "appt-"+hd.HoldID, id)
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Positive(t, left, "the type's cooldown is set")
}

// A record that fails books nothing and leaves the hold for a retry.
func TestBookLocalRecordFailureKeepsTheHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bk := b.booking(t, nil)
	hd := b.held(t, "c1")
	boom := errors.New("catalogue down")
	_, err := bk.BookLocal(b.ctx, localReq("c1", hd.HoldID), &fakeRecord{fail: boom})
	require.ErrorIs(t, err, boom)
	_, ok, err := b.eng.Heartbeat(b.ctx, "c1", hd.HoldID)
	require.NoError(t, err)
	require.True(t, ok, "the hold is still the client's")
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Zero(t, left)
}

// confirmGone is the engine with Confirm failing as for a hold that ended
// between the heartbeat and the confirm.
type confirmGone struct{ *holds.Engine }

func (confirmGone) Confirm(context.Context, string, string, string, time.Duration) (holds.Hold, error) {
	return holds.Hold{}, holds.ErrHoldNotFound
}

// A confirm that fails undoes the record (no booking without its hold)
// and answers 409: hold the slot again.
func TestBookLocalConfirmFailureUndoes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bk := b.booking(t, nil, func(c *holds.BookingConfig) { c.Engine = confirmGone{b.eng} })
	hd := b.held(t, "c1")
	rec := &fakeRecord{}
	_, err := bk.BookLocal(b.ctx, localReq("c1", hd.HoldID), rec)
	require.Equal(t, contracts.CodeConflict, codeOf(t, err).Code)
	require.Equal(t, []string{"appt-" + hd.HoldID}, rec.cancelled)
	require.Empty(t, rec.recorded)
	require.NotContains(t, b.logs.String(), "appt-"+hd.HoldID, "logs carry the appointment's ref, never its id")
}
