package cloud9sim_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// wireTime is the unpadded form Cloud9 writes.
var wireTime = regexp.MustCompile(`^([1-9]|1[0-2])/([1-9]|[12][0-9]|3[01])/20[0-9]{2} ([1-9]|1[0-2]):[0-5][0-9]:00 (AM|PM)$`)

func parseWire(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.ParseInLocation("1/2/2006 3:04:05 PM", s, est)
	require.NoError(t, err)
	return tm
}

func TestTemplateNinetyDays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Advance(3 * time.Hour) // 10:00 AM on Monday: the first three slots are past

	records := b.slots(t, "11/1/2026", "5/1/2027") // 26 weeks, wider than the horizon
	// Expected: days 0..89 from Monday 23 November, 4 chairs, 12 slots on
	// a weekday and 6 on a Saturday, minus today's 8:00, 8:45 and 9:30.
	want := 0
	for d := 0; d < 90; d++ {
		switch time.Date(2026, 11, 23+d, 0, 0, 0, 0, est).Weekday() {
		case time.Sunday:
		case time.Saturday:
			want += 4 * 6
		default:
			want += 4 * 12
		}
	}
	want -= 4 * 3
	require.Equal(t, want, len(records))
	require.Greater(t, len(records), 3000)

	now := b.sim.Now()
	last := time.Date(2027, 2, 21, 0, 0, 0, 0, est) // day 90
	for _, r := range records {
		require.Regexp(t, wireTime, r["StartTime"])
		start := parseWire(t, r["StartTime"])
		require.False(t, start.Before(now), "slot %s is in the past", r["StartTime"])
		require.True(t, start.Before(last), "slot %s is beyond 90 days", r["StartTime"])
		require.NotEqual(t, time.Sunday, start.Weekday(), "slot %s is on a Sunday", r["StartTime"])
		require.Equal(t, start.Add(45*time.Minute), parseWire(t, r["EndTime"]))
		require.Len(t, r, 13)
	}
	require.Equal(t, map[string]string{
		"StartTime": "11/23/2026 10:15:00 AM", "EndTime": "11/23/2026 11:00:00 AM",
		"ScheduleViewGUID": cloud9sim.DefaultScheduleViewGUID, "ScheduleViewDescription": "Allegheny Ortho",
		"ScheduleColumnGUID": cloud9sim.Chair8GUID, "ScheduleColumnDescription": "Chair 8",
		"ScheduleTemplateName": "CDH Allegheny 202 Weekly",
		"AppointmentClassGUID": cloud9sim.DefaultAppointmentClass, "AppointmentClassDescription": "New Patient",
		"AppointmentTypeGUID": cloud9sim.DefaultAppointmentTypeGUID, "AppointmentTypeDescription": "New Patient Consult",
		"Minutes": "45", "LocationGUID": cloud9sim.DefaultLocationGUID,
	}, records[0])
	require.Equal(t, "2/20/2027 12:30:00 PM", records[len(records)-1]["EndTime"], "the horizon ends with Saturday 20 February")

	// The horizon moves with the simulated clock.
	b.clock.Advance(7 * 24 * time.Hour)
	require.True(t, hasSlot(b.slots(t, "2/22/2027", "2/27/2027"), "2/22/2027 8:00:00 AM", cloud9sim.Chair8GUID))
	require.Len(t, b.sim.OpenSlots(t0, t0.AddDate(0, 0, 7)), 0, "all in the past now")
}

func TestReservationsWindowAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026").requireError(t, 2, "A required parameter was not specified.")
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026", "endDate", "6/15/2027").
		requireError(t, 3, "Invalid value for parameter: 'endDate'.") // more than 28 weeks
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026", "endDate", "11/22/2026").
		requireError(t, 3, "Invalid value for parameter: 'endDate'.")
	b.call(t, "GetOnlineReservations", "startDate", "23.11.2026", "endDate", "11/22/2026").
		requireError(t, 3, "Invalid value for parameter: 'startDate'.")
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026", "endDate", "11/24/2026", "morning", "maybe").
		requireError(t, 3, "Invalid value for parameter: 'morning'.")
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026", "endDate", "11/24/2026", "schdvwGUIDs", "x").
		requireError(t, 5, "Invalid GUID format for parameter: 'schdvwGUIDs'")
	require.Len(t, b.slots(t, "11/23/2026", "6/7/2027"), 3432, "exactly 28 weeks is allowed")

	day := func(extra ...string) []map[string]string { return b.slots(t, "11/24/2026", "11/24/2026", extra...) }
	require.Len(t, day(), 48)
	require.Len(t, day("morning", "1", "afternoon", "0"), 4*6) // 8:00 … 11:45
	require.Len(t, day("morning", "False", "afternoon", "True"), 4*6)
	require.Empty(t, day("morning", "0", "afternoon", "0"))
	require.Len(t, day("schdvwGUIDs", "00000000-0000-0000-0000-000000000001,"+cloud9sim.DefaultScheduleViewGUID), 48)
	require.Empty(t, day("schdvwGUIDs", "00000000-0000-0000-0000-000000000001"))
	require.Len(t, day("appttypGUIDs", cloud9sim.DefaultAppointmentTypeGUID), 48)
	require.Empty(t, day("appttypGUIDs", cloud9sim.AdjustmentTypeGUID))
	// With times: slots starting within [start, end].
	require.Len(t, b.slots(t, "11/24/2026 9:30 AM", "11/24/2026 11:00:00 AM"), 4*3)

	week := b.slots(t, "11/23/2026", "11/29/2026", "daysOfWeek", "0000010") // Friday only, Sunday first
	require.Len(t, week, 48)
	require.Equal(t, time.Friday, parseWire(t, week[0]["StartTime"]).Weekday())
	b.call(t, "GetOnlineReservations", "startDate", "11/23/2026", "endDate", "11/24/2026", "daysOfWeek", "12345").
		requireError(t, 3, "Invalid value for parameter: 'daysOfWeek'.")
}

func TestBlankSlotAppointmentType(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *cloud9sim.Config) { c.BlankSlotAppointmentType = true })
	r := b.slots(t, "11/24/2026", "11/24/2026")[0]
	v, ok := r["AppointmentTypeGUID"]
	require.True(t, ok, "the field is there")
	require.Empty(t, v)
	require.Equal(t, cloud9sim.DefaultAppointmentClass, r["AppointmentClassGUID"])
}

func TestLocationsChairsTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, []map[string]string{{
		"LocationGUID": cloud9sim.DefaultLocationGUID, "LocationName": "CDH Allegheny 202", "LocationCode": "ALG202",
		"TimeZone": "EST", "LocationAddress": "202 Allegheny Ave", "LocationCity": "Pittsburgh",
		"LocationState": "PA", "LocationPostalCode": "15212",
	}}, b.call(t, "GetLocations").Records)

	chairs := b.call(t, "GetChairSchedules").Records
	require.Len(t, chairs, 4)
	var cols []string
	for _, c := range chairs {
		require.Equal(t, cloud9sim.DefaultLocationGUID, c["locGUID"])
		require.Equal(t, cloud9sim.DefaultScheduleViewGUID, c["schdvwGUID"])
		cols = append(cols, c["schdcolGUID"]+" "+c["schdcolDescription"])
	}
	require.Equal(t, []string{cloud9sim.Chair8GUID + " Chair 8", cloud9sim.Chair9GUID + " Chair 9",
		cloud9sim.Chair10GUID + " Chair 10", cloud9sim.Chair11GUID + " Chair 11"}, cols)

	b.call(t, "GetAppointmentTypes").requireError(t, 2, "A required parameter was not specified.")
	types := b.call(t, "GetAppointmentTypes", "showDeleted", "0").Records
	require.Len(t, types, 2)
	require.Equal(t, cloud9sim.DefaultAppointmentTypeGUID, types[0]["AppointmentTypeGUID"])
	require.Equal(t, "45", types[0]["AppointmentTypeMinutes"])
	require.Equal(t, "True", types[0]["AppointmentTypeAllowOnlineScheduling"])
	require.Equal(t, "False", types[1]["AppointmentTypeAllowOnlineScheduling"])
	require.Len(t, b.call(t, "GetAppointmentTypes", "showDeleted", "1").Records, 3)
}

func TestPatientInformationAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.createPatient(t, "Ann", "Lee")
	b.createPatient(t, "Bob", "Leeds")
	b.createPatient(t, "Cid", "Ray")

	require.Empty(t, b.call(t, "GetPatientInformation", "patguid", "00000000-0000-0000-0000-000000000001").Records)
	b.call(t, "GetPatientInformation").requireError(t, 2, "A required parameter was not specified.")
	b.call(t, "GetPatientInformation", "patguid", "nope").requireError(t, 5, "Invalid GUID format for parameter: 'patguid'")

	lookup := func(filter string, extra ...string) []string {
		a := b.call(t, "GetPortalPatientLookup", append([]string{"filter", filter}, extra...)...)
		require.Equal(t, "Success", a.Status, "%+v", a)
		var names []string
		for _, r := range a.Records {
			names = append(names, r["PatientFirstName"]+" "+r["PatientLastName"])
		}
		return names
	}
	require.Equal(t, []string{"Ann Lee"}, lookup("Lee, Ann"))
	require.Equal(t, []string{"Ann Lee", "Bob Leeds"}, lookup("lee"))
	require.Equal(t, []string{"Bob Leeds"}, lookup("Lee, b"))
	require.Equal(t, []string{"Cid Ray"}, lookup("10003"))
	// pageIndex counts from 1, as the production flow sends it.
	require.Equal(t, []string{"Ann Lee"}, lookup("Lee", "pageIndex", "1", "pageSize", "1"))
	require.Equal(t, []string{"Bob Leeds"}, lookup("Lee", "pageIndex", "2", "pageSize", "1"))
	require.Empty(t, lookup("Lee", "pageIndex", "3", "pageSize", "1"))
	require.Equal(t, []string{"Ann Lee", "Bob Leeds"}, lookup("Lee", "pageIndex", "1", "pageSize", "25"))
	b.call(t, "GetPortalPatientLookup", "filter", "Lee", "pageIndex", "0").requireError(t, 3, "Invalid value for parameter: 'pageIndex'.")
	require.Empty(t, lookup("Zed"))
	b.call(t, "GetPortalPatientLookup", "filter", "Lee", "pageSize", "1001").requireError(t, 3, "Invalid value for parameter: 'pageSize'.")
	b.call(t, "GetPortalPatientLookup").requireError(t, 2, "A required parameter was not specified.")

	r := b.call(t, "GetPortalPatientLookup", "filter", "Lee, Ann").Records[0]
	require.Equal(t, ann, r["PatientGUID"])
	require.Equal(t, "10001", r["PatientID"])
	require.Equal(t, "CDH Allegheny 202", r["LocationName"])

	// GetPatientInformation has one phone, PatientPhone (docs/reference/cloud9-api.md):
	// none of the fields the production flow's phone search reads.
	info := b.call(t, "GetPatientInformation", "patguid", ann).Records[0]
	require.Contains(t, info, "PatientPhone")
	for _, f := range []string{"HomePhone", "CellPhone", "WorkPhone", "Phone", "PhoneNumber", "MobilePhone"} {
		require.NotContains(t, info, f)
	}

	require.Empty(t, b.call(t, "GetAppointmentListByPatient", "patGUID", "00000000-0000-0000-0000-000000000001").Records)
}

func TestAppointmentListOrderedByStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	late := b.bookOK(t, p, "11/27/2026 3:30 PM", cloud9sim.Chair8GUID)
	early := b.bookOK(t, p, "11/24/2026 8:00 AM", cloud9sim.Chair10GUID)
	b.createPatient(t, "Bob", "Ray") // someone else's nothing
	list := b.call(t, "GetAppointmentListByPatient", "patGUID", p).Records
	require.Len(t, list, 2)
	require.Equal(t, early, list[0]["AppointmentGUID"])
	require.Equal(t, late, list[1]["AppointmentGUID"])
	require.Equal(t, "11/27/2026 3:30:00 PM", list[1]["AppointmentDateTime"])
}
