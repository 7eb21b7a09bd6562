package booking

import (
	"context"
	"errors"
	"strings"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// Name lookups ask Cloud9 for one page of this size (the original's).
const famLookupPageSize = 25

// GetPatient answers getPatient: {patient: record} or {patient: null}
// for an unknown patient.
func (f *Family) GetPatient(ctx context.Context, req contracts.GetPatientRequest) Answer {
	if missing, bad := famCheckGUID("patientGUID", req.PatientGUID); missing != nil || bad != "" {
		return ok(contracts.PatientResponse{Error: famInvalidText(missing, bad), LLMGuidance: famInvalid(bad, missing...)})
	}
	rec, err := f.d.Cloud9.GetPatientInformation(ctx, strings.TrimSpace(req.PatientGUID))
	switch {
	case err == nil:
		return ok(contracts.PatientResponse{Patient: famRecord(rec)})
	case famClassify(err) == famRefused:
		return ok(contracts.PatientResponse{LLMGuidance: famNotFound("patient")})
	}
	f.log.Warn("getPatient failed", "err", err)
	return failed(contracts.PatientResponse{Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
}

// MalformedPatientRead answers getPatient's body that is not its JSON.
func (f *Family) MalformedPatientRead(err error) Answer {
	return ok(contracts.PatientResponse{Error: MalformedText(err), LLMGuidance: famInvalid("")})
}

// GetPatientByFilter answers getPatientByFilter: by phone through the
// phone search, at the caller's location or every location of the client
// ({patients, count, searchedCount, totalPatients}), else by
// filter through GetPortalPatientLookup ({patients, count}).
func (f *Family) GetPatientByFilter(ctx context.Context, req contracts.GetPatientByFilterRequest) Answer {
	phone, filter := strings.TrimSpace(req.PhoneNumber), strings.TrimSpace(req.Filter)
	if loc := strings.TrimSpace(req.LocationGUID); loc != "" && !guidRE.MatchString(loc) {
		return f.searchInvalid("locationGUID is not a GUID", "locationGUID")
	}
	switch {
	case phone != "":
		return f.byPhone(ctx, phone, strings.TrimSpace(req.LocationGUID))
	case filter != "":
		return f.byName(ctx, filter)
	}
	r := f.searchInvalid("missing required field(s): phoneNumber or filter", "")
	r.Body.(*contracts.PatientSearchResponse).LLMGuidance.MissingFields = []string{"phoneNumber", "filter"}
	return r
}

// MalformedSearch answers getPatientByFilter's body that is not its JSON.
func (f *Family) MalformedSearch(err error) Answer { return f.searchInvalid(MalformedText(err), "") }

func (f *Family) searchInvalid(text, field string) Answer {
	return ok(&contracts.PatientSearchResponse{Patients: []contracts.Record{}, Error: text, LLMGuidance: famInvalid(field)})
}

func (f *Family) byPhone(ctx context.Context, phone, location string) Answer {
	if f.d.Phones == nil {
		return failed(&contracts.PatientSearchResponse{Patients: []contracts.Record{}, Error: "phone search is not configured",
			LLMGuidance: famFailedGuidance(nil)})
	}
	res, err := f.d.Phones.Lookup(ctx, phone, location)
	if errors.Is(err, phoneindex.ErrTooShort) {
		return f.searchInvalid("phoneNumber has too few digits", "phoneNumber")
	}
	if err != nil {
		f.log.Warn("getPatientByFilter: phone search failed", "err", err)
		body := &contracts.PatientSearchResponse{Patients: []contracts.Record{}, Error: famMessage(err), LLMGuidance: famFailedGuidance(err)}
		var c9 *cloud9.Error
		if !errors.As(err, &c9) { // the records in Redis, not Cloud9, failed
			body.Error = "phone search is unavailable"
			return storeFailed(body)
		}
		return failed(body)
	}
	out := &contracts.PatientSearchResponse{Patients: make([]contracts.Record, 0, len(res.Matches)), Count: len(res.Matches)}
	searched, total := res.Stats.Searched, res.Stats.Total
	out.SearchedCount, out.TotalPatients = &searched, &total
	for _, e := range res.Matches {
		out.Patients = append(out.Patients, phoneElement(e))
	}
	return ok(out)
}

// phoneElement is one phone search element (contracts.PhoneSearchKeys):
// the indexed record, patientGUID, phones, Email, and the original's keys
// Cloud9's record lacks as "" (PatientID from the record's PatID when
// GetPatientList gave none).
func phoneElement(e phoneindex.Entry) contracts.Record {
	r := make(contracts.Record, len(e.Record)+11)
	for k, v := range e.Record {
		r[k] = v
	}
	if _, ok := e.Record["PatientID"]; !ok {
		r["PatientID"] = e.Record["PatID"]
	}
	for _, k := range contracts.PhoneSearchKeys() {
		if _, ok := r[k]; !ok {
			r[k] = ""
		}
	}
	r["patientGUID"], r["phones"], r["Email"] = e.GUID, e.Phones, e.Email
	return r
}

func (f *Family) byName(ctx context.Context, filter string) Answer {
	// One page, the first: pageIndex counts from 1 (cloud9.PatientLookup).
	recs, err := f.d.Cloud9.GetPortalPatientLookup(ctx, cloud9.PatientLookup{Filter: filter, LookupByPatient: true,
		PageIndex: 1, PageSize: famLookupPageSize})
	if err != nil && famClassify(err) != famRefused {
		f.log.Warn("getPatientByFilter: lookup failed", "err", err)
		return failed(&contracts.PatientSearchResponse{Patients: []contracts.Record{}, Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
	}
	out := &contracts.PatientSearchResponse{Patients: make([]contracts.Record, 0, len(recs))}
	for _, r := range recs {
		out.Patients = append(out.Patients, nameElement(r))
	}
	out.Count = len(out.Patients)
	if out.Count == 0 {
		out.LLMGuidance = famNotFound("patient")
	}
	return ok(out)
}

// nameElement is one name search element: the original's keys
// (contracts' getPatientByFilter elements) and flowgate's firstName,
// lastName, fullName (Cloud9's PatientFullName).
func nameElement(r cloud9.Record) contracts.Record {
	first, last, born := r.Get("PatientFirstName"), r.Get("PatientLastName"), r.Get("PatientBirthDate")
	name := strings.TrimSpace(first + " " + last)
	full := r.Get("PatientFullName")
	if full == "" {
		full = name
	}
	return contracts.Record{
		"patientGUID": r.Get("PatientGUID"), "PatientFirstName": first, "PatientLastName": last,
		"PatientName": name, "patientName": name, "PatientID": r.Get("PatientID"),
		"PatientBirthDate": born, "birthDate": born,
		"LocationGUID": r.Get("LocationGUID"), "LocationName": r.Get("LocationName"),
		"firstName": first, "lastName": last, "fullName": full,
	}
}

// GetPatientAppts answers getPatientAppts: the patient's appointments with
// the original's added keys (StartTime, AppointmentDate, AppointmentType,
// Status, GUID, patientName).
func (f *Family) GetPatientAppts(ctx context.Context, req contracts.GetPatientApptsRequest) Answer {
	if missing, bad := famCheckGUID("patientGUID", req.PatientGUID); missing != nil || bad != "" {
		return ok(contracts.PatientApptsResponse{Appointments: []contracts.Record{}, Error: famInvalidText(missing, bad),
			LLMGuidance: famInvalid(bad, missing...)})
	}
	guid := strings.TrimSpace(req.PatientGUID)
	appts, err := f.d.Cloud9.GetAppointmentListByPatient(ctx, guid)
	if err != nil && famClassify(err) != famRefused {
		f.log.Warn("getPatientAppts failed", "err", err)
		return failed(contracts.PatientApptsResponse{Appointments: []contracts.Record{}, Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
	}
	name := ""
	if len(appts) > 0 {
		if info, err := f.d.Cloud9.GetPatientInformation(ctx, guid); err == nil {
			name = info.Get("PatientFullName")
		}
	}
	out := contracts.PatientApptsResponse{Appointments: make([]contracts.Record, 0, len(appts)), Count: len(appts)}
	for _, a := range appts {
		r := famRecord(a.Raw)
		r["StartTime"], r["AppointmentDate"] = a.AppointmentDateTime, famApptDate(a.AppointmentDateTime)
		r["AppointmentType"], r["Status"] = a.AppointmentTypeDescription, a.StatusDescription
		r["GUID"], r["patientName"] = a.AppointmentGUID, name
		out.Appointments = append(out.Appointments, r)
	}
	return ok(out)
}

// MalformedAppts answers getPatientAppts' body that is not its JSON.
func (f *Family) MalformedAppts(err error) Answer {
	return ok(contracts.PatientApptsResponse{Appointments: []contracts.Record{}, Error: MalformedText(err), LLMGuidance: famInvalid("")})
}

// famApptDate is the date of a Cloud9 date-time as MM/DD/YYYY.
func famApptDate(s string) string {
	t, err := cloud9.ParseTime(s)
	if err != nil {
		return ""
	}
	return t.Format("01/02/2006")
}
