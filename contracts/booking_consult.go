package contracts

import (
	"strings"
	"time"
)

// Consultation error types (`_debug.error_type` and the guidance's
// error_type, docs/reference/nodered-endpoints.md §4).
const (
	ConsultErrParentQueued = "parent_creation_queued"
	ConsultErrParentFailed = "parent_creation_failed"
	ConsultErrFatal        = "fatal_error"
	ConsultErrSlotConflict = "slot_conflict"
	ConsultErrValidation   = "validation_error"
)

// Consultation llm_guidance actions and states.
const (
	ConsultActionConfirmAll    = "confirm_all_appointments_to_caller"
	ConsultActionInformQueued  = "inform_caller_queued"
	ConsultActionPartial       = "confirm_booked_and_offer_alternatives_for_failed"
	ConsultActionFindOtherSlot = "find_different_slot_for_child"
)

// BookConsultationRequest is POST bookConsultation. Required: parentFirstName,
// parentLastName, parentPhone and at least one child with firstName,
// lastName, dob and a slot (startTime or bookingToken). A child's
// scheduleColumnGUID is honoured (the configured column when missing),
// minutes default to 40 as in the original.
type BookConsultationRequest struct {
	ParentFirstName   string              `json:"parentFirstName" validate:"required,max=50"`
	ParentLastName    string              `json:"parentLastName" validate:"required,max=50"`
	ParentPhone       string              `json:"parentPhone" validate:"required,max=30"`
	ParentEmail       string              `json:"parentEmail,omitempty" validate:"omitempty,max=100"`
	ParentDOB         string              `json:"parentDOB,omitempty" validate:"omitempty,dob"`
	InsuranceProvider string              `json:"insuranceProvider,omitempty" validate:"max=200"`
	InsuranceGroupID  string              `json:"insuranceGroupId,omitempty" validate:"max=100"`
	InsuranceMemberID string              `json:"insuranceMemberId,omitempty" validate:"max=100"`
	SessionID         string              `json:"sessionId,omitempty" validate:"max=200"`
	UUI               string              `json:"uui,omitempty" validate:"max=200"`
	Children          []ConsultationChild `json:"children" validate:"required,min=1,max=10,dive"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// ConsultationChild is one child of a bookConsultation: the patient and
// the slot. bookingToken (from the slot lists) may replace startTime and
// the GUIDs, as for createAppt.
type ConsultationChild struct {
	FirstName           string  `json:"firstName" validate:"required,max=50"`
	LastName            string  `json:"lastName" validate:"required,max=50"`
	DOB                 string  `json:"dob" validate:"required,dob"`
	BookingToken        string  `json:"bookingToken,omitempty"`
	StartTime           string  `json:"startTime,omitempty"`
	ScheduleViewGUID    string  `json:"scheduleViewGUID,omitempty"`
	ScheduleColumnGUID  string  `json:"scheduleColumnGUID,omitempty"`
	AppointmentTypeGUID string  `json:"appointmentTypeGUID,omitempty"`
	Minutes             FlexInt `json:"minutes,omitempty"`
}

// ConsultationResponse is every answer of bookConsultation but bad input.
type ConsultationResponse struct {
	Success        bool                 `json:"success"`
	Parent         ConsultParent        `json:"parent"`
	Children       []ConsultChildResult `json:"children"`
	FamilyID       string               `json:"familyId"`
	PartialSuccess bool                 `json:"partialSuccess"`
	AnyQueued      bool                 `json:"anyQueued"`
	ElapsedMS      int64                `json:"elapsedMs"`
	Error          string               `json:"error,omitempty"`
	OperationID    string               `json:"operationId,omitempty"`
	Debug          *ConsultDebug        `json:"_debug,omitempty"`
	LLMGuidance    ConsultationGuidance `json:"llm_guidance"`
	Status         ConsultStatus        `json:"-"`
}

// ConsultStatus is the HTTP status of a consultation answer.
type ConsultStatus int

// The statuses of docs/reference/nodered-endpoints.md §1.3.
const (
	ConsultAllBooked ConsultStatus = 200
	ConsultQueued    ConsultStatus = 202
	ConsultPartial   ConsultStatus = 207
	ConsultFailed    ConsultStatus = 500
)

// ConsultParent is the answer's parent. patientGUID is null while its
// creation is queued.
type ConsultParent struct {
	PatientGUID *string `json:"patientGUID"`
	FamilyID    string  `json:"familyId"`
	Created     bool    `json:"created"`
	Cached      bool    `json:"cached"`
	FirstName   string  `json:"firstName"`
	LastName    string  `json:"lastName"`
	Queued      bool    `json:"queued,omitempty"`
	OperationID string  `json:"operationId,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// ConsultChildResult is one child's outcome.
type ConsultChildResult struct {
	FirstName   string              `json:"firstName"`
	LastName    string              `json:"lastName"`
	PatientGUID *string             `json:"patientGUID"`
	Created     bool                `json:"created"`
	Cached      bool                `json:"cached"`
	Success     bool                `json:"success"`
	Appointment ConsultAppointment  `json:"appointment"`
	Queued      bool                `json:"queued,omitempty"`
	OperationID string              `json:"operationId,omitempty"`
	Error       string              `json:"error,omitempty"`
	ErrorType   string              `json:"error_type,omitempty"`
	LLMGuidance *ConsultChildAdvice `json:"llm_guidance,omitempty"`
}

// ConsultAppointment is a child's appointment: booked, or queued under
// operationId (the booking:set_appointment task that will make it).
type ConsultAppointment struct {
	AppointmentGUID *string `json:"appointmentGUID"`
	StartTime       string  `json:"startTime"`
	Booked          bool    `json:"booked"`
	Queued          bool    `json:"queued,omitempty"`
	OperationID     string  `json:"operationId,omitempty"`
}

// ConsultChildAdvice is a failed child's llm_guidance (slot conflict).
type ConsultChildAdvice struct {
	ErrorType      string `json:"error_type"`
	Critical       string `json:"CRITICAL"`
	ActionRequired string `json:"action_required"`
	PatientGUID    string `json:"patientGUID,omitempty"`
	VoiceResponse  string `json:"voice_response"`
}

// ConsultDebug says why an answer is not a success (validation, fatal).
type ConsultDebug struct {
	ErrorType     string   `json:"error_type"`
	MissingFields []string `json:"missing_fields,omitempty"`
	InvalidFields []string `json:"invalid_fields,omitempty"`
	ErrorMessage  string   `json:"error_message,omitempty"`
	Timestamp     string   `json:"timestamp"`
}

// ConsultationGuidance is the answer's llm_guidance: the original's
// (docs/reference/nodered-guidance.md "bookConsultation") on the base
// {timestamp, prohibited_responses} of createAppt's guidance.
// voice_response_template is always there (the 200's key); the answers
// that are not a 200 also carry the same sentence as voice_response, the
// original's key for them.
type ConsultationGuidance struct {
	ActionRequired        string   `json:"action_required"`
	VoiceResponseTemplate string   `json:"voice_response_template"`
	VoiceResponse         string   `json:"voice_response,omitempty"`
	NextState             string   `json:"next_state"`
	ErrorType             string   `json:"error_type,omitempty"`
	Critical              string   `json:"CRITICAL,omitempty"`
	TransferReason        string   `json:"transfer_reason,omitempty"`
	ProhibitedResponses   []string `json:"prohibited_responses"`
	Timestamp             string   `json:"timestamp"`
}

// ConsultValidationResponse is bad input: a body that is not JSON, has
// wrong types, misses fields, or names GUIDs or slots flowgate does not
// know. Nothing was created.
type ConsultValidationResponse struct {
	Success     bool                 `json:"success"`
	Error       string               `json:"error"`
	Debug       ConsultDebug         `json:"_debug"`
	LLMGuidance ConsultationGuidance `json:"llm_guidance"`
}

// ParseDOB parses a date of birth: MM/DD/YYYY (the original's form),
// YYYY-MM-DD, or any start-time form (a time part is ignored).
func ParseDOB(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"1/2/2006", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	t, ok := ParseStartTime(s)
	return t.Truncate(24 * time.Hour), ok
}

// NewConsultValidation builds it.
func NewConsultValidation(missing, invalid []string, errMsg string, now time.Time) ConsultValidationResponse {
	msg := errMsg
	switch {
	case len(missing) > 0:
		msg = "Missing required fields: " + strings.Join(missing, ", ")
	case len(invalid) > 0:
		msg = "Invalid fields: " + strings.Join(invalid, ", ")
	}
	return ConsultValidationResponse{
		Success: false, Error: msg,
		Debug: ConsultDebug{ErrorType: BookingErrValidation, MissingFields: missing, InvalidFields: invalid, ErrorMessage: errMsg,
			Timestamp: JSTime(now)},
		LLMGuidance: ConsultationGuidance{
			ActionRequired: ActionTransferToAgent, NextState: StateTransfer, ErrorType: ConsultErrValidation,
			TransferReason:        "missing_booking_data",
			VoiceResponseTemplate: TransferVoice, VoiceResponse: TransferVoice,
			Critical:            "Nothing was booked and no patient was created. Do NOT tell the caller the appointment is booked.",
			ProhibitedResponses: BaseProhibited(), Timestamp: JSTime(now),
		},
	}
}

// ConsultGuidance is the top-level llm_guidance of a consultation whose
// status is st (docs/reference/nodered-guidance.md "bookConsultation");
// children name the children in the voice, parentQueued / parentFailed
// give the error_type.
//
//   - 200: the original's template, its [time] placeholders left for the
//     assistant to fill from children[].appointment.startTime: "Your
//     appointment is confirmed! Ann at [time]." for one child, "Both
//     appointments are confirmed! Ann at [time] and Ben at [time]." for
//     two, "All appointments are confirmed! Ann at [time], Ben at [time]
//     and Cal at [time]." for more (flowgate's, the original has none).
//   - 202: the original's queued sentence and CRITICAL.
//   - 207: flowgate offers the failed children another time where the
//     original transfers (docs/differences.md): the original's "Ann is
//     confirmed. Ben could not be scheduled." then its per-child "Let me
//     find a different appointment time for Ben."
//   - 500: the original's transfer sentence.
func ConsultGuidance(st ConsultStatus, children []ConsultChildResult, parentQueued, parentFailed bool, opID string,
	now time.Time) ConsultationGuidance {
	var booked, failed []string
	for _, c := range children {
		switch {
		case c.Success:
			booked = append(booked, c.FirstName)
		case !c.Queued:
			failed = append(failed, c.FirstName)
		}
	}
	g := ConsultationGuidance{ProhibitedResponses: BaseProhibited(), Timestamp: JSTime(now)}
	switch st {
	case ConsultAllBooked:
		g.ActionRequired, g.NextState = ConsultActionConfirmAll, StateConfirmation
		g.VoiceResponseTemplate = ConsultBookedTemplate(booked)
		return g
	case ConsultQueued:
		g.ActionRequired, g.NextState = ConsultActionInformQueued, StateConfirmationPending
		g.VoiceResponseTemplate, g.VoiceResponse = QueuedVoice, QueuedVoice
		g.Critical = "Do NOT say there was an error. Do NOT say the appointments are confirmed: they complete in the " +
			"background (operationId " + opID + ")."
		if parentQueued {
			g.ErrorType = ConsultErrParentQueued
		}
		return g
	case ConsultPartial:
		g.ActionRequired, g.NextState = ConsultActionPartial, StatePartialSuccess
		voice := joinNames(booked) + " " + isAre(len(booked), "confirmed") + "."
		if len(failed) > 0 {
			names := joinNames(failed)
			voice += " " + names + " could not be scheduled. " + FindOtherTimeVoice(names)
		}
		g.VoiceResponseTemplate, g.VoiceResponse = voice, voice
		g.Critical = "Confirm only the children whose appointment.booked is true."
		return g
	}
	g.ActionRequired, g.NextState, g.ErrorType = ActionTransferToAgent, StateTransfer, ConsultErrFatal
	g.TransferReason = "booking_failed"
	g.VoiceResponseTemplate, g.VoiceResponse = TransferVoice, TransferVoice
	g.Critical = "Nothing was booked. Do NOT tell the caller the appointment is booked."
	if parentFailed {
		g.ErrorType = ConsultErrParentFailed
	}
	return g
}

// ConsultBookedTemplate is the 200's voice_response_template for the
// children's first names.
func ConsultBookedTemplate(names []string) string {
	at := make([]string, len(names))
	for i, n := range names {
		at[i] = n + " at [time]"
	}
	switch len(at) {
	case 0:
		return "Your appointment is confirmed!"
	case 1:
		return "Your appointment is confirmed! " + at[0] + "."
	case 2:
		return "Both appointments are confirmed! " + at[0] + " and " + at[1] + "."
	}
	return "All appointments are confirmed! " + joinNames(at) + "."
}

// FindOtherTimeVoice is the original's sentence for a child whose slot is
// taken.
func FindOtherTimeVoice(firstName string) string {
	if firstName == "" {
		firstName = "your child"
	}
	return "Let me find a different appointment time for " + firstName + "."
}

// joinNames is "A", "A and B", "A, B and C".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// NewSlotConflictAdvice is a child's guidance when its slot cannot be
// booked (taken, held by another call, another child's): the original's
// find_different_slot_for_child.
func NewSlotConflictAdvice(patientGUID, firstName string) *ConsultChildAdvice {
	return &ConsultChildAdvice{ErrorType: ConsultErrSlotConflict, ActionRequired: ConsultActionFindOtherSlot,
		Critical:      "This child's appointment is NOT booked. Offer another time from getGroupedApptSlots.",
		PatientGUID:   patientGUID,
		VoiceResponse: FindOtherTimeVoice(firstName)}
}
