package bookinghttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/redistest"
)

// holdsFake is a faithful in-memory holds engine for what cancelAppt
// uses: holds keyed by (type, specialist, start instant), cooldowns by
// appointment id; each call reports whether there was one and removes it.
type holdsFake struct {
	mu        sync.Mutex
	holds     map[string]bool
	cooldowns map[string]bool
}

func holdKey(typ, spec string, start time.Time) string {
	return strings.ToLower(typ) + "|" + strings.ToLower(spec) + "|" + start.UTC().Format(time.RFC3339)
}

func (h *holdsFake) ReleaseSlot(_ context.Context, typ, spec string, start time.Time) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := holdKey(typ, spec, start)
	had := h.holds[k]
	delete(h.holds, k)
	return had, nil
}

func (h *holdsFake) ClearCooldown(_ context.Context, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	had := h.cooldowns[strings.ToLower(id)]
	delete(h.cooldowns, strings.ToLower(id))
	return had, nil
}

// cacheFake is the slot cache's RestoreSlot: the slots put back, by ID.
type cacheFake struct {
	mu       sync.Mutex
	restored []slots.Slot
}

func (c *cacheFake) RestoreSlot(_ context.Context, s slots.Slot) error {
	if _, err := s.ID(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restored = append(c.restored, s)
	return nil
}

type famEnv struct {
	c9    *familytest.Env
	db    *redistest.DB
	srv   *server
	holds *holdsFake
	cache *cacheFake
}

func newFamEnv(t *testing.T, simCfg cloud9sim.Config, limiter booking.Limiter) *famEnv {
	t.Helper()
	c9 := familytest.New(t, simCfg)
	db := redistest.New(t)
	idx, err := phoneindex.New(db.Client, c9.Client, phoneindex.Config{Logger: bt.Discard()})
	require.NoError(t, err)
	e := &famEnv{c9: c9, db: db, holds: &holdsFake{holds: map[string]bool{}, cooldowns: map[string]bool{}}, cache: &cacheFake{}}
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client, Limiter: limiter, Phones: idx, Holds: e.holds,
		Slots: e.cache, Changes: booking.RedisSlotChanges{Client: db.Client}},
		booking.FamilyConfig{LocationGUID: c9.Location(), PracticeZone: c9.Sim.Config().TimeZone,
			WriteWait: 100 * time.Millisecond, Logger: bt.Discard()})
	require.NoError(t, err)
	app, err := web.New(web.Options{Logger: bt.Discard()})
	require.NoError(t, err)
	h, err := bookinghttp.NewFamily(fam, bookinghttp.Config{Logger: bt.Discard()})
	require.NoError(t, err)
	require.NoError(t, bookinghttp.RegisterFamily(app, h, ""))
	e.srv = &server{app: app}
	return e
}

func (e *famEnv) post(t *testing.T, path string, body any) reply {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		raw = mustJSON(t, body)
	}
	return e.srv.do(t, http.MethodPost, base+path, raw)
}

// c9Time is a Cloud9 date-time or date (the simulator's clock moves).
var c9Time = regexp.MustCompile(`\d{1,2}/\d{1,2}/\d{4}( \d{1,2}:\d{2}(:\d{2})? [AP]M)?`)

var famNorm = contractstest.Normalizer{Rules: []contractstest.Rule{
	{RE: contractstest.UUID, Name: "guid", Numbered: true},
	{RE: contractstest.Time, Name: "time"},
	{RE: c9Time, Name: "c9time", Numbered: true},
}}

func famGolden(t *testing.T, name string, r reply, status int) {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	contractstest.Golden(t, "booking_http_family_"+name, famNorm.Normalize(t, r.body))
}

const unknownGUID = "0F0F0F0F-1111-4222-8333-444444444444"

// Every answer of the patient reads, pinned by golden files; bad input
// answers 200 in the endpoint's shape and calls nothing.
func TestFamilyPatientReadsGoldens(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	e.c9.Patient(t, "John", "Smithers", "724-555-0111")
	slot := e.c9.Slot(t, 3)
	e.c9.Appointment(t, mary, slot)

	famGolden(t, "get_patient", e.post(t, "/getPatient", map[string]any{"patientGUID": mary}), 200)
	famGolden(t, "get_patient_unknown", e.post(t, "/getPatient", map[string]any{"patientGUID": unknownGUID}), 200)
	famGolden(t, "get_patient_missing", e.post(t, "/getPatient", map[string]any{}), 200)
	famGolden(t, "get_patient_bad_guid", e.post(t, "/getPatient", map[string]any{"patientGUID": "nope"}), 200)
	famGolden(t, "get_patient_malformed", e.post(t, "/getPatient", []byte(`{"patientGUID":`)), 200)
	famGolden(t, "get_patient_wrong_type", e.post(t, "/getPatient", []byte(`{"patientGUID":12}`)), 200)

	famGolden(t, "by_phone", e.post(t, "/getPatientByFilter", map[string]any{"phoneNumber": "(412) 555-0100"}), 200)
	famGolden(t, "by_name", e.post(t, "/getPatientByFilter", map[string]any{"filter": "Smith, Mary"}), 200)
	lookups := e.c9.Sim.Calls(cloud9.ProcGetPortalPatientLookup)
	famGolden(t, "by_name_none", e.post(t, "/getPatientByFilter", map[string]any{"filter": "Nobody, Here"}), 200)
	require.Equal(t, lookups+1, e.c9.Sim.Calls(cloud9.ProcGetPortalPatientLookup), "no match: page 1 is asked once, not again as page 0")
	famGolden(t, "by_filter_missing", e.post(t, "/getPatientByFilter", map[string]any{"locationGUID": e.c9.Location()}), 200)
	famGolden(t, "by_phone_short", e.post(t, "/getPatientByFilter", map[string]any{"phoneNumber": "12"}), 200)
	// A phone number sent as a JSON number is its digits (the original's
	// digit match took it); a phoneNumber of another type is dropped, so
	// the request lacks its key.
	famGolden(t, "by_phone_number", e.post(t, "/getPatientByFilter", []byte(`{"phoneNumber":4125550100}`)), 200)
	famGolden(t, "by_filter_wrong_type", e.post(t, "/getPatientByFilter", []byte(`{"phoneNumber":true}`)), 200)

	famGolden(t, "appts", e.post(t, "/getPatientAppts", map[string]any{"patientGUID": mary}), 200)
	famGolden(t, "appts_none", e.post(t, "/getPatientAppts", map[string]any{"patientGUID": unknownGUID}), 200)
	famGolden(t, "appts_missing", e.post(t, "/getPatientAppts", []byte(`{}`)), 200)

	famGolden(t, "location_all", e.post(t, "/getLocation", nil), 200)
	famGolden(t, "location_one", e.post(t, "/getLocation", map[string]any{"locationGUID": e.c9.Location()}), 200)
	famGolden(t, "location_unknown", e.post(t, "/getLocation", map[string]any{"locationGUID": unknownGUID}), 200)
	famGolden(t, "location_bad_guid", e.post(t, "/getLocation", map[string]any{"locationGUID": "x"}), 200)

	// Bad input reached no Cloud9 procedure beyond the good calls' own.
	// GetPatientInformation: getPatient found + unknown (2), the phone
	// search's read of the two patients (2), the patient name of
	// getPatientAppts (1); none for the refused requests.
	require.Equal(t, 5, e.c9.Sim.Calls(cloud9.ProcGetPatientInformation))
	require.Equal(t, 2, e.c9.Sim.Calls(cloud9.ProcGetPatientList), "two phone searches, one list each")
}

// Writes: editInsurance, confirmAppt, cancelAppt — success, unknown GUIDs
// (Cloud9 refuses: 200, nothing changed) and bad input (no call at all).
func TestFamilyWritesGoldens(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	slot := e.c9.Slot(t, 3)
	appt := e.c9.Appointment(t, mary, slot)

	famGolden(t, "insurance", e.post(t, "/editInsurance", map[string]any{"patientGUID": mary, "insuranceProvider": "Aetna",
		"insuranceGroupId": "G123", "insuranceMemberId": "456"}), 200)
	comments := e.c9.Sim.Comments()
	require.Len(t, comments, 1)
	require.Contains(t, comments[0].Text, "Provider: Aetna\nGroup ID: G123\nMember ID: 456")
	famGolden(t, "insurance_unknown", e.post(t, "/editInsurance", map[string]any{"patientGUID": unknownGUID, "insuranceProvider": "Aetna"}), 200)
	famGolden(t, "insurance_missing", e.post(t, "/editInsurance", map[string]any{"patientGUID": mary}), 200)
	famGolden(t, "insurance_malformed", e.post(t, "/editInsurance", []byte(`[1,2`)), 200)
	require.Len(t, e.c9.Sim.Comments(), 1, "refused requests add no comment")

	famGolden(t, "confirm", e.post(t, "/confirmAppt", map[string]any{"appointmentId": appt}), 200)
	famGolden(t, "confirm_unknown", e.post(t, "/confirmAppt", map[string]any{"appointmentId": unknownGUID}), 200)
	famGolden(t, "confirm_missing", e.post(t, "/confirmAppt", map[string]any{}), 200)
	require.Equal(t, cloud9sim.StatusConfirmed, e.c9.Sim.Appointments()[0].Status)

	famGolden(t, "cancel_missing", e.post(t, "/cancelAppt", map[string]any{"startTime": slot.StartTime}), 200)
	famGolden(t, "cancel_bad_guid", e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": "abc"}), 200)
	famGolden(t, "cancel_wrong_type", e.post(t, "/cancelAppt", []byte(`{"appointmentGUID":true}`)), 200)
	famGolden(t, "cancel_unknown", e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": unknownGUID}), 200)
	require.Equal(t, 1, e.c9.Sim.Calls(cloud9.ProcSetAppointmentStatusCanceled), "bad input sends nothing")
	require.True(t, e.c9.Sim.Appointments()[0].Active())
	require.Empty(t, e.cache.restored)
}

// A successful cancellation gives the slot back: hold released, cooldown
// cleared, slot restored to the cache, change published.
func TestCancelGivesTheSlotBack(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	slot := e.c9.Slot(t, 3)
	appt := e.c9.Appointment(t, mary, slot)
	start, err := cloud9.ParseTime(slot.StartTime)
	require.NoError(t, err)
	zone := e.c9.Sim.Config().TimeZone
	instant := time.Date(start.Year(), start.Month(), start.Day(), start.Hour(), start.Minute(), 0, 0, zone)
	e.holds.holds[holdKey(slot.AppointmentTypeGUID, slot.ScheduleColumnGUID, instant)] = true
	e.holds.cooldowns[strings.ToLower(appt)] = true
	sub := e.db.Client.Subscribe(context.Background(), contracts.SlotChangesChannel)
	defer sub.Close()
	_, err = sub.Receive(context.Background())
	require.NoError(t, err)

	r := e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt, "patientGUID": mary})
	famGolden(t, "cancel", r, 200)
	var got contracts.CancelResponse
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.True(t, got.SlotReleased, "the hold of the slot was released")
	require.True(t, got.CooldownCleared)
	require.True(t, got.CacheRevalidated)
	require.Empty(t, e.holds.holds)
	require.Empty(t, e.holds.cooldowns)
	require.Len(t, e.cache.restored, 1)
	require.Equal(t, slot.ScheduleColumnGUID, e.cache.restored[0].ScheduleColumnGUID)
	require.True(t, cloud9.SameStart(slot.StartTime, e.cache.restored[0].StartTime))
	require.False(t, e.c9.Sim.Appointments()[0].Active())

	msg, err := sub.ReceiveMessage(context.Background())
	require.NoError(t, err)
	var ev contracts.SlotChangeEvent
	require.NoError(t, json.Unmarshal([]byte(msg.Payload), &ev))
	require.Equal(t, contracts.EventSlotReleased, ev.Event)
	require.Equal(t, appt, ev.AppointmentGUID)

	// The slot is also open again in Cloud9.
	again := e.c9.Slot(t, 3)
	require.Equal(t, slot.StartTime, again.StartTime)
}

// Cloud9 down: 500 in the endpoint's shape. The limiter gives no turn in
// time: 500 rate_limited, and nothing was sent.
func TestFamilyFailures(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	e.c9.Sim.SetFaults(cloud9sim.Faults{ErrorRate: 1})
	famGolden(t, "get_patient_cloud9_down", e.post(t, "/getPatient", map[string]any{"patientGUID": mary}), 500)
	famGolden(t, "location_cloud9_down", e.post(t, "/getLocation", nil), 500)
	famGolden(t, "by_phone_cloud9_down", e.post(t, "/getPatientByFilter", map[string]any{"phoneNumber": "4125550100"}), 500)

	db := redistest.New(t)
	lim := cloud9.NewRedisLimiter(db.Client, map[string]cloud9.Rate{cloud9.ProcSetAppointmentStatusConfirmed: {N: 1, Per: time.Hour}},
		cloud9.Rate{}, cloud9.WithKeyPrefix("famtest:"))
	b := newFamEnv(t, cloud9sim.Config{}, lim)
	p := b.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	appt := b.c9.Appointment(t, p, b.c9.Slot(t, 3))
	require.Equal(t, 200, b.post(t, "/confirmAppt", map[string]any{"appointmentId": appt}).status)
	famGolden(t, "confirm_limited", b.post(t, "/confirmAppt", map[string]any{"appointmentId": appt}), 500)
	require.Equal(t, 1, b.c9.Sim.Calls(cloud9.ProcSetAppointmentStatusConfirmed), "the limited confirm was not sent")
}

func TestOperationStatusWithoutQueue(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	famGolden(t, "operation_missing_id", e.srv.do(t, http.MethodGet, base+"/checkOperationStatus", nil), 200)
	famGolden(t, "operation_bad_id", e.srv.do(t, http.MethodGet, base+"/operations/"+strings.Repeat("x", 200), nil), 200)
	famGolden(t, "operation_unconfigured", e.srv.do(t, http.MethodGet, base+"/checkOperationStatus?operationId=op-1-abc", nil), 500)
}

// Redis down under the phone search: 503 in the search's shape (flowgate's
// store failed, not Cloud9), within the request.
func TestPhoneSearchRedisDown(t *testing.T) {
	t.Parallel()
	c9 := familytest.New(t, cloud9sim.Config{})
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer dead.Close()
	idx, err := phoneindex.New(dead, c9.Client, phoneindex.Config{Logger: bt.Discard()})
	require.NoError(t, err)
	fam, err := booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client, Phones: idx},
		booking.FamilyConfig{LocationGUID: c9.Location(), Logger: bt.Discard()})
	require.NoError(t, err)
	app, err := web.New(web.Options{Logger: bt.Discard()})
	require.NoError(t, err)
	h, err := bookinghttp.NewFamily(fam, bookinghttp.Config{Logger: bt.Discard()})
	require.NoError(t, err)
	require.NoError(t, bookinghttp.RegisterFamily(app, h, ""))
	srv := &server{app: app}
	r := srv.do(t, http.MethodPost, base+"/getPatientByFilter", mustJSON(t, map[string]any{"phoneNumber": "4125550100"}))
	famGolden(t, "by_phone_redis_down", r, http.StatusServiceUnavailable)
	require.Zero(t, c9.Sim.Calls(cloud9.ProcGetPatientList), "nothing asked of Cloud9 with nowhere to keep the records")
}
