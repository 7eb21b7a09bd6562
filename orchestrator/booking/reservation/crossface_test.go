package reservation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

var xfSeq atomic.Int64

type crossFace struct {
	ctx context.Context
	eng *holds.Engine
	st  *reservation.Store
	rdb *redis.Client
}

// newCrossFace is a Store on a shared engine whose prefix is unique
// (channels are not per DB).
func newCrossFace(t *testing.T) *crossFace {
	t.Helper()
	rdb := redistest.New(t).Client
	eng, err := holds.New(rdb, holds.Config{KeyPrefix: fmt.Sprintf("xf%d-%d:", xfSeq.Add(1), time.Now().UnixNano())})
	require.NoError(t, err)
	st, err := reservation.New(nil, reservation.Config{Engine: eng})
	require.NoError(t, err)
	return &crossFace{ctx: context.Background(), eng: eng, st: st, rdb: rdb}
}

// 9:10 AM on 3/11/2026 in Chicago (CDT, UTC-5) is 14:10 UTC.
var start910 = time.Date(2026, 3, 11, 14, 10, 0, 0, time.UTC)

func webClaim(client string) holds.ClaimRequest {
	return holds.ClaimRequest{AppointmentTypeID: cloud9.SeedAppointmentTypeGUID, ClientID: client,
		SlotStart: start910, SlotEnd: start910.Add(45 * time.Minute), SpecialistID: chair8}
}

func TestWebHoldRefusesReserveAndIsFiltered(t *testing.T) {
	t.Parallel()
	x := newCrossFace(t)
	upper := webClaim("web-client")
	upper.SpecialistID = strings.ToUpper(chair8) // the same chair, spelled as another caller spells it
	_, err := x.eng.Claim(x.ctx, upper)
	require.NoError(t, err)

	_, err = x.st.Reserve(x.ctx, s910, sessA, "A")
	requireHeld(t, err)
	require.Zero(t, x.rdb.Exists(x.ctx, x.eng.FaceKey("SlotReservation:"+loc+":20260311:0910:"+chair8)).Val(),
		"the refusal wrote nothing")
	list := []slots.Slot{s910, slot("3/11/2026 10:00 AM")}
	out, err := x.st.Filter(x.ctx, list, sessA)
	require.NoError(t, err)
	require.Equal(t, []slots.Slot{list[1]}, out, "the web-held slot is dropped")
	ok, err := x.st.Release(x.ctx, s910, sessA)
	require.NoError(t, err)
	require.False(t, ok, "a web hold is not the session's to release")
	_, err = x.st.Confirm(x.ctx, s910, sessA, "A")
	requireHeld(t, err)
}

func TestReservationRefusesWebClaimAndIsPublished(t *testing.T) {
	t.Parallel()
	x := newCrossFace(t)
	sub := x.rdb.Subscribe(x.ctx, x.eng.EventChannel(cloud9.SeedAppointmentTypeGUID))
	_, err := sub.Receive(x.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	ch := sub.Channel()
	nextEvent := func() holds.Event {
		select {
		case m := <-ch:
			var ev holds.Event
			require.NoError(t, json.Unmarshal([]byte(m.Payload), &ev))
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return holds.Event{}
	}

	_, err = x.st.Reserve(x.ctx, s910, sessA, "A")
	require.NoError(t, err)
	ev := nextEvent()
	require.Equal(t, "hold", ev.Type)
	require.Equal(t, cloud9.SeedAppointmentTypeGUID, ev.AppointmentTypeID)
	require.Equal(t, chair8, ev.SpecialistID, "the schedule column is the specialist")
	require.Equal(t, start910, ev.SlotStartDate)
	require.Equal(t, start910.Add(45*time.Minute), ev.SlotEndDate)
	require.Equal(t, holds.FaceIVA, ev.Face)

	_, err = x.eng.Claim(x.ctx, webClaim("web-client"))
	require.ErrorIs(t, err, holds.ErrSlotTaken)
	active, err := x.eng.Active(x.ctx, cloud9.SeedAppointmentTypeGUID)
	require.NoError(t, err)
	require.Len(t, active, 1)

	_, err = x.st.Confirm(x.ctx, s910, sessA, "A")
	require.NoError(t, err)
	require.Equal(t, "confirm", nextEvent().Type)
	ok, err := x.st.Release(x.ctx, s910, sessA)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "release", nextEvent().Type)
	_, err = x.eng.Claim(x.ctx, webClaim("web-client"))
	require.NoError(t, err, "free for the web once released")
}

// 1,000 goroutines claim one slot, half through createAppt's face, half
// through the web face: exactly one wins.
func TestOneWinnerAcrossBothFaces(t *testing.T) {
	t.Parallel()
	x := newCrossFace(t)
	var won, lost atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = x.st.Reserve(x.ctx, s910, fmt.Sprint("sess-", i), "P")
			} else {
				_, err = x.eng.Claim(x.ctx, webClaim(fmt.Sprint("web-", i)))
			}
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, reservation.ErrReservedByOther), errors.Is(err, holds.ErrSlotTaken):
				lost.Add(1)
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, won.Load())
	require.EqualValues(t, 999, lost.Load())
}
