package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Booking error types: the `_debug.error_type` values of createAppt.
const (
	BookingErrValidation        = "VALIDATION_ERROR"
	BookingErrRateLimitedQueued = "RATE_LIMITED_QUEUED"
	// BookingErrTimeoutQueued: no answer came from Cloud9 (a timeout, a
	// connection dropped after the request was sent); the booking was
	// queued and its first attempt looks for the appointment before sending
	// it again.
	BookingErrTimeoutQueued = "TIMEOUT_QUEUED"
	// BookingErrUncertainQueued: Cloud9 answered without saying whether it
	// booked (code 0 "An unknown error occurred", an answer flowgate could
	// not read); queued, and looked for before it is sent again.
	BookingErrUncertainQueued = "UNCERTAIN_QUEUED"
	// BookingErrUnreachableQueued: Cloud9 could not be reached (connection
	// refused, no route): nothing was sent; queued for retry.
	BookingErrUnreachableQueued = "UNREACHABLE_QUEUED"
	BookingErrSlotReserved      = "SLOT_RESERVED"
	// BookingErrDuplicateSlot: this slot is already booked (or being
	// booked) for another child of the same patient (parent-as-patient), or
	// named twice in one children[] batch.
	BookingErrDuplicateSlot    = "DUPLICATE_SLOT_BLOCKED"
	BookingErrSlotNotAvailable = "SLOT_NOT_AVAILABLE"
	BookingErrPatientNotFound  = "PATIENT_NOT_FOUND"
	BookingErrRateLimit        = "RATE_LIMIT"
	BookingErrTimeout          = "TIMEOUT"
	BookingErrException        = "EXCEPTION"
	BookingErrCloud9           = "CLOUD9_ERROR"
	BookingErrUnknown          = "UNKNOWN"

	BookingAuthMissing          = "BOOKING_AUTH_MISSING"
	BookingAuthMalformed        = "BOOKING_AUTH_MALFORMED"
	BookingAuthSignatureInvalid = "BOOKING_AUTH_SIGNATURE_INVALID"
	BookingAuthExpired          = "BOOKING_AUTH_EXPIRED"
	BookingAuthGUIDMismatch     = "BOOKING_AUTH_GUID_MISMATCH"
)

// Booking auth methods (`_debug.auth_method` of a booked appointment).
const (
	AuthMethodToken        = "token"
	AuthMethodSessionMatch = "session_match"
	AuthMethodLegacy       = "legacy"
)

// JSTime formats t the way Node-RED's Date.toISOString does:
// 2026-01-20T15:30:00.000Z.
func JSTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// FlexInt is an integer that the IVA may send as a number or as a numeric
// string ("45"); it marshals as a number. An empty string or null is 0.
type FlexInt int

// UnmarshalJSON accepts 45, 45.0 and "45".
func (n *FlexInt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = 0
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			*n = 0
			return nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int(f)) {
		return &json.UnmarshalTypeError{Value: "value " + strconv.Quote(s), Type: typeOfInt}
	}
	*n = FlexInt(int(f))
	return nil
}

// FlexBool is a boolean that may arrive as true/false or "true"/"false"
// (createPatient's isChild). Anything else is an error.
type FlexBool bool

// UnmarshalJSON accepts true, false, "true", "false" (any case), "1", "0", null.
func (v *FlexBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch strings.ToLower(strings.Trim(string(b), `"`)) {
	case "true", "1":
		*v = true
	case "false", "0", "", "null":
		*v = false
	default:
		return &json.UnmarshalTypeError{Value: "value " + string(b), Type: typeOfBool}
	}
	return nil
}

// StringList is a list the IVA may send as a JSON array or as one
// comma-separated string (scheduleViewGUIDs). It marshals as the
// comma-separated string Cloud9 takes.
type StringList []string

// UnmarshalJSON accepts "a,b" and ["a","b"].
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	var parts []string
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
	} else {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		parts = strings.Split(s, ",")
	}
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*l = StringList(out)
	return nil
}

// MarshalJSON writes the comma-separated form.
func (l StringList) MarshalJSON() ([]byte, error) { return json.Marshal(strings.Join(l, ",")) }

var (
	typeOfInt  = reflect.TypeOf(0)
	typeOfBool = reflect.TypeOf(false)
)

// ---------------------------------------------------------------------------
// createPatient (docs/reference/nodered-endpoints.md §1.1)

// CreatePatientRequest is POST createPatient. Required: patientFirstName,
// patientLastName; for a child also parentPatientGUID. Unknown fields (the
// tool's insurance object) are ignored.
type CreatePatientRequest struct {
	PatientFirstName  string   `json:"patientFirstName" validate:"required,max=100"`
	PatientLastName   string   `json:"patientLastName" validate:"required,max=100"`
	IsChild           FlexBool `json:"isChild,omitempty"`
	ParentPatientGUID string   `json:"parentPatientGUID,omitempty"`
	FamilyID          string   `json:"familyId,omitempty"`
	ProviderGUID      string   `json:"providerGUID,omitempty"`
	LocationGUID      string   `json:"locationGUID,omitempty"`
	BirthdayDateTime  string   `json:"birthdayDateTime,omitempty"`
	BirthDate         string   `json:"birthDate,omitempty"`
	PhoneNumber       string   `json:"phoneNumber,omitempty" validate:"max=40"`
	EmailAddress      string   `json:"emailAddress,omitempty" validate:"max=254"`
	Gender            string   `json:"gender,omitempty"`
	UUI               string   `json:"uui,omitempty"`
	SessionID         string   `json:"sessionId,omitempty"`
	MsgID             string   `json:"msgid,omitempty"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// PatientCreatedResponse is the Created variant (and, with Cached set, the
// Cached one: `_cached:true`).
type PatientCreatedResponse struct {
	Success           bool                   `json:"success"`
	PatientGUID       string                 `json:"patientGUID"`
	FamilyID          string                 `json:"familyId"`
	IsChild           bool                   `json:"isChild"`
	BookingAuthToken  string                 `json:"bookingAuthToken"`
	Message           string                 `json:"message"`
	ParentPatientGUID string                 `json:"parentPatientGUID,omitempty"`
	Cached            bool                   `json:"_cached,omitempty"`
	LLMGuidance       PatientCreatedGuidance `json:"llm_guidance"`
}

// MustIncludeInChildCreate are the fields a child's createPatient must carry.
type MustIncludeInChildCreate struct {
	ParentPatientGUID string `json:"parentPatientGUID"`
	FamilyID          string `json:"familyId"`
}

// MustIncludeInBookChild are the fields every book_child call must carry.
type MustIncludeInBookChild struct {
	PatientGUID      string `json:"patientGUID"`
	BookingAuthToken string `json:"bookingAuthToken"`
}

// PatientCreatedGuidance is the llm_guidance of Created/Cached. Parent and
// child answers fill different fields.
type PatientCreatedGuidance struct {
	Model               string `json:"model"`
	CurrentState        string `json:"current_state"`
	NextAction          string `json:"next_action"`
	CriticalInstruction string `json:"critical_instruction"`
	// parent
	PatientGUIDForBooking      string                    `json:"patientGUID_for_booking,omitempty"`
	FamilyID                   string                    `json:"familyId,omitempty"`
	BookingAuthTokenForBooking string                    `json:"bookingAuthToken_for_booking,omitempty"`
	MustIncludeInChildCreate   *MustIncludeInChildCreate `json:"MUST_INCLUDE_IN_CHILD_CREATE,omitempty"`
	BookingSequence            string                    `json:"booking_sequence,omitempty"` // one string, as the original
	// child
	ChildPatientGUID  string `json:"childPatientGUID,omitempty"`
	ParentPatientGUID string `json:"parentPatientGUID,omitempty"`
	// both
	MustIncludeInBookChild *MustIncludeInBookChild `json:"MUST_INCLUDE_IN_BOOK_CHILD,omitempty"`
	// cached
	Important string `json:"IMPORTANT,omitempty"`
}

// PatientQueuedResponse is the Queued variant (operationId op-pat-…).
type PatientQueuedResponse struct {
	Success           bool                  `json:"success"`
	Queued            bool                  `json:"queued"`
	OperationID       string                `json:"operationId"`
	IsChild           bool                  `json:"isChild"`
	FamilyID          string                `json:"familyId"`
	ParentPatientGUID NullString            `json:"parentPatientGUID"` // null for a parent, as the original
	Message           string                `json:"message"`
	LLMGuidance       PatientQueuedGuidance `json:"llm_guidance"`
}

// PatientQueuedGuidance is the Queued variant's llm_guidance.
type PatientQueuedGuidance struct {
	CurrentState        string `json:"current_state"`
	NextAction          string `json:"next_action"`
	MessageToCaller     string `json:"message_to_caller"`
	CanProceedToBooking bool   `json:"can_proceed_to_booking"`
	CheckStatusEndpoint string `json:"check_status_endpoint"`
	OperationID         string `json:"operationId"`
}

// PatientFailedResponse is the documented failure shape (Node-RED's 500
// body). flowgate answers it with 200 for invalid input (error_type
// VALIDATION_ERROR, missing_fields) and with 500 when Cloud9 refused the
// patient for good.
type PatientFailedResponse struct {
	Success       bool     `json:"success"`
	PatientGUID   *string  `json:"patientGUID"`
	IsChild       bool     `json:"isChild"`
	Error         string   `json:"error"`
	Message       string   `json:"message"`
	CurrentState  string   `json:"current_state"`
	Timestamp     string   `json:"timestamp"`
	ErrorType     string   `json:"error_type,omitempty"`
	MissingFields []string `json:"missing_fields,omitempty"`
}

// Patient states.
const (
	StateParentCreated        = "PARENT_CREATED"
	StateChildCreated         = "CHILD_CREATED"
	StatePatientCreationQueue = "PATIENT_CREATION_QUEUED"
	StatePatientCreateFailed  = "PATIENT_CREATE_FAILED"
	StateChildCreateFailed    = "CHILD_CREATE_FAILED"
)

// Patient models of createPatient's guidance (BOOKING_PATIENT_MODEL):
// parent (docs/booking.md#the-booking-calls, the default) — the parent is the Cloud9 patient
// and each child an appointment plus a note; individual (the original's
// current guidance, docs/reference/nodered-endpoints.md §1.1) — each child is created as its own
// patient and booked with its own patientGUID; its answers carry exactly
// the original's keys (sidecar's TestIndividualModelMatchesOriginal).
const (
	PatientModel           = "PARENT_AS_PATIENT"
	PatientModelIndividual = "INDIVIDUAL_PATIENT_PER_PERSON"
)

// PatientCachedMessage is the cached answer's message, as the original.
const PatientCachedMessage = "Patient already created for this session (cached)"

// NewPatientCreated builds the Created answer of model (PatientModel or
// PatientModelIndividual); cached builds the original's short Cached
// answer instead (core fields, `_cached:true`, llm_guidance.IMPORTANT).
func NewPatientCreated(model, patientGUID, familyID, token, message, parentGUID string, isChild, cached bool) PatientCreatedResponse {
	if model != PatientModelIndividual {
		model = PatientModel
	}
	r := PatientCreatedResponse{Success: true, PatientGUID: patientGUID, FamilyID: familyID, IsChild: isChild,
		BookingAuthToken: token, Message: message}
	if cached {
		r.Cached, r.Message = true, PatientCachedMessage
		g := parentGuidance(model)
		r.LLMGuidance = PatientCreatedGuidance{Model: model, CurrentState: StateParentCreated, NextAction: g.NextAction,
			CriticalInstruction: g.CriticalInstruction,
			Important:           "This caller's patient already exists: reuse this patientGUID and bookingAuthToken. Do NOT create the patient again."}
		return r
	}
	book := &MustIncludeInBookChild{PatientGUID: patientGUID, BookingAuthToken: token}
	var g PatientCreatedGuidance
	if isChild {
		r.ParentPatientGUID = parentGUID
		g = PatientCreatedGuidance{Model: model, CurrentState: StateChildCreated, NextAction: "book_child",
			CriticalInstruction: "Use this child's patientGUID AND bookingAuthToken in book_child."}
		if model == PatientModelIndividual {
			g.NextAction = "book_appointment_for_this_child"
		}
		g.ChildPatientGUID, g.ParentPatientGUID, g.FamilyID = patientGUID, parentGUID, familyID
		g.MustIncludeInBookChild = book
	} else {
		g = parentGuidance(model)
		g.PatientGUIDForBooking, g.FamilyID, g.BookingAuthTokenForBooking = patientGUID, familyID, token
		g.MustIncludeInChildCreate = &MustIncludeInChildCreate{ParentPatientGUID: patientGUID, FamilyID: familyID}
		if model != PatientModelIndividual {
			// The parent books the children (docs/booking.md). The original's
			// individual guidance has no such key: each child is booked
			// with its own GUID, never the parent's.
			g.MustIncludeInBookChild = book
		}
	}
	r.LLMGuidance = g
	return r
}

// parentGuidance is a created parent's guidance in model.
func parentGuidance(model string) PatientCreatedGuidance {
	g := PatientCreatedGuidance{Model: model, CurrentState: StateParentCreated}
	if model == PatientModelIndividual {
		g.NextAction = "create_child_patient_for_each_child"
		g.CriticalInstruction = "Create EACH child as its own patient (createPatient with isChild true, parentPatientGUID and familyId), then book each child with the child's own patientGUID AND bookingAuthToken."
		g.BookingSequence = "1. Create each child with createPatient (isChild true, parentPatientGUID, familyId) " +
			"2. Get available times (slots action) " +
			"3. Call book_child once per child with that child's patientGUID and bookingAuthToken " +
			"4. Confirm each booking to the caller"
		return g
	}
	g.NextAction = "book_child"
	g.CriticalInstruction = "The parent is the patient. Book EVERY child with this patientGUID AND bookingAuthToken; put the child's details in note."
	g.BookingSequence = "1. Get available times (slots action) " +
		"2. Call book_child once per child with patientGUID, bookingAuthToken, startTime (or bookingToken), childName and note " +
		"3. Note format: Child: <name> | DOB: <MM/DD/YYYY> | Insurance: <provider> | GroupID: <id> | MemberID: <id> " +
		"4. Confirm each booking to the caller"
	return g
}

// NewPatientQueued builds the Queued answer.
func NewPatientQueued(opID, familyID, parentGUID string, isChild bool, statusEndpoint string) PatientQueuedResponse {
	return PatientQueuedResponse{
		Success: false, Queued: true, OperationID: opID, IsChild: isChild, FamilyID: familyID,
		ParentPatientGUID: NullString(parentGUID),
		Message:           "Patient creation queued for processing due to high demand",
		LLMGuidance: PatientQueuedGuidance{
			CurrentState:        StatePatientCreationQueue,
			NextAction:          "INFORM_CALLER_QUEUED",
			MessageToCaller:     "I'm saving your information now. It will be ready in a moment.",
			CanProceedToBooking: false,
			CheckStatusEndpoint: statusEndpoint,
			OperationID:         opID,
		},
	}
}

// NewPatientFailed builds the failure answer.
func NewPatientFailed(isChild bool, errText, message, errorType string, missing []string, now time.Time) PatientFailedResponse {
	state := StatePatientCreateFailed
	if isChild {
		state = StateChildCreateFailed
	}
	return PatientFailedResponse{Success: false, IsChild: isChild, Error: errText, Message: message,
		CurrentState: state, Timestamp: JSTime(now), ErrorType: errorType, MissingFields: missing}
}

// ---------------------------------------------------------------------------
// createAppt requests (docs/reference/nodered-endpoints.md §1.2)

// CreateApptRequest is POST createAppt: one booking, or a batch when
// Children is not empty. bookingToken (from the slot lists) may replace
// startTime and the GUIDs; when both are sent the token wins (it exists
// because LLMs mistype GUIDs).
type CreateApptRequest struct {
	PatientGUID         string         `json:"patientGUID,omitempty"`
	BookingAuthToken    string         `json:"bookingAuthToken,omitempty"`
	BookingToken        string         `json:"bookingToken,omitempty"`
	StartTime           string         `json:"startTime,omitempty"`
	ScheduleViewGUID    string         `json:"scheduleViewGUID,omitempty"`
	ScheduleColumnGUID  string         `json:"scheduleColumnGUID,omitempty"`
	AppointmentTypeGUID string         `json:"appointmentTypeGUID,omitempty"`
	Minutes             FlexInt        `json:"minutes,omitempty"`
	ChildName           string         `json:"childName,omitempty"`
	Note                string         `json:"note,omitempty"`
	UUI                 string         `json:"uui,omitempty"`
	SessionID           string         `json:"sessionId,omitempty"`
	Children            []BookingChild `json:"children,omitempty"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// BookingChild is one child of a batch createAppt. patientGUID falls back
// to the request's.
type BookingChild struct {
	PatientGUID         string  `json:"patientGUID,omitempty"`
	ChildName           string  `json:"childName,omitempty"`
	BookingToken        string  `json:"bookingToken,omitempty"`
	StartTime           string  `json:"startTime,omitempty"`
	ScheduleViewGUID    string  `json:"scheduleViewGUID,omitempty"`
	ScheduleColumnGUID  string  `json:"scheduleColumnGUID,omitempty"`
	AppointmentTypeGUID string  `json:"appointmentTypeGUID,omitempty"`
	Minutes             FlexInt `json:"minutes,omitempty"`
	Note                string  `json:"note,omitempty"`
}

// BookingParams is a booking as sent to Cloud9, echoed in `_debug.request_params`.
type BookingParams struct {
	PatientGUID         string `json:"patientGUID"`
	StartTime           string `json:"startTime"`
	ScheduleViewGUID    string `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID"`
	Minutes             int    `json:"minutes"`
	ChildName           string `json:"childName,omitempty"`
	// Note is the patient note sent with the booking, null without one
	// (the original's request_params.note).
	Note NullString `json:"note"`
}

// BookingCompletedEvent is published when a queued booking completes (and,
// with event patient_created, when a queued patient is created), and with
// event booking_failed when a queued booking or patient fails for good (a
// refusal no retry changes, or its last attempt used): on Redis channel
// BookingEventsChannel and, when configured, POSTed signed to
// BOOKING_EVENTS_WEBHOOK.
type BookingCompletedEvent struct {
	Event           string `json:"event"` // booking_completed | patient_created | booking_failed
	OperationID     string `json:"operationId"`
	OperationType   string `json:"operationType"` // SetAppointment | SetPatient
	AppointmentGUID string `json:"appointmentGUID,omitempty"`
	PatientGUID     string `json:"patientGUID"`
	ChildName       string `json:"childName,omitempty"`
	PatientName     string `json:"patientName,omitempty"`
	StartTime       string `json:"startTime,omitempty"`
	Attempts        int    `json:"attempts"`
	// CompletedAt is when the operation ended: made, or failed for good.
	CompletedAt string `json:"completedAt"`

	// booking_failed only. PhoneNumber is the caller's when flowgate knows
	// it (the call's session, or the queued patient's own).
	PhoneNumber string `json:"phoneNumber,omitempty"`
	ErrorType   string `json:"errorType,omitempty"` // the class, as createAppt's _debug.error_type
	Reason      string `json:"reason,omitempty"`    // the last attempt's error, as queue-status' lastError
	FailedAt    string `json:"failedAt,omitempty"`
	NextStep    string `json:"nextStep,omitempty"` // what the practice should do (FailedNextStep)
}

// Booking events.
const (
	BookingEventsChannel  = "flowgate:booking:events"
	EventBookingCompleted = "booking_completed"
	EventPatientCreated   = "patient_created"
	EventBookingFailed    = "booking_failed"
	OpSetAppointment      = "SetAppointment"
	OpSetPatient          = "SetPatient"
)

// bookingDate parses the start-time forms Cloud9 and the IVA use
// (01/20/2026 10:00 AM, 1/20/2026 10:00:00 AM, 2026-01-20T10:00:00).
func bookingDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"1/2/2006 3:04:05 PM", "1/2/2006 3:04 PM", "1/2/2006 15:04:05", "1/2/2006 15:04",
		"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ParseStartTime parses a booking start time; ok is false when s is not one
// of the accepted forms.
func ParseStartTime(s string) (time.Time, bool) { return bookingDate(s) }

// SpokenSlot is a start time split into day "Tuesday", date and time
// (SpeakStartTime: "01/20/2026", "10:00 AM", the slot lists' data fields;
// VoiceStartTime: "1/20/2026", "10:00:00 AM", what the caller hears). An
// unparseable start gives raw for the date and empty day and time.
type SpokenSlot struct {
	Day, Date, Time string
}

// SpeakStartTime splits a start time for the slot lists' data fields
// (voiceSlots[].date, groups[].date and times); voice texts use
// VoiceStartTime.
func SpeakStartTime(s string) SpokenSlot {
	t, ok := bookingDate(s)
	if !ok {
		return SpokenSlot{Date: s}
	}
	return SpokenSlot{Day: t.Weekday().String(), Date: t.Format("01/02/2006"), Time: t.Format("3:04 PM")}
}

// VoiceStartTime splits a start time the way the original says it
// (docs/reference/nodered-guidance.md: the halves of Cloud9's startTime,
// JavaScript's en-US toLocaleDateString / toLocaleTimeString): day
// "Tuesday", date "12/1/2026" (no zero padding), time "9:30:00 AM"
// (seconds kept). Every voice text flowgate writes reads a slot this way,
// and the children[] answer's results[].day/date/time carry the same text.
// An unparseable start gives raw for the date.
func VoiceStartTime(s string) SpokenSlot {
	t, ok := bookingDate(s)
	if !ok {
		return SpokenSlot{Date: s}
	}
	return SpokenSlot{Day: t.Weekday().String(), Date: t.Format("1/2/2006"), Time: t.Format("3:04:05 PM")}
}

// FirstName is the first word of a name ("Johnny Smith" → "Johnny").
func FirstName(name string) string {
	f := strings.Fields(name)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func (s SpokenSlot) String() string {
	switch s.Day {
	case "":
		return s.Date
	default:
		return fmt.Sprintf("%s %s at %s", s.Day, s.Date, s.Time)
	}
}
