package holdshttp_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/sidecar/web"
	"github.com/flowgate/flowgate/test/logtest"
)

// lostReply is the engine whose Confirm runs but whose reply is lost.
type lostReply struct{ *holds.Engine }

func (e lostReply) Confirm(ctx context.Context, clientID, holdID, appointmentID string, cooldown time.Duration) (holds.Hold, error) {
	if _, err := e.Engine.Confirm(ctx, clientID, holdID, appointmentID, cooldown); err != nil {
		return holds.Hold{}, err
	}
	return holds.Hold{}, &contracts.Error{Code: contracts.CodeUnavailable, Message: "reply lost", Err: errors.New("i/o timeout")}
}

// A confirm that ran but whose reply was lost: the handler undoes the
// booking, and with it the cooldown and the slot claim the confirm left.
func TestBookConfirmReplyLostUndoesEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	app, err := web.New(web.Options{Logger: slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))})
	require.NoError(t, err)
	h, err := holdshttp.New(holdshttp.Config{Engine: lostReply{b.eng}, Catalog: b.cat, Now: b.clock.Now,
		RequestTimeout: 20 * time.Second, NewID: func() string { return "appt-lost" }})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	b.app = app

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
