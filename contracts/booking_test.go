package contracts_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

// Booking shapes (docs/reference/nodered-endpoints.md §1). Each variant has its golden,
// contracts/testdata/booking_<variant>.golden; the HTTP tests of
// bookinghttp pin the same shapes as served (booking_http_*).

var bt0 = time.Date(2026, 1, 20, 15, 30, 0, 0, time.UTC)

const (
	patGUID  = "877F0034-7E09-4E35-BE0D-397E309DF2E8"
	apptGUID = "0A1B2C3D-0000-4000-8000-000000000001"
	viewGUID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	colGUID  = "11111111-2222-3333-4444-555555555555"
	typeGUID = "f6c20c35-9abb-47c2-981a-342996016705"
)

func params() *contracts.BookingParams {
	return &contracts.BookingParams{PatientGUID: patGUID, StartTime: "01/20/2026 10:00 AM", ScheduleViewGUID: viewGUID,
		ScheduleColumnGUID: colGUID, AppointmentTypeGUID: typeGUID, Minutes: 45, ChildName: "Johnny Smith"}
}

// The seed's §5.1 request decodes, and re-encodes with the same names.
func TestCreateApptRequestGolden(t *testing.T) {
	raw := `{
		"patientGUID": "12345678-1234-1234-1234-123456789012",
		"bookingAuthToken": "eyJ...<base64>...",
		"startTime": "01/20/2026 10:00 AM",
		"scheduleViewGUID": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
		"scheduleColumnGUID": "11111111-2222-3333-4444-555555555555",
		"appointmentTypeGUID": "f6c20c35-9abb-47c2-981a-342996016705",
		"minutes": 45,
		"childName": "Johnny Smith",
		"note": "Child: Johnny Smith | DOB: 01/15/2015 | Insurance: Aetna",
		"uui": "call-session-123",
		"sessionId": "flowise-session-456"
	}`
	var req contracts.CreateApptRequest
	if err := contracts.DecodeJSON([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	contractstest.Golden(t, "booking_create_appt_request", req)

	batch := `{"patientGUID":"` + patGUID + `","bookingAuthToken":"t","uui":"u","children":[
		{"childName":"Johnny","startTime":"01/20/2026 10:00 AM","scheduleViewGUID":"` + viewGUID + `","minutes":"45","note":"Child: Johnny"},
		{"childName":"Jane","bookingToken":"eyJzdCI6IjEvMjAvMjAyNiAxMDo0NTowMCBBTSJ9"}]}`
	var b contracts.CreateApptRequest
	if err := contracts.DecodeJSON([]byte(batch), &b); err != nil {
		t.Fatal(err)
	}
	if b.Children[0].Minutes != 45 {
		t.Fatalf("minutes as a string: got %d", b.Children[0].Minutes)
	}
	contractstest.Golden(t, "booking_create_appt_request_batch", b)
}

func TestFlexTypes(t *testing.T) {
	var v struct {
		N contracts.FlexInt    `json:"n"`
		B contracts.FlexBool   `json:"b"`
		L contracts.StringList `json:"l"`
	}
	for _, c := range []struct {
		in   string
		n    int
		b    bool
		list []string
	}{
		{`{"n":45,"b":true,"l":"a, b"}`, 45, true, []string{"a", "b"}},
		{`{"n":"45","b":"true","l":["a","b"]}`, 45, true, []string{"a", "b"}},
		{`{"n":"","b":"false","l":""}`, 0, false, []string{}},
		{`{"n":null,"b":null,"l":null}`, 0, false, nil},
	} {
		v.N, v.B, v.L = 0, false, nil
		if err := contracts.DecodeJSON([]byte(c.in), &v); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if int(v.N) != c.n || bool(v.B) != c.b || (c.list != nil && len(v.L) != len(c.list)) {
			t.Fatalf("%s: got %v %v %v", c.in, v.N, v.B, v.L)
		}
	}
	for _, bad := range []string{`{"n":"forty"}`, `{"n":4.5}`, `{"b":"maybe"}`, `{"l":5}`} {
		err := contracts.DecodeJSON([]byte(bad), &v)
		if contracts.ErrorCode(err) != contracts.CodeInvalid {
			t.Fatalf("%s: want an invalid-input error, got %v", bad, err)
		}
	}
	var e *contracts.Error
	if err := contracts.DecodeJSON([]byte(`{"n":"forty"}`), &v); !errors.As(err, &e) || e.Details["field"] != "n" {
		t.Fatalf("the field is named: %v", err)
	}
}

func TestBookedGolden(t *testing.T) {
	r := contracts.ApptBookedResponse{Success: true, AppointmentGUID: apptGUID,
		Message: "Appointment GUID Added: " + apptGUID, NoteAdded: true,
		Debug: contracts.ApptBookedDebug{Cloud9Result: "Appointment GUID Added: " + apptGUID, Cloud9Status: "Success",
			Attempts: 1, NoteResult: contracts.NoteResult{Success: true, Result: "Patient Comment GUID Added: x"},
			Timestamp: contracts.JSTime(bt0), AuthMethod: contracts.AuthMethodToken, RequestParams: *params()},
		LLMGuidance: contracts.NewBookedGuidance("Johnny Smith", "01/20/2026 10:00 AM", bt0)}
	if r.LLMGuidance.VoiceResponse != "Your appointment is confirmed! Johnny, Tuesday 1/20/2026 at 10:00:00 AM." {
		t.Fatalf("voice: %q", r.LLMGuidance.VoiceResponse)
	}
	contractstest.Golden(t, "booking_appt_booked", r)
}

func TestQueuedGolden(t *testing.T) {
	r := contracts.NewApptQueued("op-1705764600000-abc123", contracts.BookingErrRateLimitedQueued,
		contracts.QueueReasonRateLimited, "Too many requests", 2, params(), bt0)
	contractstest.Golden(t, "booking_appt_queued", r)
}

func TestAuthRejectedGolden(t *testing.T) {
	for _, code := range []string{contracts.BookingAuthMissing, contracts.BookingAuthMalformed,
		contracts.BookingAuthSignatureInvalid, contracts.BookingAuthExpired, contracts.BookingAuthGUIDMismatch} {
		correct := ""
		if code == contracts.BookingAuthGUIDMismatch {
			correct = "11111111-1111-4111-8111-111111111111"
		}
		contractstest.Golden(t, "booking_appt_auth_"+code, contracts.NewApptAuthRejected(code, patGUID, correct, "session", bt0))
	}
	if m := contracts.AuthMessage(contracts.BookingAuthExpired); m != "Token expired, must create patient again" {
		t.Fatalf("seed §5.3 message: %q", m)
	}
}

func TestValidationGolden(t *testing.T) {
	contractstest.Golden(t, "booking_appt_validation_missing", contracts.NewApptValidation(
		[]string{"patientGUID", "startTime"}, nil, "", map[string]any{"childName": "Johnny", "hasBookingAuthToken": false}, bt0))
	contractstest.Golden(t, "booking_appt_validation_invalid", contracts.NewApptValidation(
		nil, []string{"minutes"}, "", nil, bt0))
	contractstest.Golden(t, "booking_appt_validation_malformed", contracts.NewApptValidation(
		nil, nil, "malformed JSON at byte 12", nil, bt0))
}

func TestDuplicateSlotGolden(t *testing.T) {
	r := contracts.NewApptDuplicateSlot("2026-01-20T10:00|"+colGUID, "flowise-session-456", bt0)
	if r.Success || r.Debug.ErrorType != "DUPLICATE_SLOT_BLOCKED" || r.LLMGuidance.ActionRequired != "use_next_slot_from_booking_plan" {
		t.Fatalf("shape: %+v", r)
	}
	contractstest.Golden(t, "booking_appt_duplicate_slot", r)
}

func TestSlotReservedGolden(t *testing.T) {
	contractstest.Golden(t, "booking_appt_slot_reserved", contracts.NewApptSlotReserved("01/20/2026 10:00 AM", "", bt0))
}

func TestFailedGolden(t *testing.T) {
	for _, et := range []string{contracts.BookingErrSlotNotAvailable, contracts.BookingErrPatientNotFound,
		contracts.BookingErrTimeout, contracts.BookingErrCloud9} {
		msg := map[string]string{
			contracts.BookingErrSlotNotAvailable: "Error: This appointment cannot be scheduled in the specified time slot.",
			contracts.BookingErrPatientNotFound:  "Error: Patient GUID specified does not exist.",
		}[et]
		r := contracts.ApptFailedResponse{Message: contracts.FailedMessage(et, msg),
			Debug: contracts.ApptFailedDebug{ErrorType: et, FlowgateErrorType: et,
				Cloud9Result: msg, Cloud9Status: "Error", Cloud9ErrorMessage: msg,
				Attempts: 1, RequestParams: params(), NoteResult: contracts.NoteResult{Skipped: true}, Timestamp: contracts.JSTime(bt0)},
			LLMGuidance: contracts.NewFailedGuidance(et, bt0)}
		if msg != "" { // the original's name for Cloud9's message
			r.Debug.ErrorType = contracts.OriginalErrorType(msg)
		}
		contractstest.Golden(t, "booking_appt_failed_"+et, r)
	}
}

func TestBatchGolden(t *testing.T) {
	sp := contracts.VoiceStartTime("01/20/2026 10:00 AM")
	sp2 := contracts.VoiceStartTime("01/20/2026 10:45 AM")
	r := contracts.NewApptBatch([]contracts.ApptBatchChild{
		{ChildName: "Johnny Smith", Success: true, AppointmentGUID: apptGUID, StartTime: "01/20/2026 10:00 AM",
			Date: sp.Date, Time: sp.Time, Day: sp.Day, Attempts: 1, NoteAdded: true, Message: "Appointment GUID Added: " + apptGUID},
		{ChildName: "Jane Smith", Queued: true, OperationID: "op-1705764600000-abc123", StartTime: "01/20/2026 10:45 AM",
			Date: sp2.Date, Time: sp2.Time, Day: sp2.Day, Attempts: 2, Message: contracts.QueuedMessage,
			ErrorType: contracts.BookingErrRateLimitedQueued},
		{ChildName: "Jim Smith", StartTime: "", Message: "Missing required fields: startTime", ErrorType: contracts.BookingErrValidation},
	}, bt0)
	if r.LLMGuidance.CurrentState != contracts.StatePartialSuccess || r.QueuedBookings != 1 || r.FailedBookings != 1 {
		t.Fatalf("totals: %+v", r)
	}
	contractstest.Golden(t, "booking_appt_batch", r)
	all := contracts.NewApptBatch([]contracts.ApptBatchChild{{ChildName: "A", Success: true, StartTime: "01/20/2026 10:00 AM"}}, bt0)
	if !all.Success || all.LLMGuidance.CurrentState != contracts.StateConfirmation {
		t.Fatalf("all booked: %+v", all)
	}
	none := contracts.NewApptBatch([]contracts.ApptBatchChild{{ChildName: "A", Message: "x"}}, bt0)
	if none.LLMGuidance.CurrentState != contracts.StateBookingFailed {
		t.Fatalf("none booked: %+v", none)
	}
}

func TestPatientGoldens(t *testing.T) {
	contractstest.Golden(t, "booking_patient_created_parent",
		contracts.NewPatientCreated(contracts.PatientModel, patGUID, "fam-1", "tok", "Patient Added: "+patGUID, "", false, false))
	contractstest.Golden(t, "booking_patient_created_child",
		contracts.NewPatientCreated(contracts.PatientModel, apptGUID, "fam-1", "tok2", "Patient Added: "+apptGUID, patGUID, true, false))
	contractstest.Golden(t, "booking_patient_cached",
		contracts.NewPatientCreated(contracts.PatientModel, patGUID, "fam-1", "tok", "Patient Added: "+patGUID, "", false, true))
	contractstest.Golden(t, "booking_patient_queued",
		contracts.NewPatientQueued("op-pat-1705764600000-abc123", "fam-1", "", false, "/chord/ortho-prd/queue-status"))
	contractstest.Golden(t, "booking_patient_failed",
		contracts.NewPatientFailed(true, "CLOUD9_ERROR: Procedure validation failure", "Procedure validation failure",
			"CLOUD9_ERROR", nil, bt0))
	contractstest.Golden(t, "booking_patient_validation",
		contracts.NewPatientFailed(false, "VALIDATION_ERROR: Missing required fields: patientFirstName",
			"Missing required fields: patientFirstName", contracts.BookingErrValidation, []string{"patientFirstName"}, bt0))
}

func sampleSlot(start, end string) contracts.ApptSlot {
	return contracts.ApptSlot{StartTime: start, EndTime: end, ScheduleViewGUID: viewGUID, ScheduleViewDescription: "Main",
		ScheduleColumnGUID: colGUID, ScheduleColumnDescription: "Chair 3", ScheduleTemplateName: "Ortho",
		AppointmentClassGUID: "c1", AppointmentClassDescription: "New patient", AppointmentTypeGUID: typeGUID,
		AppointmentTypeDescription: "Consult", Minutes: "40", LocationGUID: "1fef9297-7c8b-426b-b0d1-f2275136e48b",
		BookingToken: "eyJzdCI6IjEvMjAvMjAyNiA5OjAwOjAwIEFNIn0"}
}

func TestSlotGoldens(t *testing.T) {
	a := sampleSlot("1/21/2026 9:00:00 AM", "1/21/2026 9:40:00 AM")
	b := sampleSlot("1/21/2026 9:40:00 AM", "1/21/2026 10:20:00 AM")
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back contracts.ApptSlot
	if err := json.Unmarshal(raw, &back); err != nil || back != a {
		t.Fatalf("slot round trip: %v\n%+v\n%+v", err, a, back)
	}
	var camel contracts.ApptSlot
	if err := json.Unmarshal([]byte(`{"startTime":"1/21/2026 9:00:00 AM","minutes":40}`), &camel); err != nil ||
		camel.StartTime != "1/21/2026 9:00:00 AM" || camel.Minutes != "40" {
		t.Fatalf("camel only: %v %+v", err, camel)
	}
	contractstest.Golden(t, "booking_slots_request", contracts.GetApptSlotsRequest{StartDate: "01/21/2026",
		ScheduleViewGUIDs: contracts.StringList{viewGUID}, SessionID: "s"})
	contractstest.Golden(t, "booking_slots_ok", contracts.GetApptSlotsResponse{Slots: []contracts.ApptSlot{a, b}, Count: 2,
		VoiceSlots:  []contracts.VoiceSlot{contracts.NewVoiceSlot(a), contracts.NewVoiceSlot(b)},
		SearchRange: contracts.SearchRange{StartDate: "01/21/2026 7:00:00 AM", EndDate: "02/20/2026 5:00:00 PM"},
		Attempts:    1, LLMGuidance: contracts.NewSlotsGuidance(a)})
	contractstest.Golden(t, "booking_slots_none", contracts.GetApptSlotsResponse{Slots: []contracts.ApptSlot{},
		VoiceSlots: []contracts.VoiceSlot{}, LLMGuidance: contracts.NewNoSlotsGuidance(contracts.TransferNoSlots)})

	plan := contracts.NewBookingPlan([]contracts.ApptSlot{a, b})
	one := 1
	contractstest.Golden(t, "booking_grouped_request", contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 2,
		TimeWindowMinutes: 40, StartDate: "01/21/2026"})
	contractstest.Golden(t, "booking_grouped_ok", contracts.GroupedSlotsResponse{
		Groups: []contracts.SlotGroup{contracts.NewSlotGroup([]contracts.ApptSlot{a, b})}, TotalGroups: 1,
		Slots: []contracts.ApptSlot{a, b}, TotalSlots: 2, NumberOfPatients: 2, TimeWindowMinutes: 40, Tier: 1, TiersSearched: []int{1},
		TierBased: true, BookingMode: contracts.BookingModeConsecutive, FromCache: true, CacheSource: "flat-slots",
		CacheDecision: contracts.CacheDecision{Checked: true, UsedTier: &one, Tiers: map[string]contracts.TierCheck{
			"1": {Found: true, Slots: 2, Age: "12s", Status: "fresh", Checked: true}}},
		CacheInfo:   &contracts.CacheInfo{Source: "flat-slots", Tier: 1},
		LLMGuidance: contracts.NewGroupedGuidance(contracts.BookingModeConsecutive, 2, plan)})
	contractstest.Golden(t, "booking_grouped_individual", contracts.NewGroupedGuidance(contracts.BookingModeIndividual, 2, plan))
	contractstest.Golden(t, "booking_grouped_none", contracts.NewGroupedGuidance(contracts.BookingModeNone, 2, nil))
	contractstest.Golden(t, "booking_grouped_error", contracts.GroupedSlotsResponse{Groups: []contracts.SlotGroup{},
		Slots: []contracts.ApptSlot{}, NumberOfPatients: 2, TimeWindowMinutes: 40, TierBased: true,
		BookingMode: contracts.BookingModeNone, TiersSearched: []int{}, Error: true,
		CacheDecision: contracts.CacheDecision{Checked: true, FallbackReason: "api_error", Tiers: map[string]contracts.TierCheck{}},
		LLMGuidance:   contracts.NewGroupedErrorGuidance(contracts.TransferAPIError)})
}

// Seed §4.6 fields first; pagination after.
func TestQueueStatusGolden(t *testing.T) {
	next, at, lastErr := "2", "2026-01-20T15:35:00.000Z", "Rate limited"
	contractstest.Golden(t, "booking_queue_status", contracts.QueueStatusResponse{
		Total: 3, Pending: 1, Completed: 1, Failed: 1,
		Operations: []contracts.QueueOperation{
			{ID: "op-1705764600000-abc123", Status: contracts.OpPending, Attempts: 3, MaxAttempts: 10,
				CreatedAt: "2026-01-20T15:31:00.000Z", NextRetryAt: &at, LastError: &lastErr, ChildName: "Johnny Smith",
				StartTime: "01/20/2026 10:00 AM", OperationType: contracts.OpSetAppointment},
			{ID: "op-1705764500000-def456", Status: contracts.OpCompleted, Attempts: 1, MaxAttempts: 10,
				CreatedAt: "2026-01-20T15:30:00.000Z", ChildName: "Jane Smith", StartTime: "01/20/2026 10:45 AM",
				OperationType: contracts.OpSetAppointment, CompletedAt: "2026-01-20T15:30:20.000Z",
				Result: &contracts.QueueOpResult{AppointmentGUID: apptGUID, PatientGUID: patGUID}},
		},
		Page: 1, PageSize: 2, TotalPages: 2, NextCursor: &next, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeAll})
}

// A caller without the operator's credentials that names its operation
// (operationId, or its call's sessionId / uui): the same shape, its own
// operations only, counted alone, without names.
func TestQueueStatusLookupGolden(t *testing.T) {
	at, lastErr := "2026-01-20T15:35:00.000Z", "Rate limited"
	op := contracts.QueueOperation{ID: "op-1705764600000-abc123", Status: contracts.OpPending, Attempts: 3, MaxAttempts: 10,
		CreatedAt: "2026-01-20T15:31:00.000Z", NextRetryAt: &at, LastError: &lastErr, ChildName: "Johnny Smith",
		PatientName: "Mary Smith", StartTime: "01/20/2026 10:00 AM", OperationType: contracts.OpSetAppointment}
	contractstest.Golden(t, "booking_queue_status_lookup", contracts.QueueStatusResponse{
		Total: 1, Pending: 1, Operations: []contracts.QueueOperation{op.WithoutNames()},
		Page: 1, PageSize: 50, TotalPages: 1, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeLookup})
	if op.ChildName != "Johnny Smith" {
		t.Fatal("WithoutNames changed its receiver")
	}
}

func TestBookingEventGolden(t *testing.T) {
	contractstest.Golden(t, "booking_event_completed", contracts.BookingCompletedEvent{Event: contracts.EventBookingCompleted,
		OperationID: "op-1705764600000-abc123", OperationType: contracts.OpSetAppointment, AppointmentGUID: apptGUID,
		PatientGUID: patGUID, ChildName: "Johnny Smith", StartTime: "01/20/2026 10:00 AM", Attempts: 3,
		CompletedAt: contracts.JSTime(bt0)})
}

// booking_failed: the completion event's shape with the caller, the
// reason and the practice's next step (new fields only).
func TestBookingFailedEventGolden(t *testing.T) {
	contractstest.Golden(t, "booking_event_failed", contracts.BookingCompletedEvent{Event: contracts.EventBookingFailed,
		OperationID: "op-1705764600000-abc123", OperationType: contracts.OpSetAppointment, PatientGUID: patGUID,
		PatientName: "Mary Smith", ChildName: "Johnny Smith", StartTime: "01/20/2026 10:00 AM", PhoneNumber: "412-555-0100",
		Attempts: 1, CompletedAt: contracts.JSTime(bt0), FailedAt: contracts.JSTime(bt0),
		ErrorType: contracts.BookingErrSlotNotAvailable,
		Reason:    "SLOT_NOT_AVAILABLE: Error: This appointment cannot be scheduled in the specified time slot.",
		NextStep:  contracts.FailedNextStep(contracts.OpSetAppointment, contracts.BookingErrSlotNotAvailable, false)})
}

func TestQueueStatusFailedGolden(t *testing.T) {
	lastErr := "Rate limited"
	contractstest.Golden(t, "booking_queue_status_failed", contracts.QueueStatusResponse{
		Total: 1, Failed: 1,
		Operations: []contracts.QueueOperation{
			{ID: "op-1705764600000-abc123", Status: contracts.OpFailed, Attempts: 10, MaxAttempts: 10,
				CreatedAt: "2026-01-20T15:31:00.000Z", LastError: &lastErr, ChildName: "Johnny Smith",
				StartTime: "01/20/2026 10:00 AM", OperationType: contracts.OpSetAppointment,
				ErrorType: contracts.BookingErrRateLimit, FailedAt: "2026-01-20T16:05:00.000Z",
				NextStep: contracts.FailedNextStep(contracts.OpSetAppointment, contracts.BookingErrRateLimit, false)},
		},
		Page: 1, PageSize: 50, TotalPages: 1, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeAll})
}

// Every failed operation gets a next step for the practice; one whose
// outcome is unknown says to look in Cloud9 before calling back.
func TestFailedNextStep(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range []struct {
		op, errType string
		uncertain   bool
		want        string
	}{
		{contracts.OpSetAppointment, contracts.BookingErrSlotNotAvailable, false, "book another time"},
		{contracts.OpSetAppointment, contracts.BookingErrDuplicateSlot, false, "another child"},
		{contracts.OpSetAppointment, contracts.BookingErrPatientNotFound, false, "Check the patient in Cloud9"},
		{contracts.OpSetAppointment, contracts.BookingErrRateLimit, false, "Call the family back to rebook"},
		{contracts.OpSetAppointment, contracts.BookingErrCloud9, false, "Call the family back to rebook"},
		{contracts.OpSetAppointment, contracts.BookingErrTimeout, true, "Check the family's appointments in Cloud9 first"},
		{contracts.OpSetAppointment, "", true, "Check the family's appointments in Cloud9 first"},
		{contracts.OpSetPatient, contracts.BookingErrCloud9, false, "patient record could not be created"},
		{contracts.OpSetPatient, contracts.BookingErrTimeout, true, "Look the family up in Cloud9 first"},
	} {
		got := contracts.FailedNextStep(c.op, c.errType, c.uncertain)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %s uncertain=%v: %q does not say %q", c.op, c.errType, c.uncertain, got, c.want)
		}
		seen[got] = true
	}
	if len(seen) != 7 {
		t.Errorf("%d distinct next steps, want 7", len(seen))
	}
}

// children[] results carry the original's text (en-US toLocaleDateString /
// toLocaleTimeString), and the voice_response reads that same text.
func TestVoiceStartTime(t *testing.T) {
	for in, want := range map[string]contracts.SpokenSlot{
		"12/01/2026 9:30 AM":    {Day: "Tuesday", Date: "12/1/2026", Time: "9:30:00 AM"},
		"1/5/2026 8:30:00 AM":   {Day: "Monday", Date: "1/5/2026", Time: "8:30:00 AM"},
		"2026-01-20T14:15:00":   {Day: "Tuesday", Date: "1/20/2026", Time: "2:15:00 PM"},
		"12/1/2026 12:05:00 PM": {Day: "Tuesday", Date: "12/1/2026", Time: "12:05:00 PM"},
		"next tuesday at 10ish": {Date: "next tuesday at 10ish"},
	} {
		if got := contracts.VoiceStartTime(in); got != want {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
	sp := contracts.VoiceStartTime("12/01/2026 9:30 AM")
	r := contracts.NewApptBatch([]contracts.ApptBatchChild{{ChildName: "Johnny Smith", Success: true,
		StartTime: "12/01/2026 9:30 AM", Day: sp.Day, Date: sp.Date, Time: sp.Time}}, bt0)
	if want := "All appointments are confirmed! Johnny on Tuesday 12/1/2026 at 9:30:00 AM"; r.LLMGuidance.VoiceResponse != want {
		t.Errorf("voice_response %q, want %q", r.LLMGuidance.VoiceResponse, want)
	}
	// The example: a single createAppt says the slot the same way.
	if got, want := contracts.BookedVoice("Tom Lee", "12/04/2026 11:45 AM"),
		"Your appointment is confirmed! Tom, Friday 12/4/2026 at 11:45:00 AM."; got != want {
		t.Errorf("booked voice %q, want %q", got, want)
	}
	if got, want := contracts.SlotOfferVoice("12/4/2026 11:45:00 AM"), "I have 11:45:00 AM available on Friday. Would that work?"; got != want {
		t.Errorf("slot offer %q, want %q", got, want)
	}
}

func TestSpeakStartTime(t *testing.T) {
	for in, want := range map[string]string{
		"01/20/2026 10:00 AM":     "Tuesday 01/20/2026 at 10:00 AM",
		"1/5/2026 8:30:00 AM":     "Monday 01/05/2026 at 8:30 AM",
		"2026-01-20T14:15:00":     "Tuesday 01/20/2026 at 2:15 PM",
		"next tuesday at 10ish":   "next tuesday at 10ish",
		"01/20/2026 13:00":        "Tuesday 01/20/2026 at 1:00 PM",
		"  01/20/2026 10:00 AM  ": "Tuesday 01/20/2026 at 10:00 AM",
	} {
		if got := contracts.SpeakStartTime(in).String(); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	if got := contracts.BookedVoice("", "01/20/2026 10:00 AM"); got != "Your appointment is confirmed! Tuesday 1/20/2026 at 10:00:00 AM." {
		t.Errorf("no child name: %q", got)
	}
}
