package booking

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

// The patient step's identity: the call, the person; braces never reach
// the key (they would break the marks' Cluster hash tag).
func TestPatientKey(t *testing.T) {
	child := PatientTask{FirstName: "Tom", LastName: "Lee", BirthDate: "1/5/2015", IsChild: true}
	require.Equal(t, "consult-patient|call-1|child|tom|lee|01/05/2015", patientKey("Call-1", child))
	child.BirthDate = "2015-01-05"
	require.Equal(t, "consult-patient|call-1|child|tom|lee|01/05/2015", patientKey("call-1", child), "same date, other spelling")
	parent := PatientTask{FirstName: "Ann", LastName: "Lee", Phone: "(412) 555-0100"}
	require.Equal(t, "consult-patient|call-1|parent|ann|lee|4125550100", patientKey("call-1", parent))
	require.NotContains(t, patientKey("{x}", parent), "{")
}

// After an uncertain SetPatient only a patient with the same names, birth
// date and phone (when both sides have them) is taken as the one created.
func TestPatientMatches(t *testing.T) {
	p := ConsultPatient{PatientTask: PatientTask{FirstName: "Tom", LastName: "Lee", BirthDate: "01/05/2015", Phone: "412-555-0100"}}
	for _, tc := range []struct {
		m    PatientMatch
		want bool
	}{
		{PatientMatch{FirstName: "TOM", LastName: "lee", BirthDate: "1/5/2015 12:00:00 AM", Phone: "+1 412 555 0100"}, true},
		{PatientMatch{FirstName: "Tom", LastName: "Lee"}, true}, // Cloud9 gave neither: the name decides
		{PatientMatch{FirstName: "Tommy", LastName: "Lee", BirthDate: "1/5/2015"}, false},
		{PatientMatch{FirstName: "Tom", LastName: "Lee", BirthDate: "1/6/2015"}, false},
		{PatientMatch{FirstName: "Tom", LastName: "Lee", Phone: "4125550199"}, false},
	} {
		require.Equal(t, tc.want, p.matches(tc.m), "%+v", tc.m)
	}
}

// The slot check names the GUID field no offered slot has; a time no
// longer offered (taken since) is not bad input.
func TestUnknownGUID(t *testing.T) {
	const view, col, typ = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "11111111-2222-3333-4444-555555555555", "f6c20c35-9abb-47c2-981a-342996016705"
	const other = "99999999-9999-4999-8999-999999999999"
	list := []contracts.ApptSlot{{StartTime: "1/20/2026 10:00:00 AM", ScheduleViewGUID: view, ScheduleColumnGUID: col, AppointmentTypeGUID: typ}}
	b := booking{Appointment: Appointment{StartTime: "01/20/2026 10:00 AM", ScheduleViewGUID: strings.ToUpper(view),
		ScheduleColumnGUID: col, AppointmentTypeGUID: typ}}
	require.Empty(t, unknownGUID(b, list))
	taken := b
	taken.StartTime = "01/20/2026 11:00 AM"
	require.Empty(t, unknownGUID(taken, list))
	for field, set := range map[string]func(*booking){
		"scheduleViewGUID":    func(x *booking) { x.ScheduleViewGUID = other },
		"scheduleColumnGUID":  func(x *booking) { x.ScheduleColumnGUID = other },
		"appointmentTypeGUID": func(x *booking) { x.AppointmentTypeGUID = other },
	} {
		x := b
		set(&x)
		require.Equal(t, field, unknownGUID(x, list))
	}
	require.Empty(t, unknownGUID(b, nil), "nothing offered: fail open")
}
