package cloud9sim

import (
	"sort"
	"strings"
	"time"
)

// procedure is one entry of the routing table. run is called with s.mu
// held and answers records or an *apiError.
type procedure struct {
	write bool
	run   func(s *Sim, p params, now time.Time) ([]record, error)
}

// procedures are the procedures the simulator authorizes; any other name
// answers error 10.
var procedures = map[string]procedure{
	"SetPatient":                    {write: true, run: (*Sim).setPatient},
	"SetAppointment":                {write: true, run: (*Sim).setAppointment},
	"SetPatientComment":             {write: true, run: (*Sim).setPatientComment},
	"SetAppointmentStatusCanceled":  {write: true, run: (*Sim).setAppointmentCanceled},
	"SetAppointmentStatusConfirmed": {write: true, run: (*Sim).setAppointmentConfirmed},
	"GetOnlineReservations":         {run: (*Sim).getOnlineReservations},
	"GetAppointmentListByPatient":   {run: (*Sim).getAppointmentListByPatient},
	"GetLocations":                  {run: (*Sim).getLocations},
	"GetChairSchedules":             {run: (*Sim).getChairSchedules},
	"GetAppointmentTypes":           {run: (*Sim).getAppointmentTypes},
	"GetPatientInformation":         {run: (*Sim).getPatientInformation},
	"GetPortalPatientLookup":        {run: (*Sim).getPortalPatientLookup},
}

// Procedures answers the names of the procedures the simulator serves,
// sorted.
func Procedures() []string {
	out := make([]string, 0, len(procedures))
	for n := range procedures {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Business-rule failures: ResponseStatus Success, Result "Error: …". The
// SetAppointment texts are the real ones (reference); the rest are
// inferred in the same style.
const (
	ResultMinutes       = "Error: Minutes must be greater than 0."
	ResultNoPatient     = "Error: Patient GUID specified does not exist."
	ResultNoApptType    = "Error: Appointment Type GUID specified does not exist or does not allow online scheduling."
	ResultNoViewColumn  = "Error: Schedule View/Column GUID specified does not exist."
	ResultPast          = "Error: Appointments cannot be scheduled in the past."
	ResultSlotTaken     = "Error: This appointment cannot be scheduled in the specified time slot."
	ResultNoAppointment = "Error: Appointment GUID specified does not exist."
	ResultNoComment     = "Error: Patient Comment GUID specified does not exist."
)

// guids parses the named GUID parameters into out, in order.
func guids(p params, names []string, out ...*string) error {
	for i, n := range names {
		g, err := p.guid(n)
		if err != nil {
			return err
		}
		*out[i] = g
	}
	return nil
}

// setPatient: SetPatient → "Patient Added: <GUID>".
func (s *Sim) setPatient(p params, now time.Time) ([]record, error) {
	if err := p.require("patientFirstName", "patientLastName", "providerGUID", "locationGUID", "VendorUserName"); err != nil {
		return nil, err
	}
	var provider, location string
	if err := guids(p, []string{"providerGUID", "locationGUID"}, &provider, &location); err != nil {
		return nil, err
	}
	pt := &Patient{ProviderGUID: provider, LocationGUID: location, Created: now}
	texts := []struct {
		name string
		max  int
		dst  *string
	}{
		{"patientFirstName", 50, &pt.FirstName}, {"patientLastName", 50, &pt.LastName},
		{"VendorUserName", 25, &pt.VendorUserName}, {"phoneNumber", 30, &pt.Phone},
		{"email", 100, &pt.Email}, {"gender", 10, &pt.Gender},
		{"addressStreet", 100, &pt.Street}, {"addressCity", 50, &pt.City},
		{"addressState", 20, &pt.State}, {"addressPostalCode", 20, &pt.Postal},
		{"note", 2048, &pt.Note},
	}
	for _, t := range texts {
		v, err := p.text(t.name, t.max)
		if err != nil {
			return nil, err
		}
		*t.dst = strings.TrimSpace(v)
	}
	bd, _, err := p.dateTime("birthdayDateTime", s.cfg.TimeZone)
	if err != nil {
		return nil, err
	}
	if !bd.IsZero() {
		pt.BirthDate = midnight(bd, s.cfg.TimeZone)
	}
	// The location must be the practice's; the provider is taken as given
	// (the sandbox lists no providers through the API).
	if location != s.cfg.Location.GUID {
		return nil, errValidation("locationGUID does not exist.")
	}
	pt.GUID = strings.ToUpper(s.newGUID())
	pt.PatID = s.nextPatID
	s.nextPatID++
	s.patients[strings.ToLower(pt.GUID)] = pt
	s.patientOrder = append(s.patientOrder, pt)
	return resultRecord("Patient Added: " + pt.GUID), nil
}

// setAppointment: SetAppointment → "Appointment GUID Added: <guid>".
func (s *Sim) setAppointment(p params, now time.Time) ([]record, error) {
	if err := p.require("PatientGUID", "StartTime", "ScheduleViewGUID", "ScheduleColumnGUID",
		"AppointmentTypeGUID", "Minutes", "VendorUserName"); err != nil {
		return nil, err
	}
	var patient, view, column, apptType, ortho string
	if err := guids(p, []string{"PatientGUID", "ScheduleViewGUID", "ScheduleColumnGUID", "AppointmentTypeGUID", "PatientOrthodontistGUID"},
		&patient, &view, &column, &apptType, &ortho); err != nil {
		return nil, err
	}
	start, _, aerr := p.dateTime("StartTime", s.cfg.TimeZone)
	if aerr != nil {
		return nil, aerr
	}
	minutes, _, aerr := p.integer("Minutes")
	if aerr != nil {
		return nil, aerr
	}
	vendor, aerr := p.text("VendorUserName", 25)
	if aerr != nil {
		return nil, aerr
	}
	note, aerr := p.text("Note", 500)
	if aerr != nil {
		return nil, aerr
	}

	switch {
	case minutes <= 0:
		return resultRecord(ResultMinutes), nil
	case s.patients[patient] == nil:
		return resultRecord(ResultNoPatient), nil
	case !s.bookableType(apptType):
		return resultRecord(ResultNoApptType), nil
	case view != s.cfg.ScheduleView.GUID || s.chair(column) == nil:
		return resultRecord(ResultNoViewColumn), nil
	case start.Before(now):
		return resultRecord(ResultPast), nil
	case !s.fits(now, column, start, minutes):
		return resultRecord(ResultSlotTaken), nil
	}
	a := &Appointment{
		GUID:                s.newGUID(),
		PatientGUID:         s.patients[patient].GUID,
		ScheduleViewGUID:    view,
		ScheduleColumnGUID:  column,
		AppointmentTypeGUID: apptType,
		OrthodontistGUID:    ortho,
		Start:               start,
		Minutes:             minutes,
		VendorUserName:      strings.TrimSpace(vendor),
		Note:                note,
		Status:              StatusScheduled,
		Created:             now,
	}
	s.addAppointment(a)
	return resultRecord("Appointment GUID Added: " + a.GUID), nil
}

func (s *Sim) bookableType(g string) bool {
	for _, t := range s.cfg.AppointmentTypes {
		if t.GUID == g {
			return t.AllowOnline && !t.Deleted
		}
	}
	return false
}

func (s *Sim) apptType(g string) *AppointmentType {
	for i, t := range s.cfg.AppointmentTypes {
		if t.GUID == g {
			return &s.cfg.AppointmentTypes[i]
		}
	}
	return nil
}

func (s *Sim) chair(g string) *Chair {
	for i, c := range s.cfg.Chairs {
		if c.GUID == g {
			return &s.cfg.Chairs[i]
		}
	}
	return nil
}

// setPatientComment: SetPatientComment → "Patient Comment GUID Added:
// <guid>", or "…Updated: <guid>" with pcGUID.
func (s *Sim) setPatientComment(p params, now time.Time) ([]record, error) {
	if err := p.require("patGUID", "patComment"); err != nil {
		return nil, err
	}
	var patient, pc string
	if err := guids(p, []string{"patGUID", "pcGUID"}, &patient, &pc); err != nil {
		return nil, err
	}
	text, aerr := p.text("patComment", 2048)
	if aerr != nil {
		return nil, aerr
	}
	vendor, aerr := p.text("VendorUserName", 25)
	if aerr != nil {
		return nil, aerr
	}
	if s.patients[patient] == nil {
		return resultRecord(ResultNoPatient), nil
	}
	if pc != "" {
		c := s.comments[pc]
		if c == nil || !strings.EqualFold(c.PatientGUID, patient) {
			return resultRecord(ResultNoComment), nil
		}
		c.Text, c.Updated = text, now
		if vendor != "" {
			c.VendorUserName = vendor
		}
		return resultRecord("Patient Comment GUID Updated: " + c.GUID), nil
	}
	c := &Comment{GUID: s.newGUID(), PatientGUID: s.patients[patient].GUID, Text: text,
		VendorUserName: vendor, Created: now, Updated: now}
	s.comments[c.GUID] = c
	s.commentOrder = append(s.commentOrder, c)
	return resultRecord("Patient Comment GUID Added: " + c.GUID), nil
}

// setAppointmentCanceled: SetAppointmentStatusCanceled → "Success"; the
// slot is free again. Canceling twice is a Success that changes nothing.
func (s *Sim) setAppointmentCanceled(p params, _ time.Time) ([]record, error) {
	a, res, err := s.appointmentParam(p)
	if a == nil {
		return res, err
	}
	if _, aerr := p.text("VendorUserName", 25); aerr != nil {
		return nil, aerr
	}
	s.cancel(a)
	return resultRecord("Success"), nil
}

// setAppointmentConfirmed: SetAppointmentStatusConfirmed → "Success"; a
// canceled appointment stays canceled.
func (s *Sim) setAppointmentConfirmed(p params, _ time.Time) ([]record, error) {
	a, res, err := s.appointmentParam(p)
	if a == nil {
		return res, err
	}
	if a.Active() {
		a.Status = StatusConfirmed
	}
	return resultRecord("Success"), nil
}

// appointmentParam resolves apptGUID, or answers why not.
func (s *Sim) appointmentParam(p params) (*Appointment, []record, error) {
	if err := p.require("apptGUID"); err != nil {
		return nil, nil, err
	}
	g, err := p.guid("apptGUID")
	if err != nil {
		return nil, nil, err
	}
	a := s.appts[g]
	if a == nil {
		return nil, resultRecord(ResultNoAppointment), nil
	}
	return a, nil, nil
}
