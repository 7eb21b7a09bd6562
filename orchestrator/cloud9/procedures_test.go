package cloud9_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func validAppointment() cloud9.AppointmentInput {
	return cloud9.AppointmentInput{PatientGUID: patientGUID, StartTime: "1/20/2026 10:00:00 AM",
		ScheduleViewGUID: viewGUID, ScheduleColumnGUID: columnGUID, AppointmentTypeGUID: typeGUID, Minutes: 45}
}

// recorded is a client whose requests are kept and answered by answer.
func recorded(t testing.TB, answer func(*cloud9.Request) []byte) (*cloud9.Client, *recorder) {
	rec := &recorder{answer: answer}
	return newClient(t, "https://us-ea1-partnertest.cloud9ortho.com/GetData.ashx",
		func(c *cloud9.Config) { c.HTTPClient = rec.client() }), rec
}

func paramNames(t testing.TB, body []byte) []string {
	t.Helper()
	req, err := cloud9.DecodeRequest(body)
	require.NoError(t, err)
	names := make([]string, len(req.Params))
	for i, p := range req.Params {
		names[i] = p.Name
	}
	return names
}

func TestSetAppointment(t *testing.T) {
	t.Parallel()
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, result("Appointment GUID Added: "+apptGUID)) })
	in := validAppointment()
	in.Note = `Child: Tommy & "Ann" <twins>`
	guid, res, err := c.SetAppointment(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, apptGUID, guid)
	require.Equal(t, "Appointment GUID Added: "+apptGUID, res)
	goldenXML(t, "cloud9_request_set_appointment", rec.last(t))
	require.Equal(t, []string{"PatientGUID", "StartTime", "ScheduleViewGUID", "ScheduleColumnGUID", "AppointmentTypeGUID",
		"Minutes", "VendorUserName", "Note"}, paramNames(t, rec.last(t)))
}

func TestSetAppointmentRefusedAndUnreadable(t *testing.T) {
	t.Parallel()
	next := result("Error: This appointment cannot be scheduled in the specified time slot.")
	c, _ := recorded(t, func(*cloud9.Request) []byte { return answer(t, next) })
	ctx := context.Background()

	guid, res, err := c.SetAppointment(ctx, validAppointment())
	require.Empty(t, guid)
	require.Equal(t, "Error: This appointment cannot be scheduled in the specified time slot.", res, "the raw Result for _debug")
	require.Equal(t, cloud9.ClassSlotNotAvailable, cloud9.ClassOf(err))
	require.False(t, cloud9.IsUncertain(err))

	next = result("Error: Patient GUID specified does not exist.")
	_, _, err = c.SetAppointment(ctx, validAppointment())
	require.Equal(t, cloud9.ClassPatientNotFound, cloud9.ClassOf(err))

	// Success without the expected Result: Cloud9 may have booked it.
	for _, r := range []*cloud9.Response{result("Something else"), success(), result("Appointment GUID Added:")} {
		next = r
		guid, _, err = c.SetAppointment(ctx, validAppointment())
		require.Empty(t, guid)
		var e *cloud9.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, cloud9.KindResult, e.Kind)
		require.True(t, e.Uncertain, "%v", r)
	}

	// Other spellings of a success.
	next = result("appointment guid added: {" + strings.ToUpper(apptGUID) + "}")
	guid, _, err = c.SetAppointment(ctx, validAppointment())
	require.NoError(t, err)
	require.Equal(t, strings.ToUpper(apptGUID), guid)
	next = result("Added appointment " + apptGUID)
	guid, _, err = c.SetAppointment(ctx, validAppointment())
	require.NoError(t, err)
	require.Equal(t, apptGUID, guid)
}

func TestSetAppointmentValidation(t *testing.T) {
	t.Parallel()
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, result("Appointment GUID Added: "+apptGUID)) })
	for name, mod := range map[string]func(*cloud9.AppointmentInput){
		"no patient":   func(in *cloud9.AppointmentInput) { in.PatientGUID = "" },
		"no column":    func(in *cloud9.AppointmentInput) { in.ScheduleColumnGUID = " " },
		"no type":      func(in *cloud9.AppointmentInput) { in.AppointmentTypeGUID = "" },
		"zero minutes": func(in *cloud9.AppointmentInput) { in.Minutes = 0 },
		"bad start":    func(in *cloud9.AppointmentInput) { in.StartTime = "next tuesday" },
		"long note":    func(in *cloud9.AppointmentInput) { in.Note = strings.Repeat("é", 501) },
	} {
		in := validAppointment()
		mod(&in)
		_, _, err := c.SetAppointment(context.Background(), in)
		require.ErrorIs(t, err, cloud9.ErrInvalidInput, name)
	}
	noVendor := newClient(t, "https://x/GetData.ashx", func(c *cloud9.Config) { c.VendorUsername = ""; c.HTTPClient = rec.client() })
	_, _, err := noVendor.SetAppointment(context.Background(), validAppointment())
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
	require.Contains(t, err.Error(), "VendorUsername")
	require.Zero(t, rec.count(), "nothing invalid is sent")
}

func TestSetPatient(t *testing.T) {
	t.Parallel()
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, result("Patient Added: "+patientGUID)) })
	guid, res, err := c.SetPatient(context.Background(), cloud9.PatientInput{FirstName: "Ann", LastName: "O'Brien & Sons",
		ProviderGUID: "a1b2c3d4-0000-4000-8000-000000000002", LocationGUID: "1fef9297-7c8b-426b-b0d1-f2275136e48b",
		BirthDate: "01/15/2015", Phone: "4125550100", Email: "ann@example.com", Gender: "F"})
	require.NoError(t, err)
	require.Equal(t, patientGUID, guid)
	require.Equal(t, "Patient Added: "+patientGUID, res)
	goldenXML(t, "cloud9_request_set_patient", rec.last(t))
	require.Equal(t, []string{"patientFirstName", "patientLastName", "providerGUID", "locationGUID", "VendorUserName",
		"birthdayDateTime", "phoneNumber", "email", "gender"}, paramNames(t, rec.last(t)), "empty optionals are not sent")

	_, _, err = c.SetPatient(context.Background(), cloud9.PatientInput{FirstName: "Ann"})
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
	require.Contains(t, err.Error(), "LastName")
}

func TestSetPatientComment(t *testing.T) {
	t.Parallel()
	commentGUID := "0f0e0d0c-0000-4000-8000-000000000003"
	next := result("Patient Comment GUID Added: " + commentGUID)
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, next) })
	guid, _, err := c.SetPatientComment(context.Background(), patientGUID, "Child: Tommy | DOB: 01/15/2015 | Insurance: Aetna")
	require.NoError(t, err)
	require.Equal(t, commentGUID, guid)
	require.Equal(t, []string{"patGUID", "patComment", "VendorUserName"}, paramNames(t, rec.last(t)))

	next = result("Patient Comment GUID Updated: " + commentGUID)
	guid, _, err = c.SetPatientComment(context.Background(), patientGUID, "edit")
	require.NoError(t, err)
	require.Equal(t, commentGUID, guid)

	_, _, err = c.SetPatientComment(context.Background(), patientGUID, strings.Repeat("x", 2049))
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
	_, _, err = c.SetPatientComment(context.Background(), "", "x")
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
}

func TestAppointmentStatus(t *testing.T) {
	t.Parallel()
	next := result("Success")
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, next) })
	ctx := context.Background()
	res, err := c.SetAppointmentStatusCanceled(ctx, apptGUID)
	require.NoError(t, err)
	require.Equal(t, "Success", res)
	require.Equal(t, []string{"apptGUID", "VendorUserName"}, paramNames(t, rec.last(t)))
	_, err = c.SetAppointmentStatusConfirmed(ctx, apptGUID)
	require.NoError(t, err)
	require.Equal(t, []string{"apptGUID"}, paramNames(t, rec.last(t)))

	next = success() // no Result: the original counted this as success
	_, err = c.SetAppointmentStatusCanceled(ctx, apptGUID)
	require.True(t, cloud9.IsUncertain(err))
	next = result("Error: Appointment GUID specified does not exist.")
	_, err = c.SetAppointmentStatusConfirmed(ctx, apptGUID)
	require.Equal(t, cloud9.ClassCloud9, cloud9.ClassOf(err))
	_, err = c.SetAppointmentStatusConfirmed(ctx, "")
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
}

func TestGetOnlineReservations(t *testing.T) {
	t.Parallel()
	next := slotsAnswer(3)
	next.Records[2] = append(next.Records[2], cloud9.Field{Name: "Extra", Value: "kept in Raw"})
	c, rec := recorded(t, func(*cloud9.Request) []byte { return answer(t, next) })
	q := cloud9.ReservationQuery{StartDate: time.Date(2026, 1, 20, 7, 0, 0, 0, time.UTC), EndDate: time.Date(2026, 2, 19, 17, 0, 0, 0, time.UTC),
		ScheduleViewGUIDs: []string{viewGUID, "9a9a9a9a-0000-4000-8000-000000000004"}, AppointmentTypeGUIDs: []string{typeGUID}}
	slots, err := c.GetOnlineReservations(context.Background(), q)
	require.NoError(t, err)
	goldenXML(t, "cloud9_request_get_online_reservations", rec.last(t))
	req, err := cloud9.DecodeRequest(rec.last(t))
	require.NoError(t, err)
	require.Equal(t, []cloud9.Param{cloud9.P("startDate", "1/20/2026 7:00:00 AM"), cloud9.P("endDate", "2/19/2026 5:00:00 PM"),
		cloud9.P("schdvwGUIDs", viewGUID+",9a9a9a9a-0000-4000-8000-000000000004"), cloud9.P("appttypGUIDs", typeGUID),
		cloud9.P("morning", "True"), cloud9.P("afternoon", "True")}, req.Params, "neither half chosen means both; True as production sends")

	require.Len(t, slots, 3)
	s := slots[0]
	require.Equal(t, "11/5/2025 8:00:00 AM", s.StartTime, "as Cloud9 sent it")
	require.Equal(t, "11/5/2025 8:45:00 AM", s.EndTime)
	require.Equal(t, viewGUID, s.ScheduleViewGUID)
	require.Equal(t, "Ortho", s.ScheduleViewDescription)
	require.Equal(t, columnGUID, s.ScheduleColumnGUID)
	require.Equal(t, "CHAIR 1", s.ScheduleColumnDescription)
	require.Equal(t, "Default", s.ScheduleTemplateName)
	require.Equal(t, typeGUID, s.AppointmentClassGUID)
	require.Equal(t, "New Patient", s.AppointmentClassDescription)
	require.Equal(t, typeGUID, s.AppointmentTypeGUID)
	require.Equal(t, "New Patient Consult", s.AppointmentTypeDescription)
	require.Equal(t, 45, s.Minutes)
	require.Equal(t, "1fef9297-7c8b-426b-b0d1-f2275136e48b", s.LocationGUID)
	require.Equal(t, "kept in Raw", slots[2].Raw.Get("Extra"))

	q.Morning = true
	_, err = c.GetOnlineReservations(context.Background(), q)
	require.NoError(t, err)
	req, _ = cloud9.DecodeRequest(rec.last(t))
	require.Equal(t, []cloud9.Param{cloud9.P("morning", "True"), cloud9.P("afternoon", "False")}, req.Params[4:6])

	bitRec := &recorder{answer: func(*cloud9.Request) []byte { return answer(t, slotsAnswer(1)) }}
	bit := newClient(t, "https://us-ea1-partnertest.cloud9ortho.com/GetData.ashx",
		func(c *cloud9.Config) { c.HTTPClient, c.DayHalfFormat = bitRec.client(), cloud9.DayHalfBit })
	_, err = bit.GetOnlineReservations(context.Background(), q)
	require.NoError(t, err)
	req, _ = cloud9.DecodeRequest(bitRec.last(t))
	require.Equal(t, []cloud9.Param{cloud9.P("morning", "1"), cloud9.P("afternoon", "0")}, req.Params[4:6], "DayHalfBit: the vendor guide's 1/0")

	next = success()
	slots, err = c.GetOnlineReservations(context.Background(), q)
	require.NoError(t, err, "no open slot is an answer")
	require.Empty(t, slots)

	for name, bad := range map[string]cloud9.ReservationQuery{
		"no dates":  {},
		"reversed":  {StartDate: q.EndDate, EndDate: q.StartDate},
		"too long":  {StartDate: q.StartDate, EndDate: q.StartDate.Add(29 * 7 * 24 * time.Hour)},
		"bad days":  {StartDate: q.StartDate, EndDate: q.EndDate, DaysOfWeek: "MTW"},
		"zero end":  {StartDate: q.StartDate},
		"zero from": {EndDate: q.EndDate},
	} {
		_, err := c.GetOnlineReservations(context.Background(), bad)
		require.ErrorIs(t, err, cloud9.ErrInvalidInput, name)
	}
}

func TestGetAppointmentListByPatientAndDuplicateCheck(t *testing.T) {
	t.Parallel()
	appt := func(guid, start, status, column string) cloud9.Record {
		rec := cloud9.Record{{Name: "AppointmentGUID", Value: guid}, {Name: "PatientGUID", Value: patientGUID},
			{Name: "AppointmentDateTime", Value: start}, {Name: "AppointmentStatusDescription", Value: status},
			{Name: "AppointmentConfirmation", Value: "False"}, {Name: "AppointmentTypeGUID", Value: typeGUID},
			{Name: "AppointmentMinutes", Value: "45"}}
		if column != "" {
			rec = append(rec, cloud9.Field{Name: "ScheduleColumnGUID", Value: column})
		}
		return rec
	}
	c, rec := recorded(t, func(*cloud9.Request) []byte {
		return answer(t, success(
			appt("11111111-0000-4000-8000-000000000001", "1/20/2026 10:00:00 AM", "Canceled", columnGUID),
			appt("22222222-0000-4000-8000-000000000002", "1/20/2026 10:00:00 AM", "Scheduled", "aaaaaaaa-0000-4000-8000-000000000009"),
			appt(apptGUID, "1/20/2026 10:00:00 AM", "Scheduled", columnGUID),
			appt("33333333-0000-4000-8000-000000000003", "1/21/2026 9:00:00 AM", "Scheduled", ""),
		))
	})
	appts, err := c.GetAppointmentListByPatient(context.Background(), patientGUID)
	require.NoError(t, err)
	require.Equal(t, []cloud9.Param{cloud9.P("patGUID", patientGUID)}, mustDecode(t, rec.last(t)).Params)
	require.Len(t, appts, 4)
	require.Equal(t, "Canceled", appts[0].StatusDescription)
	require.True(t, appts[0].Canceled())
	require.Equal(t, 45, appts[2].Minutes)
	require.Equal(t, "False", appts[2].Confirmation)

	found, ok := cloud9.FindAppointment(appts, "01/20/2026 10:00 AM", columnGUID)
	require.True(t, ok, "padding does not matter")
	require.Equal(t, apptGUID, found.AppointmentGUID, "the canceled one and the other column are skipped")
	found, ok = cloud9.FindAppointment(appts, "1/21/2026 9:00 AM", columnGUID)
	require.True(t, ok, "a record without a column matches on time")
	require.Equal(t, "33333333-0000-4000-8000-000000000003", found.AppointmentGUID)
	_, ok = cloud9.FindAppointment(appts, "1/20/2026 10:30:00 AM", columnGUID)
	require.False(t, ok)

	_, err = c.GetAppointmentListByPatient(context.Background(), "")
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
}

func mustDecode(t testing.TB, body []byte) *cloud9.Request {
	t.Helper()
	req, err := cloud9.DecodeRequest(body)
	require.NoError(t, err)
	return req
}

func TestOtherReads(t *testing.T) {
	t.Parallel()
	empty := false
	c, rec := recorded(t, func(r *cloud9.Request) []byte {
		if empty {
			return answer(t, success())
		}
		return answer(t, success(cloud9.Record{{Name: "Procedure", Value: r.Procedure}}))
	})
	ctx := context.Background()
	locs, err := c.GetLocations(ctx)
	require.NoError(t, err)
	require.Equal(t, "GetLocations", locs[0].Get("Procedure"))
	_, err = c.GetChairSchedules(ctx)
	require.NoError(t, err)
	_, err = c.GetAppointmentTypes(ctx, false)
	require.NoError(t, err)
	require.Equal(t, []cloud9.Param{cloud9.P("showDeleted", "0")}, mustDecode(t, rec.last(t)).Params)
	info, err := c.GetPatientInformation(ctx, patientGUID)
	require.NoError(t, err)
	require.Equal(t, "GetPatientInformation", info.Get("Procedure"))
	require.Equal(t, []cloud9.Param{cloud9.P("patguid", patientGUID)}, mustDecode(t, rec.last(t)).Params, "lower-case patguid, as Cloud9 spells it")

	empty = true
	for name, call := range map[string]func() error{
		"GetLocations":          func() error { _, err := c.GetLocations(ctx); return err },
		"GetChairSchedules":     func() error { _, err := c.GetChairSchedules(ctx); return err },
		"GetAppointmentTypes":   func() error { _, err := c.GetAppointmentTypes(ctx, true); return err },
		"GetPatientInformation": func() error { _, err := c.GetPatientInformation(ctx, patientGUID); return err },
	} {
		err := call()
		var e *cloud9.Error
		require.ErrorAs(t, err, &e, name)
		require.Equal(t, cloud9.KindEmpty, e.Kind, name)
		require.True(t, e.Retryable(), "an empty answer to a read is retried: %s", name)
	}
}
