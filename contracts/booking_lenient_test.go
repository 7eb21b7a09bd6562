package contracts_test

import (
	"reflect"
	"testing"

	"github.com/flowgate/flowgate/contracts"
)

// The IVA's text fields may come as numbers: the original used them as
// their text (integers without exponent or decimals).
func TestNumberText(t *testing.T) {
	for raw, want := range map[string]string{
		"12345": "12345", "4125550100": "4125550100", "4.1255501e9": "4125550100", "4125550100.0": "4125550100",
		"-7": "-7", "1.5": "1.5", "98765E0": "98765", "12345678901234567890123": "12345678901234567890123",
		"1e999999999": "1e999999999",
	} {
		got, ok := contracts.NumberText([]byte(raw))
		if !ok || got != want {
			t.Errorf("%s: %q %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`"12"`, `true`, `{}`, `[1]`, `null`, ``} {
		if _, ok := contracts.NumberText([]byte(raw)); ok {
			t.Errorf("%s is not a number", raw)
		}
	}
}

// What the reviewer sent (dead air before: a 400 envelope or a refusal):
// numbers in text fields are their text; optional fields of a wrong type
// are dropped for their defaults and named in Ignored; required fields
// stay strict.
func TestLenientRequests(t *testing.T) {
	var slots contracts.GetApptSlotsRequest
	if err := contracts.DecodeJSON([]byte(`{"sessionId":12345,"uui":98765,"startDate":20270101,"scheduleViewGUIDs":7}`), &slots); err != nil {
		t.Fatal(err)
	}
	want := contracts.GetApptSlotsRequest{SessionID: "12345", UUI: "98765", Ignored: []string{"scheduleViewGUIDs", "startDate"}}
	if !reflect.DeepEqual(slots, want) {
		t.Errorf("getApptSlots: %+v, want %+v", slots, want)
	}

	var grouped contracts.GetGroupedApptSlotsRequest
	if err := contracts.DecodeJSON([]byte(`{"uui":98765,"numberOfPatients":"two","timeWindowMinutes":{},"startDate":20270101,"sessionId":"s-1"}`), &grouped); err != nil {
		t.Fatal(err)
	}
	wantG := contracts.GetGroupedApptSlotsRequest{UUI: "98765", SessionID: "s-1",
		Ignored: []string{"numberOfPatients", "startDate", "timeWindowMinutes"}}
	if !reflect.DeepEqual(grouped, wantG) {
		t.Errorf("getGroupedApptSlots: %+v, want %+v", grouped, wantG)
	}
	grouped = contracts.GetGroupedApptSlotsRequest{}
	if err := contracts.DecodeJSON([]byte(`{"numberOfPatients":"3","timeWindowMinutes":30}`), &grouped); err != nil ||
		grouped.NumberOfPatients != 3 || grouped.TimeWindowMinutes != 30 || grouped.Ignored != nil {
		t.Errorf("usable values are kept: %+v %v", grouped, err)
	}
	grouped = contracts.GetGroupedApptSlotsRequest{}
	if err := contracts.DecodeJSON([]byte(`[1,2]`), &grouped); err != nil || grouped.NumberOfPatients != 0 ||
		!reflect.DeepEqual(grouped.Ignored, []string{"(body)"}) {
		t.Errorf("a body that is not an object is every default: %+v %v", grouped, err)
	}

	var pat contracts.CreatePatientRequest
	if err := contracts.DecodeJSON([]byte(`{"patientFirstName":"Ann","patientLastName":"Lee","phoneNumber":4125550100,`+
		`"uui":98765,"msgid":7,"gender":1,"isChild":"yes"}`), &pat); err != nil {
		t.Fatal(err)
	}
	if pat.PhoneNumber != "4125550100" || pat.UUI != "98765" || pat.MsgID != "7" || pat.Gender != "" || bool(pat.IsChild) ||
		!reflect.DeepEqual(pat.Ignored, []string{"gender", "isChild"}) {
		t.Errorf("createPatient: %+v", pat)
	}
	pat = contracts.CreatePatientRequest{}
	if err := contracts.DecodeJSON([]byte(`{"patientFirstName":12,"patientLastName":"Lee"}`), &pat); contracts.ErrorCode(err) != contracts.CodeInvalid {
		t.Errorf("a required field keeps the strict decoding: %v", err)
	}

	var appt contracts.CreateApptRequest
	if err := contracts.DecodeJSON([]byte(`{"patientGUID":"g","uui":98765,"sessionId":1.2345e4,"minutes":"45"}`), &appt); err != nil {
		t.Fatal(err)
	}
	if appt.UUI != "98765" || appt.SessionID != "12345" || appt.Minutes != 45 {
		t.Errorf("createAppt: %+v", appt)
	}
	appt = contracts.CreateApptRequest{}
	if err := contracts.DecodeJSON([]byte(`{"patientGUID":12345}`), &appt); contracts.ErrorCode(err) != contracts.CodeInvalid {
		t.Errorf("createAppt patientGUID stays strict: %v", err)
	}

	var consult contracts.BookConsultationRequest
	if err := contracts.DecodeJSON([]byte(`{"parentPhone":4125550100,"insuranceMemberId":456,"uui":1,"children":[]}`), &consult); err != nil {
		t.Fatal(err)
	}
	if consult.ParentPhone != "4125550100" || consult.InsuranceMemberID != "456" || consult.UUI != "1" {
		t.Errorf("bookConsultation: %+v", consult)
	}

	var filter contracts.GetPatientByFilterRequest
	if err := contracts.DecodeJSON([]byte(`{"phoneNumber":4125550100}`), &filter); err != nil || filter.PhoneNumber != "4125550100" {
		t.Errorf("getPatientByFilter: %+v %v", filter, err)
	}
}
