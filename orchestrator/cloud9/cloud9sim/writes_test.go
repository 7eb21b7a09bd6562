package cloud9sim_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

var (
	upperGUID = regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$`)
	lowerGUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// patientParams is a valid SetPatient without the names in drop.
func patientParams(drop ...string) []string {
	all := []string{"patientFirstName", "Ann", "patientLastName", "Lee",
		"providerGUID", cloud9sim.DefaultOrthodontistGUID, "locationGUID", cloud9sim.DefaultLocationGUID,
		"VendorUserName", "flowgate", "birthdayDateTime", "01/15/1985", "phoneNumber", "412-555-0100",
		"email", "ann@example.com", "gender", "F"}
	var out []string
	for i := 0; i < len(all); i += 2 {
		if !contains(drop, all[i]) {
			out = append(out, all[i], all[i+1])
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// with replaces (or adds) one parameter.
func with(params []string, name, value string) []string {
	out := append([]string(nil), params...)
	for i := 0; i < len(out); i += 2 {
		if out[i] == name {
			out[i+1] = value
			return out
		}
	}
	return append(out, name, value)
}

func TestSetPatient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.call(t, "SetPatient", patientParams()...).result(t)
	guid, ok := strings.CutPrefix(res, "Patient Added: ")
	require.True(t, ok, res)
	require.Regexp(t, upperGUID, guid)

	ps := b.sim.Patients()
	require.Len(t, ps, 1)
	require.Equal(t, guid, ps[0].GUID)
	require.Equal(t, "Ann", ps[0].FirstName)
	require.Equal(t, time.Date(1985, 1, 15, 0, 0, 0, 0, est), ps[0].BirthDate)
	require.Equal(t, "flowgate", ps[0].VendorUserName)

	info := b.call(t, "GetPatientInformation", "patguid", strings.ToLower(guid)).Records
	require.Equal(t, []map[string]string{{
		"PatientGUID": guid, "PatientFirstName": "Ann", "PatientLastName": "Lee", "PatientFullName": "Ann Lee",
		"PatientBirthDate": "1/15/1985 12:00:00 AM", "PatientEmail": "ann@example.com", "PatientPhone": "412-555-0100",
		"Location": "CDH Allegheny 202", "LocationGUID": cloud9sim.DefaultLocationGUID,
		"Orthodontist": "Dr. Dana Sim", "OrthodontistGUID": cloud9sim.DefaultOrthodontistGUID, "PatID": "10001",
	}}, info)
}

func TestSetPatientErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, name := range []string{"patientFirstName", "patientLastName", "providerGUID", "locationGUID", "VendorUserName"} {
		b.call(t, "SetPatient", patientParams(name)...).
			requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
		b.call(t, "SetPatient", with(patientParams(), name, "  ")...).
			requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
	}
	b.call(t, "SetPatient", with(patientParams(), "providerGUID", "dr-who")...).
		requireError(t, cloud9sim.CodeInvalidGUID, "Invalid GUID format for parameter: 'providerGUID'")
	b.call(t, "SetPatient", with(patientParams(), "birthdayDateTime", "13/45/1985")...).
		requireError(t, cloud9sim.CodeInvalidValue, "Invalid value for parameter: 'birthdayDateTime'.")
	b.call(t, "SetPatient", with(patientParams(), "VendorUserName", strings.Repeat("v", 26))...).
		requireError(t, cloud9sim.CodeInvalidValue, "Invalid value for parameter: 'VendorUserName'.")
	a := b.call(t, "SetPatient", with(patientParams(), "locationGUID", "00000000-0000-0000-0000-000000000001")...)
	require.Equal(t, "16", a.Code)
	require.Contains(t, a.Message, "Procedure validation failure")
	require.Empty(t, b.sim.Patients())
}

func TestSetAppointment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	g := b.bookOK(t, strings.ToLower(p), "11/23/2026 8:45:00 AM", cloud9sim.Chair8GUID)
	require.Regexp(t, lowerGUID, g)

	as := b.sim.Appointments()
	require.Len(t, as, 1)
	require.Equal(t, cloud9sim.Appointment{
		GUID: g, PatientGUID: p, ScheduleViewGUID: cloud9sim.DefaultScheduleViewGUID,
		ScheduleColumnGUID: cloud9sim.Chair8GUID, AppointmentTypeGUID: cloud9sim.DefaultAppointmentTypeGUID,
		Start: time.Date(2026, 11, 23, 8, 45, 0, 0, est), Minutes: 45, VendorUserName: "flowgate",
		Status: cloud9sim.StatusScheduled, Created: t0,
	}, as[0])

	list := b.call(t, "GetAppointmentListByPatient", "patGUID", p).Records
	require.Len(t, list, 1)
	require.Equal(t, g, list[0]["AppointmentGUID"])
	require.Equal(t, "11/23/2026 8:45:00 AM", list[0]["AppointmentDateTime"])
	require.Equal(t, "Scheduled", list[0]["AppointmentStatusDescription"])
	require.Equal(t, "Unconfirmed", list[0]["AppointmentConfirmation"])
	require.Equal(t, cloud9sim.Chair8GUID, list[0]["ScheduleColumnGUID"])
	require.Equal(t, cloud9sim.DefaultScheduleViewGUID, list[0]["ScheduleViewGUID"])
	require.Equal(t, cloud9sim.DefaultAppointmentTypeGUID, list[0]["AppointmentTypeGUID"])
	require.Equal(t, "45", list[0]["Minutes"])
}

func TestSetAppointmentStartTimeForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	for i, form := range []string{
		"11/24/2026 8:00:00 AM",  // as GetOnlineReservations writes it
		"11/24/2026 08:45 AM",    // padded, no seconds (the seed's form)
		"11/24/2026 9:30am",      // lower case, no space
		"2026-11-24T10:15:00",    // ISO
		"11/24/2026 13:15",       // 24-hour
		"11/24/2026 12:30:00 PM", // noon
	} {
		b.bookOK(t, p, form, cloud9sim.DefaultChairs()[i%4].GUID)
	}
	var starts []string
	for _, a := range b.sim.Appointments() {
		starts = append(starts, a.Start.Format("15:04"))
	}
	require.Equal(t, []string{"08:00", "08:45", "09:30", "10:15", "13:15", "12:30"}, starts)
}

func TestSetAppointmentErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	valid := []string{"PatientGUID", p, "StartTime", "11/24/2026 8:00:00 AM",
		"ScheduleViewGUID", cloud9sim.DefaultScheduleViewGUID, "ScheduleColumnGUID", cloud9sim.Chair8GUID,
		"AppointmentTypeGUID", cloud9sim.DefaultAppointmentTypeGUID, "Minutes", "45", "VendorUserName", "flowgate"}
	const other = "00000000-0000-0000-0000-0000000000aa"

	for _, name := range []string{"PatientGUID", "StartTime", "ScheduleViewGUID", "ScheduleColumnGUID", "AppointmentTypeGUID", "Minutes", "VendorUserName"} {
		var params []string
		for i := 0; i < len(valid); i += 2 {
			if valid[i] != name {
				params = append(params, valid[i], valid[i+1])
			}
		}
		b.call(t, "SetAppointment", params...).requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
	}

	errorCases := []struct {
		name, value string
		code        int
		msg         string
	}{
		{"PatientGUID", "not-a-guid", 5, "Invalid GUID format for parameter: 'PatientGUID'"},
		{"ScheduleColumnGUID", "chair 8", 5, "Invalid GUID format for parameter: 'ScheduleColumnGUID'"},
		{"StartTime", "tomorrow at nine", 3, "Invalid value for parameter: 'StartTime'."},
		{"StartTime", "11/24/2026 13:00 PM", 3, "Invalid value for parameter: 'StartTime'."},
		{"Minutes", "forty-five", 3, "Invalid value for parameter: 'Minutes'."},
		{"VendorUserName", strings.Repeat("v", 26), 3, "Invalid value for parameter: 'VendorUserName'."},
		{"Note", strings.Repeat("n", 501), 3, "Invalid value for parameter: 'Note'."},
	}
	for _, c := range errorCases {
		b.call(t, "SetAppointment", with(valid, c.name, c.value)...).requireError(t, c.code, c.msg)
	}

	resultCases := []struct {
		name, value, result string
	}{
		{"Minutes", "0", cloud9sim.ResultMinutes},
		{"Minutes", "-45", "Error: Minutes must be greater than 0."},
		{"PatientGUID", other, "Error: Patient GUID specified does not exist."},
		{"AppointmentTypeGUID", other, "Error: Appointment Type GUID specified does not exist or does not allow online scheduling."},
		{"AppointmentTypeGUID", cloud9sim.AdjustmentTypeGUID, cloud9sim.ResultNoApptType}, // not online
		{"AppointmentTypeGUID", cloud9sim.RetiredTypeGUID, cloud9sim.ResultNoApptType},    // deleted
		{"AppointmentTypeGUID", cloud9sim.DefaultAppointmentClass, cloud9sim.ResultNoApptType},
		{"ScheduleViewGUID", other, "Error: Schedule View/Column GUID specified does not exist."},
		{"ScheduleColumnGUID", other, cloud9sim.ResultNoViewColumn},
		{"StartTime", "11/23/2026 6:59:00 AM", "Error: Appointments cannot be scheduled in the past."},
		{"StartTime", "11/20/2026 8:00:00 AM", cloud9sim.ResultPast},
		{"StartTime", "11/29/2026 8:00:00 AM", "Error: This appointment cannot be scheduled in the specified time slot."}, // Sunday
		{"StartTime", "11/24/2026 7:30:00 AM", cloud9sim.ResultSlotTaken},                                                 // before opening
		{"StartTime", "11/24/2026 4:30:00 PM", cloud9sim.ResultSlotTaken},                                                 // runs past 17:00
		{"StartTime", "11/28/2026 12:00:00 PM", cloud9sim.ResultSlotTaken},                                                // Saturday closes 12:30
		{"StartTime", "2/22/2027 8:00:00 AM", cloud9sim.ResultSlotTaken},                                                  // beyond 90 days
		{"Minutes", "600", cloud9sim.ResultSlotTaken},
	}
	for _, c := range resultCases {
		require.Equal(t, c.result, b.call(t, "SetAppointment", with(valid, c.name, c.value)...).result(t), "%s=%s", c.name, c.value)
	}
	require.Empty(t, b.sim.Appointments())

	// The last day of the horizon and a Saturday morning are bookable.
	require.Contains(t, b.call(t, "SetAppointment", with(valid, "StartTime", "2/20/2027 8:00:00 AM")...).result(t), "Appointment GUID Added: ")
	require.Contains(t, b.call(t, "SetAppointment", with(valid, "StartTime", "11/28/2026 11:45:00 AM")...).result(t), "Appointment GUID Added: ")
}

func TestDoubleBookingRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1 := b.createPatient(t, "Ann", "Lee")
	p2 := b.createPatient(t, "Bob", "Ray")
	b.bookOK(t, p1, "11/24/2026 9:30:00 AM", cloud9sim.Chair8GUID)

	require.Equal(t, "Error: This appointment cannot be scheduled in the specified time slot.",
		b.book(t, p2, "11/24/2026 9:30:00 AM", cloud9sim.Chair8GUID).result(t))
	// An overlapping start off the grid is refused too; the chair next to
	// it and the slot after are free.
	require.Equal(t, cloud9sim.ResultSlotTaken, b.book(t, p2, "11/24/2026 9:00 AM", cloud9sim.Chair8GUID).result(t))
	require.Equal(t, cloud9sim.ResultSlotTaken, b.book(t, p2, "11/24/2026 10:00 AM", cloud9sim.Chair8GUID).result(t))
	b.bookOK(t, p2, "11/24/2026 9:30:00 AM", cloud9sim.Chair9GUID)
	b.bookOK(t, p2, "11/24/2026 10:15:00 AM", cloud9sim.Chair8GUID)
	require.Len(t, b.sim.Appointments(), 3)
}

func TestBookCancelConfirmAndReservations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	const start = "11/25/2026 2:00:00 PM"
	require.True(t, hasSlot(b.slots(t, "11/25/2026", "11/25/2026"), start, cloud9sim.Chair8GUID))

	g := b.bookOK(t, p, start, cloud9sim.Chair8GUID)
	day := b.slots(t, "11/25/2026", "11/25/2026")
	require.False(t, hasSlot(day, start, cloud9sim.Chair8GUID), "a booked slot leaves GetOnlineReservations")
	require.True(t, hasSlot(day, start, cloud9sim.Chair9GUID), "the other chairs keep it")
	require.Len(t, day, 4*12-1)

	require.Equal(t, "Success", b.call(t, "SetAppointmentStatusConfirmed", "apptGUID", g).result(t))
	rec := b.call(t, "GetAppointmentListByPatient", "patGUID", p).Records[0]
	require.Equal(t, "Confirmed", rec["AppointmentStatusDescription"])
	require.Equal(t, "Confirmed", rec["AppointmentConfirmation"])

	require.Equal(t, "Success", b.call(t, "SetAppointmentStatusCanceled", "apptGUID", strings.ToUpper(g), "VendorUserName", "flowgate").result(t))
	require.True(t, hasSlot(b.slots(t, "11/25/2026", "11/25/2026"), start, cloud9sim.Chair8GUID), "cancel frees the slot")
	rec = b.call(t, "GetAppointmentListByPatient", "patGUID", p).Records[0]
	require.Equal(t, "Canceled", rec["AppointmentStatusDescription"])
	require.Equal(t, cloud9sim.StatusCanceled, b.sim.Appointments()[0].Status)

	// Canceling again and confirming a canceled one change nothing.
	require.Equal(t, "Success", b.call(t, "SetAppointmentStatusCanceled", "apptGUID", g).result(t))
	require.Equal(t, "Success", b.call(t, "SetAppointmentStatusConfirmed", "apptGUID", g).result(t))
	require.Equal(t, cloud9sim.StatusCanceled, b.sim.Appointments()[0].Status)

	// The freed slot books again.
	b.bookOK(t, p, start, cloud9sim.Chair8GUID)

	const unknown = "00000000-0000-0000-0000-0000000000bb"
	require.Equal(t, "Error: Appointment GUID specified does not exist.", b.call(t, "SetAppointmentStatusCanceled", "apptGUID", unknown).result(t))
	require.Equal(t, cloud9sim.ResultNoAppointment, b.call(t, "SetAppointmentStatusConfirmed", "apptGUID", unknown).result(t))
	b.call(t, "SetAppointmentStatusCanceled").requireError(t, 2, "A required parameter was not specified.")
	b.call(t, "SetAppointmentStatusConfirmed", "apptGUID", "x").requireError(t, 5, "Invalid GUID format for parameter: 'apptGUID'")
}

func TestSetPatientComment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	res := b.call(t, "SetPatientComment", "patGUID", p, "patComment", "Child: Tommy").result(t)
	g, ok := strings.CutPrefix(res, "Patient Comment GUID Added: ")
	require.True(t, ok, res)
	require.Regexp(t, lowerGUID, g)

	b.clock.Advance(time.Minute)
	require.Equal(t, "Patient Comment GUID Updated: "+g,
		b.call(t, "SetPatientComment", "patGUID", p, "patComment", "Child: Tommy (edited)", "pcGUID", g, "VendorUserName", "flowgate").result(t))
	cs := b.sim.Comments()
	require.Len(t, cs, 1)
	require.Equal(t, cloud9sim.Comment{GUID: g, PatientGUID: p, Text: "Child: Tommy (edited)", VendorUserName: "flowgate",
		Created: t0, Updated: t0.Add(time.Minute)}, cs[0])

	const unknown = "00000000-0000-0000-0000-0000000000cc"
	require.Equal(t, cloud9sim.ResultNoPatient, b.call(t, "SetPatientComment", "patGUID", unknown, "patComment", "x").result(t))
	require.Equal(t, cloud9sim.ResultNoComment, b.call(t, "SetPatientComment", "patGUID", p, "patComment", "x", "pcGUID", unknown).result(t))
	b.call(t, "SetPatientComment", "patGUID", p).requireError(t, 2, "A required parameter was not specified.")
	b.call(t, "SetPatientComment", "patGUID", p, "patComment", strings.Repeat("c", 2049)).
		requireError(t, 3, "Invalid value for parameter: 'patComment'.")
	require.Len(t, b.sim.Comments(), 1)
}

func TestSameSeedSameGUIDs(t *testing.T) {
	t.Parallel()
	var got [2][]string
	for i := range got {
		b := setup(t, func(c *cloud9sim.Config) { c.Seed = 42 })
		p := b.createPatient(t, "Ann", "Lee")
		got[i] = []string{p, b.bookOK(t, p, "11/24/2026 8:00 AM", cloud9sim.Chair8GUID)}
	}
	require.Equal(t, got[0], got[1])
	other := setup(t, func(c *cloud9sim.Config) { c.Seed = 43 })
	require.NotEqual(t, got[0][0], other.createPatient(t, "Ann", "Lee"))
}

func TestReset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	b.bookOK(t, p, "11/24/2026 8:00 AM", cloud9sim.Chair8GUID)
	b.call(t, "SetPatientComment", "patGUID", p, "patComment", "x")
	b.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1})
	b.sim.Reset()
	require.Empty(t, b.sim.Patients())
	require.Empty(t, b.sim.Appointments())
	require.Empty(t, b.sim.Comments())
	require.Zero(t, b.sim.Calls("SetPatient"))
	require.Equal(t, cloud9sim.Faults{}, b.sim.Faults())
	require.Equal(t, p, b.createPatient(t, "Ann", "Lee"), "the GUID source is reseeded")
}
