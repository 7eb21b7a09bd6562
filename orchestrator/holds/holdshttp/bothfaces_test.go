package holdshttp_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/slots"
)

// 1,000 goroutines claim one slot at once: half POST /v1/holds, half
// reserve it as createAppt does (the IVA face on the same engine). Exactly
// one wins; every other web claim is 409, every other reservation
// ErrReservedByOther.
func TestOneWinnerAcrossBothFacesOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	iva, err := reservation.New(nil, reservation.Config{Engine: b.eng, Location: time.UTC, AppointmentTypeID: typeA})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/15/2025 9:00:00 AM", ScheduleColumnGUID: specX, LocationGUID: "loc-1", Minutes: 30}
	var won, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				switch r := b.do(t, "POST", "/v1/holds", holdBody(fmt.Sprint("web-", i), specX, slot9)); r.Status {
				case 201:
					won.Add(1)
				case 409:
					refused.Add(1)
				default:
					t.Errorf("web %d: %d %s", i, r.Status, r.Body)
				}
				return
			}
			_, err := iva.Reserve(b.ctx, s, fmt.Sprint("sess-", i), "P")
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, reservation.ErrReservedByOther):
				refused.Add(1)
			default:
				t.Errorf("iva %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, won.Load())
	require.EqualValues(t, 999, refused.Load())
}

// A slot booked on the web stays held on the canonical slot key until the
// slot ends: createAppt's Reserve refuses it and getApptSlots' Filter drops
// it (no double booking in Cloud9); cancelling the appointment frees it.
func TestWebBookingKeepsTheSlotFromTheIVAFace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	iva, err := reservation.New(nil, reservation.Config{Engine: b.eng, Location: time.UTC, AppointmentTypeID: typeA})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/15/2025 9:00:00 AM", ScheduleColumnGUID: specX, LocationGUID: "loc-1", Minutes: 30}
	h := b.hold(t, "c1", specX, slot9)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))

	_, err = iva.Reserve(b.ctx, s, "sess-1", "P")
	require.ErrorIs(t, err, reservation.ErrReservedByOther)
	left, err := iva.Filter(b.ctx, []slots.Slot{s}, "sess-1")
	require.NoError(t, err)
	require.Empty(t, left, "the booked slot is not offered")
	r = b.do(t, "POST", "/v1/holds", holdBody("c2", specX, slot9))
	require.Equal(t, 409, r.Status, "nor held on the web")

	r = b.do(t, "DELETE", "/v1/appointments/appt-1", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	left, err = iva.Filter(b.ctx, []slots.Slot{s}, "sess-1")
	require.NoError(t, err)
	require.Len(t, left, 1)
	_, err = iva.Reserve(b.ctx, s, "sess-1", "P")
	require.NoError(t, err)
}
