package holdshttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/logtest"
)

// lostReply is the engine whose Confirm runs but whose reply is lost;
// with blind set, the read that would find the booking fails too.
type lostReply struct {
	*holds.Engine
	blind bool
}

func (e lostReply) BookedAppointment(ctx context.Context, specialistID string, start time.Time) (string, error) {
	if e.blind {
		return "", &contracts.Error{Code: contracts.CodeUnavailable, Message: "down", Err: errors.New("i/o timeout")}
	}
	return e.Engine.BookedAppointment(ctx, specialistID, start)
}

func (e lostReply) Confirm(ctx context.Context, clientID, holdID, appointmentID string, cooldown time.Duration) (holds.Hold, error) {
	if _, err := e.Engine.Confirm(ctx, clientID, holdID, appointmentID, cooldown); err != nil {
		return holds.Hold{}, err
	}
	return holds.Hold{}, &contracts.Error{Code: contracts.CodeUnavailable, Message: "reply lost", Err: errors.New("i/o timeout")}
}

// A confirm that ran but whose reply was lost, and the booking cannot be
// read back: the handler undoes the booking, and with it the cooldown and
// the slot claim the confirm left.
func TestBookConfirmReplyLostUndoesEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.lost(t, true)
	hd := b.hold(t, "c1", specX, slot9)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": hd.HoldID})
	require.Equal(t, 503, r.Status, string(r.Body))
	require.Empty(t, b.cat.Appointments(), "the booking is undone")
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Zero(t, left, "no cooldown for an undone booking")
	require.Zero(t, b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val(), "the slot is free again")
	b.hold(t, "c1", specY, slot9.Add(time.Hour))
}

// A confirm whose reply was lost but whose booking is found on the slot:
// the booking stands (one appointment, the cooldown, the slot kept).
func TestBookConfirmReplyLostFindsTheBooking(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.lost(t, false)
	hd := b.hold(t, "c1", specX, slot9)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": hd.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.Len(t, b.cat.Appointments(), 1)
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Positive(t, left)
	id, err := b.eng.BookedAppointment(b.ctx, specX, slot9)
	require.NoError(t, err)
	require.Equal(t, "appt-lost", id)
}

func (b *bundle) lost(t *testing.T, blind bool) {
	t.Helper()
	app, err := web.New(web.Options{Logger: slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))})
	require.NoError(t, err)
	h, err := holdshttp.New(holdshttp.Config{Engine: lostReply{Engine: b.eng, blind: blind}, Catalog: b.cat, Now: b.clock.Now,
		RequestTimeout: 20 * time.Second, AppointmentID: func(string) string { return "appt-lost" }})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	b.app = app
}

// Retries of one /book racing each other record one appointment: its id
// is derived from the hold id, and every success names that appointment.
func TestRetriedBookRecordsOneAppointment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hd := b.hold(t, "c1", specX, slot9)
	ids := make(chan string, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": hd.HoldID})
			switch r.Status {
			case 201:
				var bk holdshttp.BookResponse
				r.decode(t, &bk)
				ids <- bk.Appointment.AppointmentID
			case 409:
			default:
				t.Errorf("%d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	close(ids)
	require.NotEmpty(t, ids)
	for id := range ids {
		require.Equal(t, "appt-1", id)
	}
	require.Len(t, b.cat.Appointments(), 1)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": hd.HoldID})
	require.Equal(t, 409, r.Status, "a later retry: the hold is booked")
	require.Len(t, b.cat.Appointments(), 1)
}

// Cancelling a /v1 booking announces the booked hold's release with the
// hold itself — its id (the stream shows holds.Ref of it), its slot times
// and the holdExpiresAt the booking's confirm stored — not an empty id and
// zero times (issue 35): the cancel reads the appointment, the engine's
// script takes the hold from the slot's booked claim.
func TestCancelAnnouncesTheBookedHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := b.rdb.Subscribe(b.ctx, b.eng.EventChannel(typeA))
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(b.ctx)
	require.NoError(t, err)
	h := b.hold(t, "c1", specX, slot9)
	b.clock.Advance(10 * time.Second)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))
	b.clock.Advance(time.Minute)
	r = b.do(t, "DELETE", "/v1/appointments/appt-1", nil)
	require.Equal(t, 200, r.Status, string(r.Body))

	ch := sub.Channel()
	for {
		select {
		case m := <-ch:
			var ev holds.Event
			require.NoError(t, json.Unmarshal([]byte(m.Payload), &ev), m.Payload)
			if ev.Type != holds.EventRelease {
				continue
			}
			require.Equal(t, holds.Hold{HoldID: h.HoldID, ClientID: "c1", AppointmentTypeID: typeA, SpecialistID: specX,
				SlotStartDate: slot9, SlotEndDate: slot9.Add(30 * time.Minute),
				HoldExpiresAt: t0.Add(10*time.Second + holds.DefaultHoldTTL), // the /book's heartbeat, as confirmed
				Face:          holds.FaceWeb}, ev.Hold)
			require.NotContains(t, m.Payload, "appointmentId", "the booking's claim field stays internal")
			return
		case <-time.After(10 * time.Second):
			t.Fatal("no release event")
		}
	}
}
