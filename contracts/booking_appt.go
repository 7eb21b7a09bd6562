package contracts

import (
	"time"
)

// createAppt answers (docs/reference/nodered-endpoints.md §1.2). Every one is a
// 200; each variant is its own type so that its fields, including zero
// values the seed shows (retried:false, spacing_wait_ms:0), are pinned.

// Conversation states and actions of createAppt's llm_guidance.
const (
	StateConfirmation        = "CONFIRMATION"
	StateBookingQueued       = "BOOKING_QUEUED"
	StateConfirmationPending = "CONFIRMATION_PENDING"
	StateScheduling          = "SCHEDULING"
	StateTransfer            = "TRANSFER"
	StatePartialSuccess      = "PARTIAL_SUCCESS"
	StateBookingFailed       = "BOOKING_FAILED"

	ActionConfirmBooking       = "confirm_booking_to_caller"
	ActionConfirmAllBookings   = "confirm_all_bookings_to_caller"
	ActionInformCallerQueued   = "inform_caller_queued"
	ActionOfferAlternativeSlot = "offer_alternative_slot"
	ActionTransferToAgent      = "transfer_to_agent"
	ActionRecreatePatient      = "recreate_patient_then_retry"
	ActionUseNextSlot          = "use_next_slot_from_booking_plan"
)

// NoteResult is `_debug.note_result`: what happened to the patient note.
type NoteResult struct {
	Success bool   `json:"success"`
	Skipped bool   `json:"skipped,omitempty"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	// Queued: the note could not be added within the request and a
	// booking:set_patient_comment task will add it.
	Queued      bool   `json:"queued,omitempty"`
	OperationID string `json:"operationId,omitempty"`
}

// ---- §5.2 success --------------------------------------------------------

// ApptBookedResponse is the success answer.
type ApptBookedResponse struct {
	Success         bool            `json:"success"`
	AppointmentGUID string          `json:"appointmentGUID"`
	Message         string          `json:"message"`
	NoteAdded       bool            `json:"noteAdded"`
	Debug           ApptBookedDebug `json:"_debug"`
	LLMGuidance     BookedGuidance  `json:"llm_guidance"`
}

// ApptBookedDebug is the success answer's `_debug`.
type ApptBookedDebug struct {
	// ErrorType and Cloud9ErrorMessage are always null here: the
	// original's success answer carries them, so a prompt reading them
	// finds them.
	ErrorType          NullString `json:"error_type"`
	Cloud9ErrorMessage NullString `json:"cloud9_error_message"`
	Cloud9Result       string     `json:"cloud9_result"`
	Cloud9Status       string     `json:"cloud9_status"`
	Attempts           int        `json:"attempts"`
	Retried            bool       `json:"retried"`
	SpacingWaitMS      int64      `json:"spacing_wait_ms"`
	NoteResult         NoteResult `json:"note_result"`
	Timestamp          string     `json:"timestamp"`
	// ResponseTimestamp is when the answer was written (Timestamp: when
	// the request was taken), as in the original.
	ResponseTimestamp string        `json:"response_timestamp"`
	AuthMethod        string        `json:"auth_method,omitempty"`
	RequestParams     BookingParams `json:"request_params"`
	// Recovered: the appointment was found in Cloud9 (GetAppointmentListByPatient)
	// after an uncertain earlier attempt, or this booking had already
	// completed; nothing was sent again.
	Recovered bool `json:"recovered,omitempty"`
}

// BookedGuidance is the success answer's llm_guidance.
type BookedGuidance struct {
	Timestamp           string   `json:"timestamp"`
	CurrentState        string   `json:"current_state"`
	NextState           string   `json:"next_state"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	RequiredKeywords    []string `json:"required_keywords"`
	ChainOfAction       []string `json:"chain_of_action"`
	NeverDo             []string `json:"never_do"`
	ProhibitedResponses []string `json:"prohibited_responses"`
}

// BookedVoice is the original's confirmation sentence: "Your appointment is
// confirmed! Johnny, Tuesday 1/20/2026 at 10:00:00 AM." (the child's first
// name; the slot as VoiceStartTime says it).
func BookedVoice(childName, startTime string) string {
	slot := VoiceStartTime(startTime).String()
	if first := FirstName(childName); first != "" {
		return "Your appointment is confirmed! " + first + ", " + slot + "."
	}
	return "Your appointment is confirmed! " + slot + "."
}

// NewBookedGuidance is the original's success guidance (seed §5.2,
// docs/reference/nodered-guidance.md "booking success"): the base
// {timestamp, prohibited_responses}, CONFIRMATION → CONFIRMATION, its
// required keywords, five steps and never_do.
func NewBookedGuidance(childName, startTime string, now time.Time) BookedGuidance {
	return BookedGuidance{
		Timestamp:        JSTime(now),
		CurrentState:     StateConfirmation,
		NextState:        StateConfirmation,
		ActionRequired:   ActionConfirmBooking,
		VoiceResponse:    BookedVoice(childName, startTime),
		RequiredKeywords: append([]string(nil), bookedRequiredKeywords...),
		ChainOfAction: []string{
			"1. Confirm booking with enthusiasm",
			"2. State child name, day, date, time, location",
			"3. Ask 'Would you like the address?'",
			"4. Mention legal guardian requirement",
			"5. Ask 'Anything else?'",
		},
		NeverDo:             append([]string(nil), bookedNeverDo...),
		ProhibitedResponses: BaseProhibited(),
	}
}

// ---- failures from Cloud9 ------------------------------------------------

// ApptFailedResponse is a booking Cloud9 refused (SLOT_NOT_AVAILABLE,
// PATIENT_NOT_FOUND, INVALID_*, CLOUD9_ERROR, …) or that could neither be
// made nor queued (TIMEOUT, EXCEPTION).
type ApptFailedResponse struct {
	Success     bool            `json:"success"`
	Message     string          `json:"message"`
	NoteAdded   bool            `json:"noteAdded"`
	Debug       ApptFailedDebug `json:"_debug"`
	LLMGuidance FailedGuidance  `json:"llm_guidance"`
}

// ApptFailedDebug is a failure's `_debug`.
type ApptFailedDebug struct {
	// ErrorType is the original's name for the failure: its classifier
	// applied to Cloud9's message (OriginalErrorType), TIMEOUT / EXCEPTION
	// on the exception path. FlowgateErrorType is flowgate's own class
	// (cloud9.Classify, finer: SLOT_NOT_AVAILABLE for Cloud9's "cannot be
	// scheduled in the specified time slot", INVALID_SCHEDULE_VIEW for an
	// unknown view…), which chose the guidance; equal when there is no
	// finer one.
	ErrorType          string         `json:"error_type"`
	FlowgateErrorType  string         `json:"flowgate_error_type"`
	Cloud9Result       string         `json:"cloud9_result"`
	Cloud9Status       string         `json:"cloud9_status"`
	Cloud9ErrorMessage string         `json:"cloud9_error_message"`
	Attempts           int            `json:"attempts"`
	Retried            bool           `json:"retried"`
	SpacingWaitMS      int64          `json:"spacing_wait_ms"`
	ErrorMessage       string         `json:"error_message,omitempty"`
	RequestParams      *BookingParams `json:"request_params,omitempty"`
	// NoteResult is {"skipped":true}: no note is added to a booking that
	// failed.
	NoteResult        NoteResult `json:"note_result"`
	Timestamp         string     `json:"timestamp"`
	ResponseTimestamp string     `json:"response_timestamp"`
}

// FailedGuidance is the llm_guidance of failures.
type FailedGuidance struct {
	ErrorType           string   `json:"error_type,omitempty"`
	CurrentState        string   `json:"current_state"`
	NextState           string   `json:"next_state"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	TransferReason      string   `json:"transfer_reason,omitempty"`
	Critical            string   `json:"CRITICAL,omitempty"`
	RecoverySteps       []string `json:"recovery_steps,omitempty"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	Timestamp           string   `json:"timestamp"`
}

// NewFailedGuidance picks the original's guidance of a failure by
// flowgate's class of it (docs/reference/nodered-guidance.md):
// SLOT_NOT_AVAILABLE → "booking failed, can retry" (offer another slot),
// PATIENT_NOT_FOUND → create the patient again, TIMEOUT/EXCEPTION → the
// exception path (transfer, its own prohibited list), anything else →
// "booking failed, cannot retry" (transfer). The base {timestamp,
// prohibited_responses} is always there.
func NewFailedGuidance(class string, now time.Time) FailedGuidance {
	g := failedGuidance(class)
	g.Timestamp = JSTime(now)
	if g.ProhibitedResponses == nil {
		g.ProhibitedResponses = BaseProhibited()
	}
	return g
}

// SlotUnavailableVoice is the original's "booking failed, can retry"
// sentence; [alternative] is the assistant's to fill with a time from a
// fresh slot list.
const SlotUnavailableVoice = "That time isn't available. How about [alternative]?"

func failedGuidance(class string) FailedGuidance {
	switch class {
	case BookingErrSlotNotAvailable:
		return FailedGuidance{
			CurrentState: StateScheduling, NextState: StateScheduling, ActionRequired: ActionOfferAlternativeSlot,
			VoiceResponse: SlotUnavailableVoice,
			Critical:      "Do NOT retry this slot. Get slots again and offer the caller a different time.",
		}
	case BookingErrPatientNotFound:
		return FailedGuidance{
			ErrorType: "patient_not_found", CurrentState: StateScheduling, NextState: StateScheduling,
			ActionRequired: ActionRecreatePatient, VoiceResponse: "Let me verify your information.",
			Critical: "The patientGUID does not exist. Call chord_ortho_patient action=create FIRST",
			RecoverySteps: []string{
				"1. Call chord_ortho_patient action=create with parent info",
				"2. Get patientGUID and bookingAuthToken from response",
				"3. Call book_child again with BOTH patientGUID AND bookingAuthToken",
			},
		}
	case BookingErrTimeout, BookingErrException:
		g := FailedGuidance{
			ErrorType: "api_error", CurrentState: StateScheduling, NextState: StateTransfer, ActionRequired: ActionTransferToAgent,
			TransferReason: "api_failure",
			VoiceResponse:  TransferNowVoice,
			Critical: "Do NOT mention an error, a timeout or system problems: transfer the caller gracefully. " +
				"Do NOT tell the caller the appointment is booked.",
			ProhibitedResponses: TransferProhibited(),
		}
		if class == BookingErrTimeout {
			g.ErrorType, g.TransferReason = "timeout", "scheduling_timeout"
		}
		return g
	default:
		return FailedGuidance{
			CurrentState: StateScheduling, NextState: StateTransfer, ActionRequired: ActionTransferToAgent,
			TransferReason: "booking_failed",
			VoiceResponse:  TransferVoice,
		}
	}
}

// FailedMessage is the message of a failure: Cloud9's own text when there
// is one.
func FailedMessage(class, cloud9Message string) string {
	if cloud9Message != "" {
		return cloud9Message
	}
	switch class {
	case BookingErrSlotNotAvailable:
		return "The requested time slot is not available"
	case BookingErrPatientNotFound:
		return "Patient GUID specified does not exist"
	case BookingErrTimeout:
		return "Booking timed out and could not be queued"
	case BookingErrException:
		return "Booking failed and could not be queued"
	}
	return "Appointment booking failed"
}

// ---- §5.4 queued ---------------------------------------------------------

// ApptQueuedResponse is the queued answer.
type ApptQueuedResponse struct {
	Success     bool            `json:"success"`
	Queued      bool            `json:"queued"`
	OperationID string          `json:"operationId"`
	Message     string          `json:"message"`
	Debug       ApptQueuedDebug `json:"_debug"`
	LLMGuidance QueuedGuidance  `json:"llm_guidance"`
}

// ApptQueuedDebug is the queued answer's `_debug`.
type ApptQueuedDebug struct {
	ErrorType    string `json:"error_type"`
	SyncAttempts int    `json:"sync_attempts"`
	LastError    string `json:"last_error"`
	Timestamp    string `json:"timestamp"`
	// QueueReason says why: rate_limited (Cloud9 answered "Too many
	// requests" on every sync attempt), limiter_wait (the shared limiter's
	// wait did not fit the sync budget), uncertain_outcome (timeout or
	// dropped connection: the worker checks Cloud9 before re-sending),
	// unavailable (Cloud9 could not be reached), in_progress (another
	// attempt of the same booking is at Cloud9 right now: the worker checks
	// before sending).
	QueueReason   string         `json:"queue_reason"`
	RequestParams *BookingParams `json:"request_params,omitempty"`
}

// Queue reasons.
const (
	QueueReasonRateLimited = "rate_limited"
	QueueReasonLimiterWait = "limiter_wait"
	QueueReasonUncertain   = "uncertain_outcome"
	QueueReasonUnavailable = "unavailable"
	QueueReasonInProgress  = "in_progress"
)

// QueuedGuidance is the queued answer's llm_guidance (texts of seed §5.4
// and docs/reference/nodered-guidance.md "booking queued", on the base
// {timestamp, prohibited_responses}).
type QueuedGuidance struct {
	Timestamp           string   `json:"timestamp"`
	CurrentState        string   `json:"current_state"`
	NextState           string   `json:"next_state"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	InternalNote        string   `json:"internal_note"`
	ChainOfAction       []string `json:"chain_of_action"`
	NeverDo             []string `json:"never_do"`
	ProhibitedResponses []string `json:"prohibited_responses"`
}

// QueuedMessage is the queued answer's message.
const QueuedMessage = "Appointment request queued for processing due to high demand"

// QueuedVoice is what the caller hears when a booking is queued.
const QueuedVoice = "Your appointment request is being processed. You will receive a confirmation shortly."

// NewQueuedGuidance is the queued guidance. internal_note names the
// operation (the original's says "Appointment was rate-limited and queued
// for async processing"; flowgate also queues after a timeout).
func NewQueuedGuidance(opID string, now time.Time) QueuedGuidance {
	return QueuedGuidance{
		Timestamp:      JSTime(now),
		CurrentState:   StateBookingQueued,
		NextState:      StateConfirmationPending,
		ActionRequired: ActionInformCallerQueued,
		VoiceResponse:  QueuedVoice,
		InternalNote:   "Queued as " + opID + "; it is retried in the background until Cloud9 accepts it.",
		ChainOfAction: []string{
			"1. Inform caller their request is being processed",
			"2. Reassure them confirmation will come shortly",
			"3. Ask if there's anything else you can help with",
			"4. End call gracefully",
		},
		NeverDo:             []string{"Mention rate limit", "Mention system issue", "Say booking failed", "Transfer to agent"},
		ProhibitedResponses: BaseProhibited(),
	}
}

// NewApptQueued builds the queued answer.
func NewApptQueued(opID, errorType, reason, lastError string, syncAttempts int, params *BookingParams, now time.Time) ApptQueuedResponse {
	return ApptQueuedResponse{
		Success: false, Queued: true, OperationID: opID, Message: QueuedMessage,
		Debug: ApptQueuedDebug{ErrorType: errorType, SyncAttempts: syncAttempts, LastError: lastError,
			Timestamp: JSTime(now), QueueReason: reason, RequestParams: params},
		LLMGuidance: NewQueuedGuidance(opID, now),
	}
}
