package cloud9sim

import (
	"strconv"
	"strings"
	"time"
)

// maxReservationDays is the widest GetOnlineReservations window (28 weeks,
// in calendar days so a change of clocks does not move it).
const maxReservationDays = 28 * 7

// getOnlineReservations answers one record per open slot.
func (s *Sim) getOnlineReservations(p params, now time.Time) ([]record, error) {
	if err := p.require("startDate", "endDate"); err != nil {
		return nil, err
	}
	loc := s.cfg.TimeZone
	from, _, err := p.dateTime("startDate", loc)
	if err != nil {
		return nil, err
	}
	to, toDateOnly, err := p.dateTime("endDate", loc)
	if err != nil {
		return nil, err
	}
	if to.Before(from) || to.After(from.AddDate(0, 0, maxReservationDays)) {
		return nil, errValue("endDate")
	}
	if toDateOnly { // a bare end date includes that whole day
		to = to.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	views, err := p.guidList("schdvwGUIDs")
	if err != nil {
		return nil, err
	}
	types, err := p.guidList("appttypGUIDs")
	if err != nil {
		return nil, err
	}
	f := slotFilter{from: from, to: to, days: allDays()}
	if f.morning, err = p.bit("morning", true); err != nil {
		return nil, err
	}
	if f.afternoon, err = p.bit("afternoon", true); err != nil {
		return nil, err
	}
	if d, ok := p.get("daysOfWeek"); ok {
		// Seven 0/1 characters, Sunday first (an inference: the order is
		// not documented).
		d = strings.TrimSpace(d)
		if len(d) != 7 || strings.Trim(d, "01") != "" {
			return nil, errValue("daysOfWeek")
		}
		for i := range f.days {
			f.days[i] = d[i] == '1'
		}
	}
	if len(views) > 0 && !views[s.cfg.ScheduleView.GUID] || len(types) > 0 && !types[s.slotType.GUID] {
		return nil, nil
	}
	slots := s.openSlots(now, f)
	typeGUID := s.slotType.GUID
	if s.cfg.BlankSlotAppointmentType {
		typeGUID = ""
	}
	out := make([]record, len(slots))
	minutes := strconv.Itoa(s.cfg.SlotMinutes)
	var last time.Time
	var startText, endText string
	for i, sl := range slots {
		if !sl.Start.Equal(last) || i == 0 { // the chairs share a start
			last, startText, endText = sl.Start, formatTime(sl.Start), formatTime(sl.End())
		}
		out[i] = record{
			{"StartTime", startText},
			{"EndTime", endText},
			{"ScheduleViewGUID", s.cfg.ScheduleView.GUID},
			{"ScheduleViewDescription", s.cfg.ScheduleView.Description},
			{"ScheduleColumnGUID", sl.Chair.GUID},
			{"ScheduleColumnDescription", sl.Chair.Description},
			{"ScheduleTemplateName", s.templateName()},
			{"AppointmentClassGUID", s.slotType.ClassGUID},
			{"AppointmentClassDescription", s.slotType.ClassDescription},
			{"AppointmentTypeGUID", typeGUID},
			{"AppointmentTypeDescription", s.slotType.Description},
			{"Minutes", minutes},
			{"LocationGUID", s.cfg.Location.GUID},
		}
	}
	return out, nil
}

func (s *Sim) templateName() string { return s.cfg.Location.Name + " Weekly" }

// getAppointmentListByPatient answers a patient's appointments (canceled
// ones too) by start time; an unknown patient has none.
func (s *Sim) getAppointmentListByPatient(p params, _ time.Time) ([]record, error) {
	if err := p.require("patGUID"); err != nil {
		return nil, err
	}
	g, err := p.guid("patGUID")
	if err != nil {
		return nil, err
	}
	var out []record
	for _, a := range s.patientAppointments(g) {
		confirmation := "Unconfirmed"
		if a.Status == StatusConfirmed {
			confirmation = "Confirmed"
		}
		typeDesc := ""
		if t := s.apptType(a.AppointmentTypeGUID); t != nil {
			typeDesc = t.Description
		}
		colDesc := ""
		if c := s.chair(a.ScheduleColumnGUID); c != nil {
			colDesc = c.Description
		}
		out = append(out, record{
			{"AppointmentGUID", a.GUID},
			{"PatientGUID", a.PatientGUID},
			{"AppointmentDateTime", formatTime(a.Start)},
			{"AppointmentStatusDescription", a.Status},
			{"AppointmentConfirmation", confirmation},
			{"AppointmentTypeGUID", a.AppointmentTypeGUID},
			{"AppointmentTypeDescription", typeDesc},
			{"Minutes", strconv.Itoa(a.Minutes)},
			{"ScheduleViewGUID", a.ScheduleViewGUID},
			{"ScheduleViewDescription", s.cfg.ScheduleView.Description},
			{"ScheduleColumnGUID", a.ScheduleColumnGUID},
			{"ScheduleColumnDescription", colDesc},
			{"LocationGUID", s.cfg.Location.GUID},
			{"LocationName", s.cfg.Location.Name},
		})
	}
	return out, nil
}

// getLocations answers the one location.
func (s *Sim) getLocations(_ params, _ time.Time) ([]record, error) {
	l := s.cfg.Location
	return []record{{
		{"LocationGUID", l.GUID},
		{"LocationName", l.Name},
		{"LocationCode", l.Code},
		{"TimeZone", s.cfg.TimeZone.String()},
		{"LocationAddress", l.Address},
		{"LocationCity", l.City},
		{"LocationState", l.State},
		{"LocationPostalCode", l.PostalCode},
	}}, nil
}

// getChairSchedules answers one record per chair of the schedule view.
func (s *Sim) getChairSchedules(_ params, _ time.Time) ([]record, error) {
	out := make([]record, len(s.cfg.Chairs))
	for i, c := range s.cfg.Chairs {
		out[i] = record{
			{"locGUID", s.cfg.Location.GUID},
			{"locName", s.cfg.Location.Name},
			{"schdvwGUID", s.cfg.ScheduleView.GUID},
			{"schdvwDescription", s.cfg.ScheduleView.Description},
			{"schdcolGUID", c.GUID},
			{"schdcolDescription", c.Description},
		}
	}
	return out, nil
}

// getAppointmentTypes answers the appointment types, deleted ones only
// with showDeleted.
func (s *Sim) getAppointmentTypes(p params, _ time.Time) ([]record, error) {
	if err := p.require("showDeleted"); err != nil {
		return nil, err
	}
	showDeleted, err := p.bit("showDeleted", false)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, t := range s.cfg.AppointmentTypes {
		if t.Deleted && !showDeleted {
			continue
		}
		out = append(out, record{
			{"AppointmentTypeGUID", t.GUID},
			{"AppointmentTypeDescription", t.Description},
			{"AppointmentTypeMinutes", strconv.Itoa(t.Minutes)},
			{"AppointmentTypeAllowOnlineScheduling", bit(t.AllowOnline)},
			{"AppointmentTypeDeleted", bit(t.Deleted)},
			{"AppointmentClassGUID", t.ClassGUID},
			{"AppointmentClassDescription", t.ClassDescription},
		})
	}
	return out, nil
}

// getPatientInformation answers one record for a known patient, none for
// an unknown one. Its fields are docs/reference/cloud9-api.md's (PatientFullName,
// PatientBirthDate, PatientEmail, PatientPhone, Location, Orthodontist,
// PatID) plus the GUIDs and names: one phone, PatientPhone — none of the
// HomePhone, CellPhone, WorkPhone, Phone, PhoneNumber or MobilePhone the
// production flow's phone search reads.
func (s *Sim) getPatientInformation(p params, _ time.Time) ([]record, error) {
	if err := p.require("patguid"); err != nil {
		return nil, err
	}
	g, err := p.guid("patguid")
	if err != nil {
		return nil, err
	}
	pt := s.patients[g]
	if pt == nil {
		return nil, nil
	}
	ortho := ""
	if strings.EqualFold(pt.ProviderGUID, s.cfg.Orthodontist.GUID) {
		ortho = s.cfg.Orthodontist.Name
	}
	return []record{{
		{"PatientGUID", pt.GUID},
		{"PatientFirstName", pt.FirstName},
		{"PatientLastName", pt.LastName},
		{"PatientFullName", pt.FirstName + " " + pt.LastName},
		{"PatientBirthDate", birthDate(pt.BirthDate)},
		{"PatientEmail", pt.Email},
		{"PatientPhone", pt.Phone},
		{"Location", s.cfg.Location.Name},
		{"LocationGUID", s.cfg.Location.GUID},
		{"Orthodontist", ortho},
		{"OrthodontistGUID", pt.ProviderGUID},
		{"PatID", strconv.Itoa(pt.PatID)},
	}}, nil
}

func birthDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

// getPortalPatientLookup finds patients by "Last, First" (prefixes,
// case-insensitive), by PatID, or by a last-name prefix. pageIndex counts
// from 1 (default 1; below 1 is error 3) and pageSize is 1..1000 (default
// 100). docs/reference/cloud9-api.md does not settle pageIndex's base: it is taken as
// 1-based because the production flow sends pageIndex 1 for the first page.
// Each record carries the patient's LocationGUID and LocationName (the
// production flow reads both from it).
func (s *Sim) getPortalPatientLookup(p params, _ time.Time) ([]record, error) {
	if err := p.require("filter"); err != nil {
		return nil, err
	}
	filter, _ := p.get("filter")
	for _, b := range []string{"lookupByPatient", "showInactive"} {
		if _, err := p.bit(b, false); err != nil {
			return nil, err
		}
	}
	page, given, err := p.integer("pageIndex")
	if err != nil || given && page < 1 {
		return nil, errValue("pageIndex")
	}
	if !given {
		page = 1
	}
	size, given, err := p.integer("pageSize")
	if err != nil || given && (size < 1 || size > 1000) {
		return nil, errValue("pageSize")
	}
	if !given {
		size = 100
	}
	var hits []*Patient
	for _, pt := range s.patientOrder {
		if matchesLookup(pt, strings.TrimSpace(filter)) {
			hits = append(hits, pt)
		}
	}
	lo := (page - 1) * size
	if lo >= len(hits) {
		return nil, nil
	}
	hits = hits[lo:min(lo+size, len(hits))]
	out := make([]record, len(hits))
	for i, pt := range hits {
		out[i] = record{
			{"PatientGUID", pt.GUID},
			{"PatientID", strconv.Itoa(pt.PatID)},
			{"PatientFirstName", pt.FirstName},
			{"PatientLastName", pt.LastName},
			{"PatientFullName", pt.LastName + ", " + pt.FirstName},
			{"PatientBirthDate", birthDate(pt.BirthDate)},
			{"PatientPhone", pt.Phone},
			{"PatientEmail", pt.Email},
			{"LocationGUID", pt.LocationGUID},
			{"LocationName", s.locationName(pt.LocationGUID)},
			{"PatientStatus", "Active"},
		}
	}
	return out, nil
}

// locationName is the name of the location guid ("" for another one).
func (s *Sim) locationName(guid string) string {
	if guid != "" && strings.EqualFold(guid, s.cfg.Location.GUID) {
		return s.cfg.Location.Name
	}
	return ""
}

func matchesLookup(pt *Patient, filter string) bool {
	if last, first, ok := strings.Cut(filter, ","); ok {
		return prefixFold(pt.LastName, strings.TrimSpace(last)) && prefixFold(pt.FirstName, strings.TrimSpace(first))
	}
	if id, err := strconv.Atoi(filter); err == nil {
		return pt.PatID == id
	}
	return prefixFold(pt.LastName, filter)
}

func prefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
