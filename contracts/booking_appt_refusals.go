package contracts

import (
	"strconv"
	"strings"
	"time"
)

// ---- §5.3 booking auth rejected ------------------------------------------

// ApptAuthRejectedResponse is the booking-auth refusal.
type ApptAuthRejectedResponse struct {
	Success     bool         `json:"success"`
	Message     string       `json:"message"`
	Debug       AuthDebug    `json:"_debug"`
	LLMGuidance AuthGuidance `json:"llm_guidance"`
}

// AuthDebug is the refusal's `_debug`.
type AuthDebug struct {
	ErrorType           string `json:"error_type"`
	ReceivedPatientGUID string `json:"received_patientGUID"`
	// CorrectPatientGUID is the token's patientGUID on a mismatch, null
	// otherwise (as in the original).
	CorrectPatientGUID NullString `json:"correct_patientGUID"`
	AuthMode           string     `json:"auth_mode,omitempty"`
	Timestamp          string     `json:"timestamp"`
}

// AuthGuidance is the refusal's llm_guidance (texts of seed §5.3), on the
// base {timestamp, prohibited_responses} of every createAppt guidance.
type AuthGuidance struct {
	ErrorType           string   `json:"error_type"`
	VoiceResponse       string   `json:"voice_response"`
	Critical            string   `json:"CRITICAL"`
	CorrectPatientGUID  string   `json:"correct_patientGUID,omitempty"`
	RecoverySteps       []string `json:"recovery_steps"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	Timestamp           string   `json:"timestamp"`
}

// AuthMessage is the refusal message of each code.
func AuthMessage(code string) string {
	switch code {
	case BookingAuthMissing:
		return "Booking authorization required, must create patient first"
	case BookingAuthMalformed:
		return "Invalid booking authorization token format, must create patient again"
	case BookingAuthSignatureInvalid:
		return "Invalid booking authorization token signature, must create patient again"
	case BookingAuthExpired:
		return "Token expired, must create patient again"
	case BookingAuthGUIDMismatch:
		return "patientGUID does not match booking authorization token"
	}
	return "Booking authorization failed, must create patient again"
}

// NewApptAuthRejected builds the refusal. correctGUID is the token's
// patientGUID on a mismatch (the token's payload is readable by whoever
// holds it, so this reveals nothing new).
func NewApptAuthRejected(code, receivedGUID, correctGUID, mode string, now time.Time) ApptAuthRejectedResponse {
	return ApptAuthRejectedResponse{
		Success: false, Message: AuthMessage(code),
		Debug: AuthDebug{ErrorType: code, ReceivedPatientGUID: receivedGUID, CorrectPatientGUID: NullString(correctGUID),
			AuthMode: mode, Timestamp: JSTime(now)},
		LLMGuidance: AuthGuidance{
			ErrorType:          "booking_auth_failed",
			VoiceResponse:      "Let me verify your information.",
			Critical:           "Call chord_ortho_patient action=create FIRST",
			CorrectPatientGUID: correctGUID,
			RecoverySteps: []string{
				"1. Call chord_ortho_patient action=create with parent info",
				"2. Get patientGUID and bookingAuthToken from response",
				"3. Call book_child with BOTH patientGUID AND bookingAuthToken",
			},
			ProhibitedResponses: BaseProhibited(),
			Timestamp:           JSTime(now),
		},
	}
}

// ---- VALIDATION_ERROR ----------------------------------------------------

// ApptValidationResponse answers a request that cannot be booked as sent:
// missing or invalid fields, a bookingToken that does not decode, and also
// a body that is not JSON, has wrong types or is too large (never a 500).
type ApptValidationResponse struct {
	Success     bool               `json:"success"`
	Message     string             `json:"message"`
	Debug       ValidationDebug    `json:"_debug"`
	LLMGuidance ValidationGuidance `json:"llm_guidance"`
}

// ValidationDebug is its `_debug`. missing_fields is always a list.
type ValidationDebug struct {
	ErrorType     string   `json:"error_type"`
	MissingFields []string `json:"missing_fields"`
	InvalidFields []string `json:"invalid_fields,omitempty"`
	// DefaultedFields are fields named in MissingFields (the caller did
	// not send them) that a configured default would have filled.
	DefaultedFields []string       `json:"defaulted_fields,omitempty"`
	ErrorMessage    string         `json:"error_message,omitempty"`
	ReceivedParams  map[string]any `json:"received_params"`
	Timestamp       string         `json:"timestamp"`
}

// ValidationGuidance is its llm_guidance.
type ValidationGuidance struct {
	CurrentState        string   `json:"current_state"`
	NextState           string   `json:"next_state"`
	ActionRequired      string   `json:"action_required"`
	TransferReason      string   `json:"transfer_reason"`
	VoiceResponse       string   `json:"voice_response"`
	Critical            string   `json:"CRITICAL"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	Timestamp           string   `json:"timestamp"`
}

// NewApptValidation builds it. received are the request's fields with
// secrets (bookingAuthToken) reduced to whether they were present.
func NewApptValidation(missing, invalid []string, errMsg string, received map[string]any, now time.Time) ApptValidationResponse {
	if missing == nil {
		missing = []string{}
	}
	if received == nil { // nothing readable: the original's keys, null
		received = map[string]any{"patientGUID": nil, "scheduleViewGUID": nil, "scheduleColumnGUID": nil}
	}
	msg := "Missing required fields: " + strings.Join(missing, ", ")
	reason := "missing_scheduling_data"
	switch {
	case len(missing) == 0 && len(invalid) > 0:
		msg = "Invalid fields: " + strings.Join(invalid, ", ")
		reason = "invalid_scheduling_data"
	case len(missing) == 0:
		msg = "Invalid request: " + errMsg
		reason = "invalid_request"
	}
	return ApptValidationResponse{
		Success: false, Message: msg,
		Debug: ValidationDebug{ErrorType: BookingErrValidation, MissingFields: missing, InvalidFields: invalid,
			ErrorMessage: errMsg, ReceivedParams: received, Timestamp: JSTime(now)},
		LLMGuidance: ValidationGuidance{
			CurrentState: StateTransfer, NextState: StateTransfer, ActionRequired: ActionTransferToAgent, TransferReason: reason,
			VoiceResponse:       TransferVoice,
			Critical:            "Do NOT tell the caller the appointment is booked.",
			ProhibitedResponses: BaseProhibited(),
			Timestamp:           JSTime(now),
		},
	}
}

// ---- slot reserved by another session (docs/holds.md) ---------------------

// ApptSlotReservedResponse: another call is booking this slot right now.
type ApptSlotReservedResponse struct {
	Success     bool                 `json:"success"`
	Message     string               `json:"message"`
	Debug       SlotReservedDebug    `json:"_debug"`
	LLMGuidance SlotReservedGuidance `json:"llm_guidance"`
}

// SlotReservedDebug is its `_debug`.
type SlotReservedDebug struct {
	ErrorType string `json:"error_type"`
	StartTime string `json:"startTime"`
	SlotKey   string `json:"slot_key,omitempty"`
	Timestamp string `json:"timestamp"`
}

// SlotReservedGuidance is its llm_guidance: the original's "booking
// failed, can retry" guidance (the slot is taken) with flowgate's recovery
// steps.
type SlotReservedGuidance struct {
	ErrorType           string   `json:"error_type"`
	CurrentState        string   `json:"current_state"`
	NextState           string   `json:"next_state"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	Critical            string   `json:"CRITICAL"`
	RecoverySteps       []string `json:"recovery_steps"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	Timestamp           string   `json:"timestamp"`
}

// NewApptSlotReserved builds it.
func NewApptSlotReserved(startTime, slotKey string, now time.Time) ApptSlotReservedResponse {
	return ApptSlotReservedResponse{
		Success: false, Message: "This time slot is reserved by another session",
		Debug: SlotReservedDebug{ErrorType: BookingErrSlotReserved, StartTime: startTime, SlotKey: slotKey, Timestamp: JSTime(now)},
		LLMGuidance: SlotReservedGuidance{
			ErrorType: "slot_reserved", CurrentState: StateScheduling, NextState: StateScheduling,
			ActionRequired: ActionOfferAlternativeSlot,
			VoiceResponse:  SlotUnavailableVoice,
			Critical:       "Do NOT retry this slot. Get slots again and offer the caller a different time.",
			RecoverySteps: []string{
				"1. Call the slots action again (reserved slots are left out)",
				"2. Offer the caller the next available time",
				"3. Book the time the caller confirms",
			},
			ProhibitedResponses: BaseProhibited(),
			Timestamp:           JSTime(now),
		},
	}
}

// ---- duplicate slot (docs/reference/nodered-endpoints.md §1.2 Duplicate) ---------------------------

// ApptDuplicateSlotResponse: the slot is already booked (or being booked)
// for another child under the same patient, or named twice in one batch.
// Never a confirmation: the other child's appointment is not this one's.
type ApptDuplicateSlotResponse struct {
	Success     bool                  `json:"success"`
	Message     string                `json:"message"`
	Debug       DuplicateSlotDebug    `json:"_debug"`
	LLMGuidance DuplicateSlotGuidance `json:"llm_guidance"`
}

// DuplicateSlotDebug is its `_debug`. slot_key is "<startTime>|<column>";
// already_booked_slots the slot keys this answer knows to be taken.
type DuplicateSlotDebug struct {
	ErrorType          string   `json:"error_type"`
	SlotKey            string   `json:"slot_key"`
	SessionID          string   `json:"session_id"`
	AlreadyBookedSlots []string `json:"already_booked_slots"`
	Timestamp          string   `json:"timestamp"`
}

// DuplicateSlotGuidance is its llm_guidance (the original's duplicate-slot
// guidance, on the base {timestamp, prohibited_responses}).
type DuplicateSlotGuidance struct {
	ErrorType           string   `json:"error_type"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	Critical            string   `json:"CRITICAL"`
	RecoverySteps       []string `json:"recovery_steps"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	Timestamp           string   `json:"timestamp"`
}

// DuplicateSlotMessage is the duplicate slot answer's message.
const DuplicateSlotMessage = "This time slot is already booked for another child in this call. Use the next slot from the booking plan."

// NewApptDuplicateSlot builds it.
func NewApptDuplicateSlot(slotKey, sessionID string, now time.Time) ApptDuplicateSlotResponse {
	return ApptDuplicateSlotResponse{
		Success: false, Message: DuplicateSlotMessage,
		Debug: DuplicateSlotDebug{ErrorType: BookingErrDuplicateSlot, SlotKey: slotKey, SessionID: sessionID,
			AlreadyBookedSlots: []string{slotKey}, Timestamp: JSTime(now)},
		LLMGuidance: DuplicateSlotGuidance{
			ErrorType: "duplicate_slot_attempt", ActionRequired: ActionUseNextSlot,
			VoiceResponse: "I already have that time booked for another child. Let me use a different time.",
			Critical: "Do NOT tell the caller this child is booked. Each child needs a different slot: book this child " +
				"in the next slot of the booking plan.",
			RecoverySteps: []string{
				"1. Take the next unused slot from the booking plan (or get slots again)",
				"2. Book this child in that slot",
				"3. Confirm each child with their own day and time",
			},
			ProhibitedResponses: BaseProhibited(),
			Timestamp:           JSTime(now),
		},
	}
}

// ---- batch (children[]) --------------------------------------------------

// ApptBatchResponse answers a batch: each child booked in order.
type ApptBatchResponse struct {
	Success            bool             `json:"success"`
	TotalChildren      int              `json:"totalChildren"`
	SuccessfulBookings int              `json:"successfulBookings"`
	FailedBookings     int              `json:"failedBookings"`
	QueuedBookings     int              `json:"queuedBookings"`
	Results            []ApptBatchChild `json:"results"`
	Debug              BatchDebug       `json:"_debug"`
	LLMGuidance        BatchGuidance    `json:"llm_guidance"`
}

// ApptBatchChild is one child's result.
type ApptBatchChild struct {
	ChildName       string `json:"childName"`
	Success         bool   `json:"success"`
	AppointmentGUID string `json:"appointmentGUID,omitempty"`
	StartTime       string `json:"startTime"`
	Date            string `json:"date"`
	Time            string `json:"time"`
	Day             string `json:"day"`
	// Attempts is on every child, as in the original: the Cloud9 calls
	// made for it (0 for a child refused before any).
	Attempts    int    `json:"attempts"`
	Queued      bool   `json:"queued,omitempty"`
	OperationID string `json:"operationId,omitempty"`
	NoteAdded   bool   `json:"noteAdded,omitempty"`
	Message     string `json:"message"`
	// ErrorType is the original's name (as createAppt's _debug.error_type);
	// FlowgateErrorType flowgate's finer class when it differs.
	ErrorType         string `json:"error_type,omitempty"`
	FlowgateErrorType string `json:"flowgate_error_type,omitempty"`
}

// spoken is the child's results[] day/date/time (VoiceStartTime): the
// voice_response reads the same text as results[], as the original's does.
func (c ApptBatchChild) spoken() SpokenSlot {
	if c.Date == "" && c.Day == "" && c.Time == "" {
		return VoiceStartTime(c.StartTime)
	}
	return SpokenSlot{Day: c.Day, Date: c.Date, Time: c.Time}
}

// BatchDebug is the batch's `_debug`.
type BatchDebug struct {
	BatchMode         bool   `json:"batch_mode"`
	ChildrenProcessed int    `json:"children_processed"`
	AnyQueued         bool   `json:"any_queued"`
	Timestamp         string `json:"timestamp"`
	ResponseTimestamp string `json:"response_timestamp"`
}

// FailedChild names a child whose booking failed.
type FailedChild struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// BatchGuidance is the batch's llm_guidance, on the base {timestamp,
// prohibited_responses} of every createAppt guidance.
type BatchGuidance struct {
	CurrentState        string        `json:"current_state"`
	ActionRequired      string        `json:"action_required"`
	VoiceResponse       string        `json:"voice_response"`
	ChainOfAction       []string      `json:"chain_of_action"`
	SuccessfulChildren  []string      `json:"successful_children"`
	QueuedChildren      []string      `json:"queued_children"`
	FailedChildren      []FailedChild `json:"failed_children"`
	ProhibitedResponses []string      `json:"prohibited_responses"`
	Timestamp           string        `json:"timestamp"`
}

// NewApptBatch totals the children's results and writes the guidance:
// CONFIRMATION when all are booked, BOOKING_QUEUED when the rest are
// queued, PARTIAL_SUCCESS when some failed, BOOKING_FAILED when none was
// booked or queued (the original: BOOKING_QUEUED whenever one is queued,
// else PARTIAL_SUCCESS; docs/differences.md). The voice is the original's
// (docs/reference/nodered-guidance.md "Batch"): "All appointments are
// confirmed! A on <slot>. And B on <slot>." when all are booked; "I was
// able to book N appointments. M appointment(s) is/are being processed
// and you will receive confirmation shortly." when some are queued; a
// child that failed is named with bookConsultation's sentences ("B could
// not be scheduled. Let me find a different appointment time for B.").
func NewApptBatch(results []ApptBatchChild, now time.Time) ApptBatchResponse {
	if results == nil {
		results = []ApptBatchChild{}
	}
	r := ApptBatchResponse{TotalChildren: len(results), Results: results}
	g := BatchGuidance{SuccessfulChildren: []string{}, QueuedChildren: []string{}, FailedChildren: []FailedChild{},
		ProhibitedResponses: BaseProhibited(), Timestamp: JSTime(now)}
	var booked, failed []string
	for _, c := range results {
		name := c.ChildName
		if name == "" {
			name = "your child"
		}
		switch {
		case c.Success:
			r.SuccessfulBookings++
			g.SuccessfulChildren = append(g.SuccessfulChildren, c.ChildName)
			booked = append(booked, FirstName(name)+" on "+c.spoken().String())
		case c.Queued:
			r.QueuedBookings++
			g.QueuedChildren = append(g.QueuedChildren, c.ChildName)
		default:
			r.FailedBookings++
			g.FailedChildren = append(g.FailedChildren, FailedChild{Name: c.ChildName, Reason: c.Message})
			failed = append(failed, FirstName(name))
		}
	}
	r.Success = r.TotalChildren > 0 && r.SuccessfulBookings == r.TotalChildren
	r.Debug = BatchDebug{BatchMode: true, ChildrenProcessed: len(results), AnyQueued: r.QueuedBookings > 0, Timestamp: JSTime(now),
		ResponseTimestamp: JSTime(now)}
	var voice []string
	switch {
	case r.QueuedBookings > 0:
		if r.SuccessfulBookings > 0 {
			voice = append(voice, "I was able to book "+countOf(r.SuccessfulBookings, "appointment")+".")
		}
		verb := " are"
		if r.QueuedBookings == 1 {
			verb = " is"
		}
		voice = append(voice, countOf(r.QueuedBookings, "appointment")+verb+
			" being processed and you will receive confirmation shortly.")
	case r.FailedBookings == 0 && len(booked) > 0:
		// The original's sentence, without a full stop after the last
		// child (nodered-guidance.md "Batch").
		voice = append(voice, "All appointments are confirmed! "+strings.Join(booked, ". And "))
	case len(booked) > 0:
		voice = append(voice, strings.Join(booked, ". And ")+" "+isAre(len(booked), "confirmed")+".")
	}
	if len(failed) > 0 {
		names := strings.Join(failed, " and ")
		voice = append(voice, names+" could not be scheduled. Let me find a different appointment time for "+names+".")
	}
	g.ActionRequired = ActionConfirmAllBookings
	switch {
	case r.FailedBookings == 0 && r.QueuedBookings == 0 && r.TotalChildren > 0:
		g.CurrentState = StateConfirmation
	case r.FailedBookings == 0 && r.QueuedBookings > 0:
		g.CurrentState = StateBookingQueued
	case r.SuccessfulBookings+r.QueuedBookings > 0:
		g.CurrentState = StatePartialSuccess
	default:
		g.CurrentState = StateBookingFailed
		g.ActionRequired = ActionOfferAlternativeSlot
	}
	g.VoiceResponse = strings.Join(voice, " ")
	g.ChainOfAction = []string{
		"1. Confirm each booked child with name, day, date and time",
		"2. For queued children, say confirmation will come shortly",
		"3. For failed children, offer another time",
		"4. Ask 'Anything else?'",
	}
	r.LLMGuidance = g
	return r
}

// countOf is "1 appointment", "2 appointments".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// isAre is "is <adj>" for one, "are <adj>" for more.
func isAre(n int, adj string) string {
	if n == 1 {
		return "is " + adj
	}
	return "are " + adj
}
