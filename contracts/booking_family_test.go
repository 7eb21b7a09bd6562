package contracts_test

import (
	"reflect"
	"testing"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

// The family's requests decode with the original's field names (minutes
// as a number or a string) and re-encode with the same names; the answer
// types keep the original's keys (null patient, `_cacheRevalidated`,
// count only in the list answer of getLocation).
func TestFamilyRequestsGolden(t *testing.T) {
	var cancel contracts.CancelApptRequest
	if err := contracts.DecodeJSON([]byte(`{"appointmentGUID":"`+apptGUID+`","patientGUID":"`+patGUID+`",
		"startTime":"1/20/2026 10:00:00 AM","scheduleViewGUID":"`+viewGUID+`","scheduleColumnGUID":"`+colGUID+`",
		"appointmentTypeGUID":"`+typeGUID+`","minutes":"45","sessionId":"s-1"}`), &cancel); err != nil {
		t.Fatal(err)
	}
	if cancel.Minutes != 45 {
		t.Fatalf("minutes as a string: got %d", cancel.Minutes)
	}
	contractstest.Golden(t, "booking_family_cancel_request", cancel)

	var ins contracts.EditInsuranceRequest
	if err := contracts.DecodeJSON([]byte(`{"patientGUID":"`+patGUID+`","insuranceProvider":"Aetna","insuranceGroupId":"G123","insuranceMemberId":"456"}`), &ins); err != nil {
		t.Fatal(err)
	}
	contractstest.Golden(t, "booking_family_insurance_request", ins)

	var filter contracts.GetPatientByFilterRequest
	if err := contracts.DecodeJSON([]byte(`{"phoneNumber":{}}`), &filter); err != nil || filter.PhoneNumber != "" {
		t.Fatalf("a phoneNumber of a wrong type is dropped (a number is its text: booking_lenient_test.go): %+v %v", filter, err)
	}
}

func TestFamilyAnswersGolden(t *testing.T) {
	n := 1
	contractstest.Golden(t, "booking_family_patient_unknown", contracts.PatientResponse{})
	contractstest.Golden(t, "booking_family_cancel", contracts.CancelResponse{Success: true, Message: "Appointment canceled",
		CacheRevalidated: true, SlotReleased: true})
	contractstest.Golden(t, "booking_family_locations", contracts.LocationResponse{Success: true,
		Location: contracts.Record{"LocationGUID": viewGUID}, Locations: []contracts.Record{{"LocationGUID": viewGUID}}, Count: &n})
	contractstest.Golden(t, "booking_family_location_one", contracts.LocationResponse{Success: true,
		Location: contracts.Record{"LocationGUID": viewGUID}, MatchType: "guid"})
	e := "Too many requests"
	op := contracts.QueueOperation{ID: "op-1768922400000-abc123", Status: contracts.OpCompleted, Attempts: 2, MaxAttempts: 10,
		CreatedAt: contracts.JSTime(bt0), LastError: &e, OperationType: contracts.OpSetAppointment,
		Result: &contracts.QueueOpResult{AppointmentGUID: apptGUID}}
	contractstest.Golden(t, "booking_family_operation_completed", contracts.OperationStatusResponse{Success: true, Found: true,
		OperationID: op.ID, Status: op.Status, OperationType: op.OperationType, Attempts: 2, MaxAttempts: 10, LastError: &e,
		Result: op.Result, Operation: &op, Message: "operation completed",
		LLMGuidance: &contracts.OperationGuidance{CurrentState: "OPERATION_COMPLETED", ActionRequired: "confirm_to_caller", VoiceResponse: "Good news: that's all set."}})
	contractstest.Golden(t, "booking_family_slot_released", contracts.SlotChangeEvent{Event: contracts.EventSlotReleased,
		AppointmentGUID: apptGUID, StartTime: "1/20/2026 10:00:00 AM", ScheduleViewGUID: viewGUID, ScheduleColumnGUID: colGUID,
		AppointmentTypeGUID: typeGUID, Minutes: 45, At: contracts.JSTime(bt0)})
}

// The family's spoken texts follow the original's style (issue: review
// item 5): no apology, no talk of systems or problems — none says a phrase
// of the original's base or transfer lists — and a transfer carries the
// original's transfer sentence and exception-path prohibited list.
func TestFamilyGuidanceInTheOriginalsStyle(t *testing.T) {
	all := append(append(contracts.BaseProhibited(), contracts.TransferProhibited()...), contracts.SlotsTransferProhibited()...)
	for name, g := range map[string]*contracts.FamilyGuidance{
		"invalid": contracts.NewFamilyInvalidGuidance("patientGUID"), "not found": contracts.NewFamilyNotFoundGuidance("patient"),
		"busy": contracts.NewFamilyBusyGuidance(), "failed": contracts.NewFamilyFailedGuidance(),
	} {
		if said := prohibitedSaid(map[string]any{"voice_response": g.VoiceResponse}, all); len(said) > 0 {
			t.Errorf("%s: %v", name, said)
		}
		if len(g.ProhibitedResponses) == 0 {
			t.Errorf("%s: no prohibited_responses", name)
		}
	}
	f := contracts.NewFamilyFailedGuidance()
	if f.ActionRequired != contracts.ActionTransferToAgent || f.VoiceResponse != contracts.TransferNowVoice ||
		!reflect.DeepEqual(f.ProhibitedResponses, contracts.TransferProhibited()) {
		t.Errorf("the failure's transfer is not the original's: %+v", f)
	}
}
