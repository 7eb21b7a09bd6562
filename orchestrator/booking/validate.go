package booking

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// validation wraps validator v10 with the booking tags: guid (a Cloud9
// GUID in either case) and starttime (a start time Cloud9 accepts). Field
// names in results are the JSON names.
type validation struct {
	v *validator.Validate
}

func newValidation() *validation {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	_ = v.RegisterValidation("guid", func(fl validator.FieldLevel) bool {
		return guidRE.MatchString(fl.Field().String())
	})
	_ = v.RegisterValidation("starttime", func(fl validator.FieldLevel) bool {
		_, ok := contracts.ParseStartTime(fl.Field().String())
		return ok
	})
	return &validation{v: v}
}

// check validates s and splits the failures into missing (required) and
// invalid fields, each sorted.
func (val *validation) check(s any) (missing, invalid []string) {
	err := val.v.Struct(s)
	var ves validator.ValidationErrors
	if err == nil || !errors.As(err, &ves) {
		return nil, nil
	}
	for _, fe := range ves {
		if fe.Tag() == "required" {
			missing = append(missing, fe.Field())
		} else {
			invalid = append(invalid, fe.Field())
		}
	}
	sort.Strings(missing)
	sort.Strings(invalid)
	return missing, invalid
}

// booking is one appointment to make, resolved from a request (bookingToken
// decoded, defaults applied) and validated.
type booking struct {
	Appointment

	SessionID string `json:"-"` // reservation holder: sessionId ‖ uui
	// The call's sessionId and uui as sent (queued with the booking:
	// queue-status looks the call's operations up by them).
	CallSessionID string `json:"-"`
	CallUUI       string `json:"-"`
	AuthMethod    string `json:"-"`
	// The caller as the call's session knows them (queued with the
	// booking, named by booking_failed): see withCaller.
	PatientName string `json:"-"`
	PhoneNumber string `json:"-"`
}

// fromCall records the call's sessionId and uui as its request sent them.
func (b *booking) fromCall(sessionID, uui string) {
	b.CallSessionID, b.CallUUI = strings.TrimSpace(sessionID), strings.TrimSpace(uui)
}

// withCaller names the caller of sess (none without a session).
func (b *booking) withCaller(sess *Session) {
	if sess != nil {
		b.PatientName, b.PhoneNumber = strings.TrimSpace(sess.PatientName), strings.TrimSpace(sess.PhoneNumber)
	}
}

// Appointment is one booking's own fields — SetAppointment's parameters,
// the child and the note — with the JSON names of the requests and of the
// queued task (AppointmentTask embeds it) and the validation rules of
// createAppt. It is the one copy: cloud9.AppointmentInput is built from it
// at the Cloud9 boundary (input), contracts.BookingParams at the answer's
// (params), SlotRef at the slot cache's (slotRef).
type Appointment struct {
	PatientGUID         string `json:"patientGUID" validate:"required,guid"`
	StartTime           string `json:"startTime" validate:"required,starttime"`
	ScheduleViewGUID    string `json:"scheduleViewGUID" validate:"required,guid"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID" validate:"required,guid"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID" validate:"required,guid"`
	Minutes             int    `json:"minutes" validate:"min=1,max=600"`
	ChildName           string `json:"childName,omitempty" validate:"max=200"`
	Note                string `json:"note,omitempty" validate:"max=2048"`
}

// input is SetAppointment's input (the note goes to SetPatientComment, not
// to SetAppointment's own Note).
func (a Appointment) input() cloud9.AppointmentInput {
	return cloud9.AppointmentInput{PatientGUID: a.PatientGUID, StartTime: a.StartTime, ScheduleViewGUID: a.ScheduleViewGUID,
		ScheduleColumnGUID: a.ScheduleColumnGUID, AppointmentTypeGUID: a.AppointmentTypeGUID, Minutes: a.Minutes}
}

// slotRef is the booked slot as the slot cache and bookingTokens name it.
func (a Appointment) slotRef() SlotRef {
	return SlotRef{StartTime: a.StartTime, ScheduleViewGUID: a.ScheduleViewGUID, ScheduleColumnGUID: a.ScheduleColumnGUID,
		AppointmentTypeGUID: a.AppointmentTypeGUID, Minutes: a.Minutes}
}

func (a Appointment) params() *contracts.BookingParams {
	return &contracts.BookingParams{PatientGUID: a.PatientGUID, StartTime: a.StartTime, ScheduleViewGUID: a.ScheduleViewGUID,
		ScheduleColumnGUID: a.ScheduleColumnGUID, AppointmentTypeGUID: a.AppointmentTypeGUID, Minutes: a.Minutes,
		ChildName: a.ChildName, Note: contracts.NullString(a.Note)}
}

// slotFields are the slot fields of a request or batch child.
type slotFields struct {
	bookingToken, startTime, view, column, apptType string
	minutes                                         int
	// knownChair: a column that is not one of Config.Chairs is replaced by
	// the default chair (createAppt, as the original booked Chair 8
	// whatever was sent); bookConsultation honours the column as the
	// original did.
	knownChair bool
}

// invalidBooking says why a booking cannot be made as sent.
type invalidBooking struct {
	missing, invalid []string
	msg              string
	// defaulted are fields the caller did not send that a configured
	// default filled; they are named in missing too, as the original does.
	defaulted []string
}

// resolve builds the booking: a bookingToken, when sent, gives the slot
// (it wins over raw GUIDs the LLM may have mistyped — that is its purpose);
// missing column, view, type and minutes take the configured defaults.
func (s *Service) resolve(ctx context.Context, patientGUID string, f slotFields, childName, note, sessionID string) (booking, *invalidBooking) {
	b := booking{Appointment: Appointment{PatientGUID: strings.TrimSpace(patientGUID), StartTime: strings.TrimSpace(f.startTime),
		ScheduleViewGUID: strings.TrimSpace(f.view), ScheduleColumnGUID: strings.TrimSpace(f.column),
		AppointmentTypeGUID: strings.TrimSpace(f.apptType), Minutes: f.minutes,
		ChildName: strings.TrimSpace(childName), Note: strings.TrimSpace(note)}, SessionID: sessionID}
	if tok := strings.TrimSpace(f.bookingToken); tok != "" {
		if s.d.BookingTokens == nil {
			return b, &invalidBooking{invalid: []string{"bookingToken"}, msg: "bookingToken is not accepted here"}
		}
		ref, err := s.d.BookingTokens.Decode(ctx, tok)
		if err != nil {
			return b, &invalidBooking{invalid: []string{"bookingToken"}, msg: "bookingToken could not be decoded"}
		}
		b.StartTime = firstNonEmpty(ref.StartTime, b.StartTime)
		b.ScheduleViewGUID = firstNonEmpty(ref.ScheduleViewGUID, b.ScheduleViewGUID)
		b.ScheduleColumnGUID = firstNonEmpty(ref.ScheduleColumnGUID, b.ScheduleColumnGUID)
		b.AppointmentTypeGUID = firstNonEmpty(ref.AppointmentTypeGUID, b.AppointmentTypeGUID)
		if ref.Minutes > 0 {
			b.Minutes = ref.Minutes
		}
	}
	notSent := unsent(b)
	b.ScheduleColumnGUID = firstNonEmpty(b.ScheduleColumnGUID, s.cfg.DefaultScheduleColumnGUID)
	b.ScheduleViewGUID = firstNonEmpty(b.ScheduleViewGUID, s.cfg.DefaultScheduleViewGUID)
	b.AppointmentTypeGUID = firstNonEmpty(b.AppointmentTypeGUID, s.cfg.DefaultAppointmentTypeGUID)
	if b.Minutes == 0 {
		b.Minutes = s.cfg.DefaultMinutes
	}
	missing, invalid := s.val.check(b)
	if len(missing)+len(invalid) > 0 {
		bad := &invalidBooking{missing: missing, invalid: invalid}
		if len(missing) > 0 {
			bad.missing, bad.defaulted = withUnsent(missing, notSent)
		}
		return b, bad
	}
	// A well-formed column that is not a configured chair (a malformed one
	// is refused above, as before).
	if f.knownChair && !s.cfg.chairConfigured(b.ScheduleColumnGUID) {
		s.log.Warn("createAppt names a chair that is not configured; booking the default chair as the original did",
			"column", b.ScheduleColumnGUID, "default_column", s.cfg.DefaultScheduleColumnGUID)
		b.ScheduleColumnGUID = s.cfg.DefaultScheduleColumnGUID
	}
	return b, nil
}

// unsent are the slot fields the caller left out (a bookingToken's count
// as sent), in the original's order.
func unsent(b booking) []string {
	var out []string
	for _, f := range []struct{ name, v string }{{"startTime", b.StartTime}, {"scheduleViewGUID", b.ScheduleViewGUID},
		{"scheduleColumnGUID", b.ScheduleColumnGUID}} {
		if f.v == "" {
			out = append(out, f.name)
		}
	}
	return out
}

// withUnsent is missing plus every field not sent, in the original's order
// (startTime, scheduleViewGUID, scheduleColumnGUID first), and the fields a
// default filled.
func withUnsent(missing, notSent []string) (all, defaulted []string) {
	seen := map[string]bool{}
	for _, f := range notSent {
		all, seen[f] = append(all, f), true
	}
	for _, f := range missing {
		if !seen[f] {
			all = append(all, f)
		}
	}
	inMissing := map[string]bool{}
	for _, f := range missing {
		inMissing[f] = true
	}
	for _, f := range notSent {
		if !inMissing[f] {
			defaulted = append(defaulted, f)
		}
	}
	return all, defaulted
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// receivedParams is `_debug.received_params` of a VALIDATION_ERROR: the
// request's scheduling fields; tokens and the note only as "present".
// The GUIDs not sent are null, as in the original.
func receivedParams(r contracts.CreateApptRequest) map[string]any {
	m := map[string]any{
		"patientGUID": contracts.NullString(r.PatientGUID), "startTime": r.StartTime,
		"scheduleViewGUID":   contracts.NullString(r.ScheduleViewGUID),
		"scheduleColumnGUID": contracts.NullString(r.ScheduleColumnGUID), "appointmentTypeGUID": r.AppointmentTypeGUID,
		"minutes": int(r.Minutes), "childName": r.ChildName, "uui": r.UUI, "sessionId": r.SessionID,
		"hasBookingAuthToken": r.BookingAuthToken != "", "hasBookingToken": r.BookingToken != "", "hasNote": r.Note != "",
	}
	if len(r.Children) > 0 {
		m["children"] = len(r.Children)
	}
	return m
}
