package cloud9

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cloud9's bounds on the typed procedures' inputs.
const (
	MaxAppointmentNote = 500
	MaxPatientComment  = 2048
	MaxReservationSpan = 28 * 7 * 24 * time.Hour // GetOnlineReservations: startDate to endDate
)

// PatientInput is SetPatient's input. The first four are required.
type PatientInput struct {
	FirstName    string // patientFirstName
	LastName     string // patientLastName
	ProviderGUID string // providerGUID
	LocationGUID string // locationGUID

	BirthDate         string // birthdayDateTime, sent as given (MM/DD/YYYY)
	Phone             string // phoneNumber
	Email             string // email
	Gender            string // gender
	AddressStreet     string // addressStreet
	AddressCity       string // addressCity
	AddressState      string // addressState
	AddressPostalCode string // addressPostalCode
	Note              string // note
}

// SetPatient creates a patient and returns its GUID, read from
// "Patient Added: <GUID>", with the raw Result.
func (c *Client) SetPatient(ctx context.Context, in PatientInput) (patientGUID, result string, err error) {
	if err := required(ProcSetPatient, map[string]string{"FirstName": in.FirstName, "LastName": in.LastName,
		"ProviderGUID": in.ProviderGUID, "LocationGUID": in.LocationGUID, "Config.VendorUsername": c.cfg.VendorUsername}); err != nil {
		return "", "", err
	}
	params := []Param{P("patientFirstName", in.FirstName), P("patientLastName", in.LastName),
		P("providerGUID", in.ProviderGUID), P("locationGUID", in.LocationGUID), P("VendorUserName", c.cfg.VendorUsername)}
	params = optional(params, "birthdayDateTime", in.BirthDate, "phoneNumber", in.Phone, "email", in.Email,
		"gender", in.Gender, "addressStreet", in.AddressStreet, "addressCity", in.AddressCity,
		"addressState", in.AddressState, "addressPostalCode", in.AddressPostalCode, "note", in.Note)
	return c.write(ctx, ProcSetPatient, params, "Patient Added:")
}

// AppointmentInput is SetAppointment's input. All but OrthodontistGUID and
// Note are required.
type AppointmentInput struct {
	PatientGUID         string
	StartTime           string // as the slot gave it; re-sent unchanged
	ScheduleViewGUID    string
	ScheduleColumnGUID  string
	AppointmentTypeGUID string
	Minutes             int
	OrthodontistGUID    string // PatientOrthodontistGUID
	Note                string // at most MaxAppointmentNote characters
}

// SetAppointment books an appointment and returns its GUID, read from
// "Appointment GUID Added: <guid>", with the raw Result. VendorUserName is
// the Config's. A business-rule refusal is an *Error of KindResult whose
// Class says which (SLOT_NOT_AVAILABLE, PATIENT_NOT_FOUND, …).
//
// Before sending it again after an *Error with Uncertain set, look for the
// appointment with GetAppointmentListByPatient and FindAppointment.
func (c *Client) SetAppointment(ctx context.Context, in AppointmentInput) (apptGUID, result string, err error) {
	if err := required(ProcSetAppointment, map[string]string{"PatientGUID": in.PatientGUID, "StartTime": in.StartTime,
		"ScheduleViewGUID": in.ScheduleViewGUID, "ScheduleColumnGUID": in.ScheduleColumnGUID,
		"AppointmentTypeGUID": in.AppointmentTypeGUID, "Config.VendorUsername": c.cfg.VendorUsername}); err != nil {
		return "", "", err
	}
	if in.Minutes <= 0 {
		return "", "", fmt.Errorf("%w: %s: Minutes must be greater than 0, got %d", ErrInvalidInput, ProcSetAppointment, in.Minutes)
	}
	if _, err := ParseTime(in.StartTime); err != nil {
		return "", "", fmt.Errorf("%w: %s: StartTime: %w", ErrInvalidInput, ProcSetAppointment, err)
	}
	if n := len([]rune(in.Note)); n > MaxAppointmentNote {
		return "", "", fmt.Errorf("%w: %s: Note is %d characters, Cloud9 takes at most %d", ErrInvalidInput, ProcSetAppointment, n, MaxAppointmentNote)
	}
	params := []Param{P("PatientGUID", in.PatientGUID), P("StartTime", in.StartTime),
		P("ScheduleViewGUID", in.ScheduleViewGUID), P("ScheduleColumnGUID", in.ScheduleColumnGUID),
		P("AppointmentTypeGUID", in.AppointmentTypeGUID), IntParam("Minutes", in.Minutes),
		P("VendorUserName", c.cfg.VendorUsername)}
	params = optional(params, "PatientOrthodontistGUID", in.OrthodontistGUID, "Note", in.Note)
	return c.write(ctx, ProcSetAppointment, params, "Appointment GUID Added:")
}

// SetPatientComment adds a comment to a patient and returns the comment's
// GUID, read from "Patient Comment GUID Added: <guid>" (or "…Updated:").
// Its timeout is the note timeout (15 s in the seed).
func (c *Client) SetPatientComment(ctx context.Context, patGUID, comment string) (commentGUID, result string, err error) {
	if err := required(ProcSetPatientComment, map[string]string{"patGUID": patGUID, "patComment": comment}); err != nil {
		return "", "", err
	}
	if n := len([]rune(comment)); n > MaxPatientComment {
		return "", "", fmt.Errorf("%w: %s: comment is %d characters, Cloud9 takes at most %d", ErrInvalidInput, ProcSetPatientComment, n, MaxPatientComment)
	}
	params := optional([]Param{P("patGUID", patGUID), P("patComment", comment)}, "VendorUserName", c.cfg.VendorUsername)
	return c.write(ctx, ProcSetPatientComment, params, "Patient Comment GUID Added:", "Patient Comment GUID Updated:")
}

// SetAppointmentStatusCanceled cancels an appointment; Result "Success".
func (c *Client) SetAppointmentStatusCanceled(ctx context.Context, apptGUID string) (result string, err error) {
	if err := required(ProcSetAppointmentStatusCanceled, map[string]string{"apptGUID": apptGUID}); err != nil {
		return "", err
	}
	return c.status(ctx, ProcSetAppointmentStatusCanceled,
		optional([]Param{P("apptGUID", apptGUID)}, "VendorUserName", c.cfg.VendorUsername))
}

// SetAppointmentStatusConfirmed confirms an appointment; Result "Success".
func (c *Client) SetAppointmentStatusConfirmed(ctx context.Context, apptGUID string) (result string, err error) {
	if err := required(ProcSetAppointmentStatusConfirmed, map[string]string{"apptGUID": apptGUID}); err != nil {
		return "", err
	}
	return c.status(ctx, ProcSetAppointmentStatusConfirmed, []Param{P("apptGUID", apptGUID)})
}

// ReservationQuery is GetOnlineReservations' input.
type ReservationQuery struct {
	StartDate, EndDate   time.Time // wall clock of the practice; at most 28 weeks apart
	ScheduleViewGUIDs    []string  // schdvwGUIDs, comma-separated; empty: all
	AppointmentTypeGUIDs []string  // appttypGUIDs, comma-separated; empty: all
	// Morning and Afternoon select halves of the day; both false means both.
	Morning, Afternoon bool
	DaysOfWeek         string // daysOfWeek, 7 characters; empty: not sent
}

// Slot is one open slot of GetOnlineReservations, with every field the
// reference lists. StartTime is exactly as Cloud9 sent it ("11/5/2025
// 8:30:00 AM"), to be re-sent unchanged to SetAppointment.
type Slot struct {
	StartTime                   string `json:"StartTime"`
	EndTime                     string `json:"EndTime"`
	ScheduleViewGUID            string `json:"ScheduleViewGUID"`
	ScheduleViewDescription     string `json:"ScheduleViewDescription"`
	ScheduleColumnGUID          string `json:"ScheduleColumnGUID"`
	ScheduleColumnDescription   string `json:"ScheduleColumnDescription"`
	ScheduleTemplateName        string `json:"ScheduleTemplateName"`
	AppointmentClassGUID        string `json:"AppointmentClassGUID"`
	AppointmentClassDescription string `json:"AppointmentClassDescription"`
	AppointmentTypeGUID         string `json:"AppointmentTypeGUID"`
	AppointmentTypeDescription  string `json:"AppointmentTypeDescription"`
	Minutes                     int    `json:"Minutes"` // 0 when absent or not a number
	LocationGUID                string `json:"LocationGUID"`
	Raw                         Record `json:"-"` // every field, in Cloud9's order
}

// GetOnlineReservations lists open slots. No slot is a valid answer (nil,
// nil); Cloud9 has also been seen answering empty under load, so a caller
// that expects slots retries a few times first, as the seed's slot readers
// did.
func (c *Client) GetOnlineReservations(ctx context.Context, q ReservationQuery) ([]Slot, error) {
	if q.StartDate.IsZero() || q.EndDate.IsZero() || q.EndDate.Before(q.StartDate) {
		return nil, fmt.Errorf("%w: %s: StartDate and EndDate are required, EndDate not before StartDate", ErrInvalidInput, ProcGetOnlineReservations)
	}
	if q.EndDate.Sub(q.StartDate) > MaxReservationSpan {
		return nil, fmt.Errorf("%w: %s: at most 28 weeks from StartDate to EndDate", ErrInvalidInput, ProcGetOnlineReservations)
	}
	if q.DaysOfWeek != "" && len(q.DaysOfWeek) != 7 {
		return nil, fmt.Errorf("%w: %s: DaysOfWeek must have 7 characters", ErrInvalidInput, ProcGetOnlineReservations)
	}
	morning, afternoon := q.Morning, q.Afternoon
	if !morning && !afternoon {
		morning, afternoon = true, true
	}
	params := []Param{TimeParam("startDate", q.StartDate), TimeParam("endDate", q.EndDate)}
	params = optional(params, "schdvwGUIDs", strings.Join(q.ScheduleViewGUIDs, ","),
		"appttypGUIDs", strings.Join(q.AppointmentTypeGUIDs, ","))
	params = append(params, c.dayHalf("morning", morning), c.dayHalf("afternoon", afternoon))
	params = optional(params, "daysOfWeek", q.DaysOfWeek)
	r, err := c.Call(ctx, ProcGetOnlineReservations, params...)
	if err != nil {
		return nil, err
	}
	slots := make([]Slot, 0, len(r.Records))
	for _, rec := range r.Records {
		slots = append(slots, Slot{
			StartTime: rec.Get("StartTime"), EndTime: rec.Get("EndTime"),
			ScheduleViewGUID: rec.Get("ScheduleViewGUID"), ScheduleViewDescription: rec.Get("ScheduleViewDescription"),
			ScheduleColumnGUID: rec.Get("ScheduleColumnGUID"), ScheduleColumnDescription: rec.Get("ScheduleColumnDescription"),
			ScheduleTemplateName: rec.Get("ScheduleTemplateName"),
			AppointmentClassGUID: rec.Get("AppointmentClassGUID"), AppointmentClassDescription: rec.Get("AppointmentClassDescription"),
			AppointmentTypeGUID: rec.Get("AppointmentTypeGUID"), AppointmentTypeDescription: rec.Get("AppointmentTypeDescription"),
			Minutes: atoi(rec.Get("Minutes")), LocationGUID: rec.Get("LocationGUID"), Raw: rec,
		})
	}
	return slots, nil
}

// dayHalf is morning/afternoon in the Config's DayHalfFormat: True/False as
// the production flow has always sent them, or 1/0.
func (c *Client) dayHalf(name string, b bool) Param {
	if c.cfg.DayHalfFormat == DayHalfBit {
		return BitParam(name, b)
	}
	return BoolParam(name, b)
}

// Appointment is one record of GetAppointmentListByPatient. Fields Cloud9
// does not send stay empty; Raw has everything.
type Appointment struct {
	AppointmentGUID            string `json:"AppointmentGUID"`
	PatientGUID                string `json:"PatientGUID"`
	AppointmentDateTime        string `json:"AppointmentDateTime"`
	StatusDescription          string `json:"AppointmentStatusDescription"`
	Confirmation               string `json:"AppointmentConfirmation"`
	AppointmentTypeGUID        string `json:"AppointmentTypeGUID"`
	AppointmentTypeDescription string `json:"AppointmentTypeDescription"`
	Minutes                    int    `json:"Minutes"`
	ScheduleViewGUID           string `json:"ScheduleViewGUID"`
	ScheduleColumnGUID         string `json:"ScheduleColumnGUID"`
	LocationGUID               string `json:"LocationGUID"`
	Raw                        Record `json:"-"`
}

// Canceled reports whether the appointment's status is a cancellation.
func (a Appointment) Canceled() bool {
	return strings.Contains(strings.ToLower(a.StatusDescription), "cancel")
}

// Matches reports whether a is a live appointment at start (compared with
// SameStart) in column (ignored when either side does not know it): the
// duplicate check before re-sending an uncertain SetAppointment.
func (a Appointment) Matches(start, column string) bool {
	if a.Canceled() || !SameStart(a.AppointmentDateTime, start) {
		return false
	}
	return column == "" || a.ScheduleColumnGUID == "" || strings.EqualFold(a.ScheduleColumnGUID, column)
}

// FindAppointment returns the first of appts that Matches start and column.
func FindAppointment(appts []Appointment, start, column string) (Appointment, bool) {
	for _, a := range appts {
		if a.Matches(start, column) {
			return a, true
		}
	}
	return Appointment{}, false
}

// GetAppointmentListByPatient lists a patient's appointments. An empty list
// is a valid answer (a new patient has none) but Cloud9 has also answered
// empty under load: a duplicate check that finds nothing right after an
// uncertain SetAppointment is better repeated once before re-sending.
func (c *Client) GetAppointmentListByPatient(ctx context.Context, patGUID string) ([]Appointment, error) {
	if err := required(ProcGetAppointmentListByPatient, map[string]string{"patGUID": patGUID}); err != nil {
		return nil, err
	}
	r, err := c.Call(ctx, ProcGetAppointmentListByPatient, P("patGUID", patGUID))
	if err != nil {
		return nil, err
	}
	out := make([]Appointment, 0, len(r.Records))
	for _, rec := range r.Records {
		minutes := rec.Get("Minutes")
		if minutes == "" {
			minutes = rec.Get("AppointmentMinutes")
		}
		out = append(out, Appointment{
			AppointmentGUID: rec.Get("AppointmentGUID"), PatientGUID: rec.Get("PatientGUID"),
			AppointmentDateTime: rec.Get("AppointmentDateTime"), StatusDescription: rec.Get("AppointmentStatusDescription"),
			Confirmation: rec.Get("AppointmentConfirmation"), AppointmentTypeGUID: rec.Get("AppointmentTypeGUID"),
			AppointmentTypeDescription: rec.Get("AppointmentTypeDescription"), Minutes: atoi(minutes),
			ScheduleViewGUID: rec.Get("ScheduleViewGUID"), ScheduleColumnGUID: rec.Get("ScheduleColumnGUID"),
			LocationGUID: rec.Get("LocationGUID"), Raw: rec,
		})
	}
	return out, nil
}

// GetLocations lists the practice's locations (LocationGUID, LocationName,
// LocationCode, TimeZone, address fields). Empty is a retryable *Error.
func (c *Client) GetLocations(ctx context.Context) ([]Record, error) {
	return c.read(ctx, ProcGetLocations)
}

// GetChairSchedules lists schedule views and columns (locGUID, schdvwGUID,
// schdvwDescription, schdcolGUID, schdcolDescription). Empty is a retryable
// *Error.
func (c *Client) GetChairSchedules(ctx context.Context) ([]Record, error) {
	return c.read(ctx, ProcGetChairSchedules)
}

// GetAppointmentTypes lists appointment types (AppointmentTypeGUID,
// AppointmentTypeMinutes, AppointmentTypeAllowOnlineScheduling, …). Empty is
// a retryable *Error.
func (c *Client) GetAppointmentTypes(ctx context.Context, showDeleted bool) ([]Record, error) {
	return c.read(ctx, ProcGetAppointmentTypes, BitParam("showDeleted", showDeleted))
}

// GetPatientInformation returns a patient's record (PatientFullName,
// PatientBirthDate, PatientEmail, PatientPhone, …). Empty is a retryable
// *Error.
func (c *Client) GetPatientInformation(ctx context.Context, patGUID string) (Record, error) {
	if err := required(ProcGetPatientInformation, map[string]string{"patguid": patGUID}); err != nil {
		return nil, err
	}
	recs, err := c.read(ctx, ProcGetPatientInformation, P("patguid", patGUID))
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

// read calls a procedure that always has records; none is a KindEmpty
// *Error.
func (c *Client) read(ctx context.Context, procedure string, params ...Param) ([]Record, error) {
	r, err := c.Call(ctx, procedure, params...)
	if err != nil {
		return nil, err
	}
	if len(r.Records) == 0 {
		return nil, &Error{Procedure: procedure, Kind: KindEmpty, Class: ClassUnknown, Code: -1,
			Message: "no records", Response: r}
	}
	return r.Records, nil
}

// write calls a write procedure and reads the new GUID from the Result
// after one of prefixes.
func (c *Client) write(ctx context.Context, procedure string, params []Param, prefixes ...string) (string, string, error) {
	r, err := c.Call(ctx, procedure, params...)
	if err != nil {
		return "", resultOf(err), err
	}
	res := r.Result()
	if guid, ok := addedGUID(res, prefixes...); ok {
		return guid, res, nil
	}
	// Success without the expected Result: Cloud9 may well have acted.
	return "", res, unexpected(procedure, r, res)
}

// status calls a status change, whose Result is "Success".
func (c *Client) status(ctx context.Context, procedure string, params []Param) (string, error) {
	r, err := c.Call(ctx, procedure, params...)
	if err != nil {
		return resultOf(err), err
	}
	res := r.Result()
	if !strings.EqualFold(strings.TrimSpace(res), StatusSuccess) {
		return res, unexpected(procedure, r, res)
	}
	return res, nil
}

func unexpected(procedure string, r *Response, res string) *Error {
	msg := res
	if msg == "" {
		msg = "no Result"
	}
	return &Error{Procedure: procedure, Kind: KindResult, Class: Classify(-1, res), Code: -1,
		Message: msg, Uncertain: true, Response: r}
}

var guidRe = regexp.MustCompile(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`)

// addedGUID reads the identifier after one of prefixes ("Patient Added:
// <GUID>"), or, in a Result that says "Added" some other way, the first
// GUID in it.
func addedGUID(res string, prefixes ...string) (string, bool) {
	trimmed := strings.TrimSpace(res)
	for _, p := range prefixes {
		if len(trimmed) >= len(p) && strings.EqualFold(trimmed[:len(p)], p) {
			if f := strings.Fields(trimmed[len(p):]); len(f) > 0 {
				if id := strings.Trim(f[0], "{}.,;"); id != "" {
					return id, true
				}
			}
		}
	}
	if strings.Contains(strings.ToLower(trimmed), "added") {
		if id := guidRe.FindString(trimmed); id != "" {
			return id, true
		}
	}
	return "", false
}

// resultOf is the Result of the answer an error carries, if any.
func resultOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Response != nil {
		return e.Response.Result()
	}
	return ""
}

// required checks required inputs, in a stable order for the message.
func required(procedure string, fields map[string]string) error {
	var missing []string
	for name, v := range fields {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("%w: %s: missing %s", ErrInvalidInput, procedure, strings.Join(missing, ", "))
}

// optional appends name/value pairs whose value is not empty.
func optional(params []Param, pairs ...string) []Param {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			params = append(params, P(pairs[i], pairs[i+1]))
		}
	}
	return params
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0
	}
	return n
}
