package holdshttp_test

import (
	"context"
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

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
	"github.com/flowgate/flowgate/orchestrator/web"

	"github.com/flowgate/flowgate/test/redistest"
)

func TestCreateHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "POST", "/v1/holds", holdBody("sess_xyz", specY, slot9))
	require.Equal(t, 201, r.Status, string(r.Body))
	var h holdshttp.HoldResponse
	r.decode(t, &h)
	require.Equal(t, holdshttp.HoldResponse{HoldID: h.HoldID, HoldRef: holds.Ref(h.HoldID), SpecialistID: specY, SlotStartDate: "2025-03-15T09:00:00Z",
		SlotEndDate: "2025-03-15T09:30:00Z", HoldExpiresAt: "2025-03-15T08:55:30Z"}, h)
	contractstest.Golden(t, "holds_create_response", r.Body)
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, b.p+"hold:"+typeA+":2025-03-15T09:00:00Z:"+specY).Val())

	// another client: the slot on y is taken (409) and nothing changes
	before := b.snapshot(t)
	r = b.do(t, "POST", "/v1/holds", holdBody("other", specY, slot9))
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Equal(t, contracts.CodeConflict, r.errBody(t).Code)
	require.Equal(t, before, b.snapshot(t))
	contractstest.Golden(t, "holds_conflict_error", contractstest.Normalizer{Keys: map[string]string{"request_id": "RID"}}.Normalize(t, r.Body))
}

func TestAssignmentOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// x and y share the top priority; Order puts them in FNV order, z last
	want := holds.Order(typeA, slot9, []holds.Candidate{{SpecialistID: specX, Priority: 1},
		{SpecialistID: specY, Priority: 1}, {SpecialistID: specZ}})
	require.Equal(t, specZ, want[2].SpecialistID)
	for i, w := range want {
		h := b.hold(t, fmt.Sprint("c", i), "", slot9)
		require.Equal(t, w.SpecialistID, h.SpecialistID)
	}
	r := b.do(t, "POST", "/v1/holds", holdBody("late", "", slot9))
	require.Equal(t, 409, r.Status, "every specialist held")
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.hold(t, "someone", specX, slot9.Add(time.Hour))
	before := b.snapshot(t)
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		field  string
	}{
		{"no client", "POST", "/v1/holds", holdBody("", specX, slot9), 400, "clientId"},
		{"colon client", "POST", "/v1/holds", holdBody("a:b", specX, slot9), 400, "clientId"},
		{"no type", "POST", "/v1/holds", map[string]string{"clientId": "c", "slotStartDate": "2025-03-15T09:00:00Z"}, 400, "appointmentTypeId"},
		{"bad date", "POST", "/v1/holds", map[string]string{"appointmentTypeId": typeA, "clientId": "c", "slotStartDate": "15/03/2025 9am"}, 400, "slotStartDate"},
		{"no date", "POST", "/v1/holds", map[string]string{"appointmentTypeId": typeA, "clientId": "c"}, 400, "slotStartDate"},
		{"off grid", "POST", "/v1/holds", holdBody("c", specX, slot9.Add(7*time.Minute)), 400, "slotStartDate"},
		{"unknown type", "POST", "/v1/holds", map[string]string{"appointmentTypeId": "nope", "clientId": "c", "slotStartDate": "2025-03-15T09:00:00Z"}, 404, ""},
		{"unknown specialist", "POST", "/v1/holds", holdBody("c", "spec-nobody", slot9), 404, "specialistId"},
		{"malformed json", "POST", "/v1/holds", `{"clientId":`, 400, ""},
		{"empty body", "POST", "/v1/holds", "", 400, ""},
		{"heartbeat no hold", "PATCH", "/v1/holds", map[string]string{"clientId": "c"}, 400, "holdId"},
		{"release no client", "DELETE", "/v1/holds/abc", nil, 400, "clientId"},
		{"book unknown type", "POST", "/v1/appointment-types/nope/book", map[string]string{"clientId": "c", "holdId": "h"}, 404, ""},
		{"book no hold", "POST", "/v1/appointment-types/" + typeA + "/book", map[string]string{"clientId": "c"}, 400, "holdId"},
		{"book expired hold", "POST", "/v1/appointment-types/" + typeA + "/book", map[string]string{"clientId": "c", "holdId": "h"}, 409, "holdId"},
		{"cancel unknown", "DELETE", "/v1/appointments/nope", nil, 404, ""},
	}
	for _, tc := range cases {
		r := b.do(t, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		e := r.errBody(t)
		require.Equal(t, contracts.CodeForStatus(tc.status), e.Code, tc.name)
		if tc.field != "" {
			require.Equal(t, tc.field, e.Details["field"], tc.name)
		}
		require.Equal(t, before, b.snapshot(t), "%s changed Redis", tc.name)
	}
}

func TestQuotaOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *holds.Config) { c.MaxHolds = 2 })
	var created, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := slot9.Add(time.Duration(i%16) * 30 * time.Minute)
			spec := []string{specX, specY, specZ}[i%3]
			r := b.do(t, "POST", "/v1/holds", holdBody("greedy", spec, start))
			switch r.Status {
			case 201:
				created.Add(1)
			case 429:
				require.NotEmpty(t, r.Header["Retry-After"])
				require.Equal(t, "quota", r.errBody(t).Details["reason"])
				limited.Add(1)
			case 409: // a slot greedy holds already: taken (its hold's id is not answered again)
				require.Equal(t, "slot_taken", r.errBody(t).Details["reason"])
				require.NotContains(t, string(r.Body), "hold-")
			default:
				t.Errorf("%d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, created.Load(), int64(200))
	require.EqualValues(t, 2, b.rdb.ZCard(b.ctx, b.p+"client:greedy:holds").Val(), "never more than the quota")
	require.Positive(t, limited.Load())
}

func TestHeartbeatAndReleaseOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hold(t, "c1", specX, slot9)
	b.clock.Advance(20 * time.Second)
	r := b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 200, r.Status, string(r.Body))
	var hb holdshttp.HeartbeatResponse
	r.decode(t, &hb)
	require.Equal(t, holdshttp.HeartbeatResponse{OK: true, HoldID: h.HoldID, HoldExpiresAt: "2025-03-15T08:55:50Z"}, hb)
	contractstest.Golden(t, "holds_heartbeat_response", r.Body)

	before := b.snapshot(t)
	r = b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c2", "holdId": h.HoldID})
	require.Equal(t, 200, r.Status, "another client's hold: the web face's false (docs/holds.md)")
	require.JSONEq(t, `{"ok":false}`, string(r.Body))
	require.Equal(t, before, b.snapshot(t), "nothing changed")
	r = b.do(t, "DELETE", "/v1/holds/"+h.HoldID+"?clientId=c2", nil)
	require.Equal(t, 409, r.Status, "not the owner")
	r = b.do(t, "DELETE", "/v1/holds/"+h.HoldID+"?clientId=c1", nil)
	require.Equal(t, 200, r.Status)
	require.JSONEq(t, `{"released":true}`, string(r.Body))
	r = b.do(t, "DELETE", "/v1/holds/"+h.HoldID+"?clientId=c1", nil)
	require.Equal(t, 200, r.Status)
	require.JSONEq(t, `{"released":false}`, string(r.Body), "idempotent")
	require.Empty(t, b.snapshot(t))
}

// docs/holds.md: a heartbeat that finds no live hold answers false — 200
// {"ok":false}, not an error — and changes nothing: the hold expired (its
// TTL ran out in Redis, before any sweep), was released or booked, or the
// id is unknown. One answer for every case, so it tells no one whether an
// id was ever a hold.
func TestHeartbeatOfAGoneHoldAnswersFalse(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *holds.Config) { c.HoldTTL = 300 * time.Millisecond })
	expired := b.hold(t, "c1", specX, slot9)
	released := b.hold(t, "c1", specY, slot9)
	require.Equal(t, 200, b.do(t, "DELETE", "/v1/holds/"+released.HoldID+"?clientId=c1", nil).Status)
	booked := b.hold(t, "c1", specZ, slot9)
	require.Equal(t, 201, b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book",
		map[string]string{"clientId": "c1", "holdId": booked.HoldID}).Status)
	require.Eventually(t, func() bool { // every key of the 300 ms holds (slot, face key, client index) has lapsed
		for _, k := range b.rdb.Keys(b.ctx, b.p+"*").Val() {
			if p := b.rdb.PTTL(b.ctx, k).Val(); p > 0 && p < time.Minute {
				return false
			}
		}
		return b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val() == 0
	}, 5*time.Second, 20*time.Millisecond, "the hold's TTL runs out")
	before := b.snapshot(t)
	for name, id := range map[string]string{"expired": expired.HoldID, "released": released.HoldID, "booked": booked.HoldID, "unknown": "nope"} {
		r := b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c1", "holdId": id})
		require.Equal(t, 200, r.Status, "%s: %s", name, r.Body)
		require.JSONEq(t, `{"ok":false}`, string(r.Body), name)
		if name == "expired" {
			contractstest.Golden(t, "holds_heartbeat_lost_response", r.Body)
		}
	}
	require.Equal(t, before, b.snapshot(t), "nothing changed")
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": expired.HoldID})
	require.Equal(t, 409, r.Status, "booking an expired hold is still refused: %s", r.Body)
}

func TestBookSetsCooldownAndCancelClearsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hold(t, "c1", specX, slot9)
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c2", "holdId": h.HoldID})
	require.Equal(t, 409, r.Status, "another client cannot book my hold")

	r = b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))
	var bk holdshttp.BookResponse
	r.decode(t, &bk)
	require.Equal(t, holdshttp.Appointment{AppointmentID: "appt-1", AppointmentTypeID: typeA, SpecialistID: specX,
		ClientID: "c1", SlotStartDate: slot9, SlotEndDate: slot9.Add(30 * time.Minute), BookedAt: t0}, bk.Appointment)
	contractstest.Golden(t, "holds_book_response", r.Body)
	require.Equal(t, 35*time.Minute, b.rdb.PTTL(b.ctx, b.eng.SlotKey(specX, slot9)).Val().Round(time.Second),
		"the hold is gone; the booking keeps the slot key until the slot ends")
	require.Len(t, b.cat.Appointments(), 1)

	before := b.snapshot(t)
	r = b.do(t, "POST", "/v1/holds", holdBody("c1", specY, slot9.Add(time.Hour)))
	require.Equal(t, 429, r.Status, string(r.Body))
	require.Equal(t, "86400", r.Header["Retry-After"])
	require.Equal(t, "cooldown", r.errBody(t).Details["reason"])
	require.Equal(t, before, b.snapshot(t))

	r = b.do(t, "DELETE", "/v1/appointments/appt-1", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	var cn holdshttp.CancelResponse
	r.decode(t, &cn)
	require.True(t, cn.CooldownCleared)
	require.Empty(t, b.cat.Appointments())
	require.Zero(t, b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val(), "the cancel frees the slot")
	b.hold(t, "c1", specY, slot9.Add(time.Hour))
}

func TestBookFailureKeepsTheHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.hold(t, "c1", specX, slot9)
	b.cat.SetFail(&contracts.Error{Code: contracts.CodeUnavailable, Message: "store down", Err: errors.New("down")})
	r := b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 503, r.Status)
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, b.eng.SlotKey(specX, slot9)).Val(), "kept for a retry")
	left, err := b.eng.CooldownRemaining(b.ctx, "c1", typeA)
	require.NoError(t, err)
	require.Zero(t, left, "no cooldown without a booking")
	b.cat.SetFail(nil)
	r = b.do(t, "POST", "/v1/appointment-types/"+typeA+"/book", map[string]string{"clientId": "c1", "holdId": h.HoldID})
	require.Equal(t, 201, r.Status, string(r.Body))
}

func TestRedisDownIs503(t *testing.T) {
	t.Parallel()
	b := setupOn(t, redistest.Dead(t))
	r := b.do(t, "POST", "/v1/holds", holdBody("c", specX, slot9))
	require.Equal(t, 503, r.Status, string(r.Body))
	require.Equal(t, contracts.CodeUnavailable, r.errBody(t).Code)
	r = b.do(t, "PATCH", "/v1/holds", map[string]string{"clientId": "c", "holdId": "h"})
	require.Equal(t, 503, r.Status)
	r = b.do(t, "DELETE", "/v1/holds/h?clientId=c", nil)
	require.Equal(t, 503, r.Status)
}

// slowCatalog answers AppointmentType after wait (a Cloud9 catalogue
// reading Cloud9), or the context's error first.
type slowCatalog struct {
	holdshttp.Catalog
	wait time.Duration
}

func (s slowCatalog) AppointmentType(ctx context.Context, id string) (holdshttp.AppointmentType, error) {
	select {
	case <-time.After(s.wait):
		return s.Catalog.AppointmentType(ctx, id)
	case <-ctx.Done():
		return holdshttp.AppointmentType{}, contracts.Wrap(contracts.CodeUnavailable, "slowCatalog", ctx.Err(), "catalogue did not answer")
	}
}

// hungClaims is an engine whose claims wait for their context (a hung
// Redis).
type hungClaims struct{ holdshttp.Engine }

func (hungClaims) ClaimDetailed(ctx context.Context, _ holds.ClaimRequest) (holds.Claimed, error) {
	<-ctx.Done()
	return holds.Claimed{}, contracts.Wrap(contracts.CodeUnavailable, "hungClaims", ctx.Err(), "holds unavailable")
}

// CatalogTimeout, not RequestTimeout, bounds a create's catalogue work:
// a catalogue slower than RequestTimeout answers within CatalogTimeout
// (201), and without one the create answers 503 at RequestTimeout. The
// claim after it keeps RequestTimeout: a hung one answers 503 then, not
// at CatalogTimeout.
func TestCatalogTimeoutBoundsTheCatalogue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, spec  string
		catalog     time.Duration
		catalogWait time.Duration
		engine      holdshttp.Engine
		status      int
		within      time.Duration
	}{
		{"catalogue within CatalogTimeout", specX, 5 * time.Second, 1500 * time.Millisecond, b.eng, 201, 4 * time.Second},
		{"no CatalogTimeout", specY, 0, 1500 * time.Millisecond, b.eng, 503, 1400 * time.Millisecond},
		{"hung claim", specY, 5 * time.Second, 0, hungClaims{b.eng}, 503, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			app, err := web.New(web.Options{Logger: logger})
			require.NoError(t, err)
			h, err := holdshttp.New(holdshttp.Config{Engine: tc.engine, Catalog: slowCatalog{b.cat, tc.catalogWait},
				RequestTimeout: 500 * time.Millisecond, CatalogTimeout: tc.catalog, Now: b.clock.Now, Logger: logger})
			require.NoError(t, err)
			holdshttp.Register(app, h)
			req := httptest.NewRequest("POST", "/v1/holds", strings.NewReader(
				fmt.Sprintf(`{"appointmentTypeId":%q,"clientId":"c1","specialistId":%q,"slotStartDate":%q}`, typeA, tc.spec, holds.FormatStart(slot9))))
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := app.Test(req, 10000)
			require.NoError(t, err)
			took := time.Since(t0)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			require.Less(t, took, tc.within)
		})
	}
}
