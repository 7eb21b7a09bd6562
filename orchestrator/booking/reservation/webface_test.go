package reservation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp/holdshttptest"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
)

// The web face (POST /v1/holds, /book on holdshttp) and the IVA face
// (reservation.Store) on one holds engine: booking uses holds, so the tests
// of both faces together live here.

const (
	webType = "type-a"
	webSpec = "spec-x"
)

var (
	webT0    = time.Date(2025, 3, 15, 8, 55, 0, 0, time.UTC)
	webSlot9 = time.Date(2025, 3, 15, 9, 0, 0, 0, time.UTC)
	webSeq   atomic.Int64
)

type webBundle struct {
	ctx context.Context
	app *fiber.App
	eng *holds.Engine
}

func setupWeb(t *testing.T) *webBundle {
	t.Helper()
	rdb := redistest.New(t).Client
	clock := clocktest.New(webT0)
	logger := slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil))
	var holdSeq atomic.Int64
	eng, err := holds.New(rdb, holds.Config{KeyPrefix: fmt.Sprintf("w%d-%d:", webSeq.Add(1), time.Now().UnixNano()), Now: clock.Now, Logger: logger,
		NewID: func() string { return fmt.Sprintf("hold-%d", holdSeq.Add(1)) }})
	require.NoError(t, err)
	app, err := web.New(web.Options{Logger: logger})
	require.NoError(t, err)
	cat := holdshttptest.New(holdshttptest.Type{ID: webType, Specialists: map[string]int{webSpec: 1}})
	h, err := holdshttp.New(holdshttp.Config{Engine: eng, Catalog: cat, Now: clock.Now, Logger: logger, RequestTimeout: 20 * time.Second,
		AppointmentID: func(h string) string { return "appt-" + strings.TrimPrefix(h, "hold-") }})
	require.NoError(t, err)
	holdshttp.Register(app, h)
	return &webBundle{ctx: context.Background(), app: app, eng: eng}
}

type webReply struct {
	Status int
	Body   []byte
}

func (b *webBundle) do(t *testing.T, method, path string, body any) webReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.app.Test(req, 10000)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return webReply{Status: resp.StatusCode, Body: raw}
}

func webHoldBody(client, spec string, start time.Time) map[string]string {
	return map[string]string{"appointmentTypeId": webType, "clientId": client, "slotStartDate": holds.FormatStart(start), "specialistId": spec}
}

func (b *webBundle) hold(t *testing.T, client, spec string, start time.Time) holdshttp.HoldResponse {
	t.Helper()
	r := b.do(t, "POST", "/v1/holds", webHoldBody(client, spec, start))
	require.Equal(t, 201, r.Status, string(r.Body))
	var h holdshttp.HoldResponse
	require.NoError(t, json.Unmarshal(r.Body, &h), string(r.Body))
	return h
}

// 1,000 goroutines claim one slot at once: half POST /v1/holds, half
// reserve it as createAppt does (the IVA face on the same engine). Exactly
// one wins; every other web claim is 409, every other reservation
// ErrReservedByOther.
func TestOneWinnerAcrossBothFacesOverHTTP(t *testing.T) {
	t.Parallel()
	b := setupWeb(t)
	iva, err := reservation.New(nil, reservation.Config{Engine: b.eng, Location: time.UTC, AppointmentTypeID: webType})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/15/2025 9:00:00 AM", ScheduleColumnGUID: webSpec, LocationGUID: "loc-1", Minutes: 30}
	var won, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				switch r := b.do(t, "POST", "/v1/holds", webHoldBody(fmt.Sprint("web-", i), webSpec, webSlot9)); r.Status {
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
	b := setupWeb(t)
	iva, err := reservation.New(nil, reservation.Config{Engine: b.eng, Location: time.UTC, AppointmentTypeID: webType})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/15/2025 9:00:00 AM", ScheduleColumnGUID: webSpec, LocationGUID: "loc-1", Minutes: 30}
	h := b.hold(t, "c1", webSpec, webSlot9)
	r := b.do(t, "POST", "/v1/appointment-types/"+webType+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))

	_, err = iva.Reserve(b.ctx, s, "sess-1", "P")
	require.ErrorIs(t, err, reservation.ErrReservedByOther)
	left, err := iva.Filter(b.ctx, []slots.Slot{s}, "sess-1")
	require.NoError(t, err)
	require.Empty(t, left, "the booked slot is not offered")
	r = b.do(t, "POST", "/v1/holds", webHoldBody("c2", webSpec, webSlot9))
	require.Equal(t, 409, r.Status, "nor held on the web")

	r = b.do(t, "DELETE", "/v1/appointments/appt-1", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	left, err = iva.Filter(b.ctx, []slots.Slot{s}, "sess-1")
	require.NoError(t, err)
	require.Len(t, left, 1)
	_, err = iva.Reserve(b.ctx, s, "sess-1", "P")
	require.NoError(t, err)
}

// A web hold adopted as a booking's reservation: the booking core's
// Reserve, Confirm and Release of that session treat it as their own, and
// nobody else — web or IVA — can take the slot at any point.
func TestAdoptMakesTheWebHoldTheReservation(t *testing.T) {
	t.Parallel()
	b := setupWeb(t)
	iva, err := reservation.New(nil, reservation.Config{Engine: b.eng, Location: time.UTC, AppointmentTypeID: webType})
	require.NoError(t, err)
	s := slots.Slot{StartTime: "3/15/2025 9:00:00 AM", ScheduleColumnGUID: webSpec, LocationGUID: "loc-1", Minutes: 30}
	h := b.hold(t, "c1", webSpec, webSlot9)
	from := reservation.WebHold{ClientID: "c1", HoldID: h.HoldID, Memo: "m"}

	_, err = iva.Adopt(b.ctx, s, "sess-other", "P", reservation.WebHold{ClientID: "c2", HoldID: h.HoldID})
	requireHeld(t, err) // another client's hold id is not adoptable
	res, err := iva.Adopt(b.ctx, s, "web-"+h.HoldID, "P", from)
	require.NoError(t, err)
	require.Equal(t, reservation.Reserved, res.Outcome)
	got, _, found, err := iva.Get(b.ctx, s)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "web-"+h.HoldID, got.SessionID, "the seed's SlotReservation key names the booking's session")

	res, err = iva.Reserve(b.ctx, s, "web-"+h.HoldID, "P")
	require.NoError(t, err)
	require.Equal(t, reservation.Refreshed, res.Outcome, "the core's Reserve finds its own reservation")
	_, err = iva.Reserve(b.ctx, s, "sess-1", "P")
	requireHeld(t, err)
	r := b.do(t, "POST", "/v1/holds", webHoldBody("c2", webSpec, webSlot9))
	require.Equal(t, 409, r.Status, string(r.Body))
	r = b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 200, r.Status)
	require.JSONEq(t, `{"ok":false}`, string(r.Body), "the web hold itself is gone (the web face's false, docs/holds.md)")

	res, err = iva.Adopt(b.ctx, s, "web-"+h.HoldID, "P", from)
	require.NoError(t, err)
	require.Equal(t, reservation.Refreshed, res.Outcome, "adopting again (a retried /book) is idempotent")
	res, err = iva.Confirm(b.ctx, s, "web-"+h.HoldID, "P")
	require.NoError(t, err)
	require.Equal(t, reservation.Confirmed, res.Outcome)
	released, err := iva.Release(b.ctx, s, "web-"+h.HoldID)
	require.NoError(t, err)
	require.True(t, released)
	a, found, err := b.eng.Adopted(b.ctx, "c1", h.HoldID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "m", a.Memo)
}
