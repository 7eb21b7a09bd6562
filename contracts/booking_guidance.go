package contracts

import (
	"regexp"
	"strings"
)

// BaseProhibited is the base of every guidance the original's createAppt
// guidance builder writes, and of getApptSlots' offer: {timestamp,
// prohibited_responses} with these seven, in this order.
func BaseProhibited() []string {
	return []string{"Let me check on that", "One moment while I look into this", "I'm verifying",
		"sorry", "unfortunately", "error", "problem"}
}

// TransferProhibited is the list of createAppt's exception path (a timeout
// or an exception around the call, answered with a transfer).
func TransferProhibited() []string {
	return []string{"error", "timeout", "problem", "issue", "failed", "system is down",
		"technical difficulties", "something went wrong"}
}

// SlotsTransferProhibited is the list of getApptSlots' and
// getGroupedApptSlots' transfer (no slots, timeout, API error).
func SlotsTransferProhibited() []string {
	return []string{"error", "timeout", "problem", "issue", "technical", "system", "down", "difficulties", "went wrong"}
}

// The original's transfer sentences: createAppt's "cannot retry" and
// validation answers, bookConsultation's 500 (TransferVoice); createAppt's
// exception path and the slot lists' transfer (TransferNowVoice).
const (
	TransferVoice    = "I want to connect you with a specialist who can assist you."
	TransferNowVoice = TransferVoice + " One moment while I transfer your call."
)

// The original's createAppt success lists.
var (
	bookedRequiredKeywords = []string{"scheduled", "booked", "confirmed", "all set"}
	bookedNeverDo          = []string{"Ask for re-confirmation", "Say 'Let me verify'", "Delay the confirmation"}
)

// originalErrorPatterns are the original's classifier of a refused
// SetAppointment, in its order (first match wins), case-insensitive.
var originalErrorPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"RATE_LIMIT", regexp.MustCompile(`(?i)too many requests|rate limit`)},
	{BookingErrPatientNotFound, regexp.MustCompile(`(?i)patient.*guid.*does not exist`)},
	{BookingErrSlotNotAvailable, regexp.MustCompile(`(?i)slot.*not available|time.*not available|already.*booked`)},
	{"INVALID_SCHEDULE_VIEW", regexp.MustCompile(`(?i)schedule.*view.*invalid|schedule.*view.*not found`)},
	{"INVALID_SCHEDULE_COLUMN", regexp.MustCompile(`(?i)schedule.*column.*invalid|column.*not found`)},
	{"INVALID_APPT_TYPE", regexp.MustCompile(`(?i)appointment.*type.*invalid`)},
	{"AUTHORIZATION_ERROR", regexp.MustCompile(`(?i)not authorized|authorization`)},
}

// OriginalErrorType is the error_type the original gives a Cloud9 message:
// its patterns (first match wins), else CLOUD9_ERROR when the message
// contains "error", else UNKNOWN. flowgate's own class (cloud9.Classify:
// code 8, Cloud9's documented slot-conflict and unknown-GUID texts, the
// authorization codes) is finer; the answers carry it beside this one
// (`flowgate_error_type`). Only a message Cloud9 sent is classified this
// way: a timeout, an unreachable Cloud9 or flowgate's own refusal keeps
// flowgate's name (TIMEOUT, EXCEPTION, SLOT_NOT_AVAILABLE…).
func OriginalErrorType(cloud9Message string) string {
	for _, p := range originalErrorPatterns {
		if p.re.MatchString(cloud9Message) {
			return p.name
		}
	}
	if strings.Contains(strings.ToLower(cloud9Message), "error") {
		return BookingErrCloud9
	}
	return BookingErrUnknown
}
