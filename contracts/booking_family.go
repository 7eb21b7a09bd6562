package contracts

// Family error_type values (llm_guidance.error_type).
const (
	FamilyValidationError = "validation_error"
	FamilyNotFound        = "not_found"
	FamilyCloud9Error     = "api_error"
	FamilyBusy            = "rate_limited"
)

// Family action_required values.
const (
	ActionAskCaller    = "ask_caller_for_missing_information"
	ActionRetryLater   = "retry_later"
	ActionInformCaller = "inform_caller"
)

// GetPatientRequest is getPatient's body.
type GetPatientRequest struct {
	PatientGUID string `json:"patientGUID"`
}

// GetPatientByFilterRequest is getPatientByFilter's body: a phone number
// (digit-substring match through the phone index) or a filter ("Last,
// First" or a patient id, through GetPortalPatientLookup).
type GetPatientByFilterRequest struct {
	PhoneNumber  string `json:"phoneNumber"`
	Filter       string `json:"filter"`
	LocationGUID string `json:"locationGUID"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// GetPatientApptsRequest is getPatientAppts' body.
type GetPatientApptsRequest struct {
	PatientGUID string `json:"patientGUID"`
}

// EditInsuranceRequest is editInsurance's body.
type EditInsuranceRequest struct {
	PatientGUID       string `json:"patientGUID"`
	InsuranceProvider string `json:"insuranceProvider"`
	InsuranceGroupID  string `json:"insuranceGroupId"`
	InsuranceMemberID string `json:"insuranceMemberId"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// ConfirmApptRequest is confirmAppt's body; appointmentGUID is accepted
// for appointmentId (the family's other endpoints' name).
type ConfirmApptRequest struct {
	AppointmentID   string `json:"appointmentId"`
	AppointmentGUID string `json:"appointmentGUID"`
}

// CancelApptRequest is cancelAppt's body. Only appointmentGUID is
// required. The slot to give back (hold release, slot cache) is described
// by startTime, scheduleViewGUID, scheduleColumnGUID, appointmentTypeGUID
// and minutes; with patientGUID the missing ones are read from the
// patient's appointment list before canceling.
type CancelApptRequest struct {
	AppointmentGUID     string  `json:"appointmentGUID"`
	AppointmentID       string  `json:"appointmentId"`
	PatientGUID         string  `json:"patientGUID"`
	StartTime           string  `json:"startTime"`
	ScheduleViewGUID    string  `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string  `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string  `json:"appointmentTypeGUID"`
	Minutes             FlexInt `json:"minutes"`
	SessionID           string  `json:"sessionId"`
}

// GetLocationRequest is getLocation's body: one location by GUID, or all
// of them when locationGUID is empty.
type GetLocationRequest struct {
	LocationGUID string `json:"locationGUID"`
}

// FamilyGuidance is the llm_guidance of the family's refusals and
// failures.
type FamilyGuidance struct {
	ErrorType           string   `json:"error_type"`
	ActionRequired      string   `json:"action_required"`
	VoiceResponse       string   `json:"voice_response"`
	TransferReason      string   `json:"transfer_reason,omitempty"`
	Critical            string   `json:"CRITICAL,omitempty"`
	ProhibitedResponses []string `json:"prohibited_responses"`
	MissingFields       []string `json:"missing_fields,omitempty"`
	Field               string   `json:"field,omitempty"`
}

// The family's sentences. The original gave these endpoints no guidance
// (its exceptions answered 500 without JSON); flowgate's follow its style:
// no apology, no talk of systems or problems, and the original's transfer
// sentence and exception-path prohibited list where the caller is
// transferred (nodered-guidance.md, createAppt's exception path).
const (
	FamilyAskAgainVoice = "Could you repeat that information for me?"
	FamilyRetryVoice    = "Let me try that again in a moment."
)

// NewFamilyInvalidGuidance: the request lacks a field (missing) or has
// one it cannot use (field): ask the caller again.
func NewFamilyInvalidGuidance(field string, missing ...string) *FamilyGuidance {
	return &FamilyGuidance{ErrorType: FamilyValidationError, ActionRequired: ActionAskCaller,
		VoiceResponse: FamilyAskAgainVoice, ProhibitedResponses: BaseProhibited(), MissingFields: missing, Field: field}
}

// NewFamilyNotFoundGuidance: Cloud9 does not know the patient, appointment
// or location (what).
func NewFamilyNotFoundGuidance(what string) *FamilyGuidance {
	return &FamilyGuidance{ErrorType: FamilyNotFound, ActionRequired: ActionInformCaller,
		VoiceResponse:       "I couldn't find that " + what + ". Let me double-check the details with you.",
		ProhibitedResponses: BaseProhibited()}
}

// NewFamilyBusyGuidance: no Cloud9 write turn within the wait; the call
// may be tried again.
func NewFamilyBusyGuidance() *FamilyGuidance {
	return &FamilyGuidance{ErrorType: FamilyBusy, ActionRequired: ActionRetryLater, VoiceResponse: FamilyRetryVoice,
		ProhibitedResponses: BaseProhibited()}
}

// NewFamilyFailedGuidance: Cloud9 unreachable, timed out or failing: the
// original's transfer (createAppt's exception path: its sentence, reason,
// CRITICAL and prohibited list).
func NewFamilyFailedGuidance() *FamilyGuidance {
	return &FamilyGuidance{ErrorType: FamilyCloud9Error, ActionRequired: ActionTransferToAgent,
		VoiceResponse: TransferNowVoice, TransferReason: "api_failure",
		Critical:            "Do NOT mention an error, a timeout or system problems: transfer the caller gracefully.",
		ProhibitedResponses: TransferProhibited()}
}

// Record is a Cloud9 record passed through (PascalCase fields, string
// values) plus the keys the original adds.
type Record map[string]any

// PatientResponse is getPatient's answer; Patient is null for an unknown
// patient.
type PatientResponse struct {
	Patient     Record          `json:"patient"`
	Error       string          `json:"error,omitempty"`
	LLMGuidance *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// PatientSearchResponse is getPatientByFilter's answer. SearchedCount and
// TotalPatients are the phone search's (how many of the patients
// GetPatientList listed had their record searched, how many it listed).
type PatientSearchResponse struct {
	Patients      []Record        `json:"patients"`
	Count         int             `json:"count"`
	SearchedCount *int            `json:"searchedCount,omitempty"`
	TotalPatients *int            `json:"totalPatients,omitempty"`
	Error         string          `json:"error,omitempty"`
	LLMGuidance   *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// The keys of getPatientByFilter's elements (docs/reference/nodered-endpoints.md §1.6). A name
// search element is the original's: patientGUID, PatientFirstName,
// PatientLastName, PatientName and patientName (both "First Last"),
// PatientID, PatientBirthDate and birthDate (both the record's
// PatientBirthDate), LocationGUID, LocationName — strings, "" when Cloud9's
// record lacks the field — plus flowgate's firstName, lastName and
// fullName. A phone search element is the patient's GetPatientInformation
// record plus patientGUID, phones (every phone field, an array), Email, and
// PhoneSearchKeys.
//
// PhoneSearchKeys are the keys of the original's phone search element that
// Cloud9's GetPatientInformation does not answer: GetPatientList's
// PatientID and PatientStatus, and the six phone fields the original read
// (docs/reference/cloud9-api.md names one phone, PatientPhone, which flowgate reads). Each
// is a string, "" when Cloud9 has no such field.
func PhoneSearchKeys() []string {
	return []string{"PatientID", "PatientStatus", "HomePhone", "CellPhone", "WorkPhone", "Phone", "PhoneNumber", "MobilePhone"}
}

// PatientApptsResponse is getPatientAppts' answer.
type PatientApptsResponse struct {
	Appointments []Record        `json:"appointments"`
	Count        int             `json:"count"`
	Error        string          `json:"error,omitempty"`
	LLMGuidance  *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// ResultResponse is editInsurance's and confirmAppt's answer.
type ResultResponse struct {
	Success     bool            `json:"success"`
	Message     string          `json:"message"`
	Error       string          `json:"error,omitempty"`
	LLMGuidance *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// CancelResponse is cancelAppt's answer. CacheRevalidated is true when the
// slot went back into the slot cache; SlotReleased when a hold or
// reservation of it was released; CooldownCleared when the appointment's
// cooldown was.
type CancelResponse struct {
	Success          bool            `json:"success"`
	Message          string          `json:"message"`
	CacheRevalidated bool            `json:"_cacheRevalidated"`
	SlotReleased     bool            `json:"slotReleased"`
	CooldownCleared  bool            `json:"cooldownCleared"`
	Error            string          `json:"error,omitempty"`
	LLMGuidance      *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// LocationResponse is getLocation's answer: {success, location,
// matchType "guid"} for one, {success, locations, count, location} for
// all (location is the configured practice location, else the first).
type LocationResponse struct {
	Success     bool            `json:"success"`
	Location    Record          `json:"location"`
	MatchType   string          `json:"matchType,omitempty"`
	Locations   []Record        `json:"locations,omitempty"`
	Count       *int            `json:"count,omitempty"`
	Error       string          `json:"error,omitempty"`
	LLMGuidance *FamilyGuidance `json:"llm_guidance,omitempty"`
}

// OperationGuidance tells the assistant what an operation's state means.
type OperationGuidance struct {
	CurrentState   string `json:"current_state"`
	ActionRequired string `json:"action_required"`
	VoiceResponse  string `json:"voice_response"`
}

// OperationStatusResponse is one queued operation's state (GET
// {base}/checkOperationStatus?operationId=…): status (pending, processing,
// completed, failed), attempts, the last error and the result, for patient
// and booking operations alike. Found is false for an id flowgate does not
// know (never queued, or past its retention).
type OperationStatusResponse struct {
	Success       bool               `json:"success"`
	Found         bool               `json:"found"`
	OperationID   string             `json:"operationId"`
	Status        string             `json:"status,omitempty"`
	OperationType string             `json:"operationType,omitempty"`
	Attempts      int                `json:"attempts"`
	MaxAttempts   int                `json:"maxAttempts"`
	LastError     *string            `json:"lastError"`
	Result        *QueueOpResult     `json:"result"`
	Operation     *QueueOperation    `json:"operation,omitempty"`
	Message       string             `json:"message"`
	LLMGuidance   *OperationGuidance `json:"llm_guidance,omitempty"`
	Error         string             `json:"error,omitempty"`
}

// Slot change events: cancelAppt publishes one on SlotChangesChannel when
// a cancellation frees a slot, for live listeners (boards, SSE bridges).
const (
	SlotChangesChannel = "flowgate:booking:slots"
	EventSlotReleased  = "slot_released"
)

// SlotChangeEvent is one slot change.
type SlotChangeEvent struct {
	Event               string `json:"event"`
	AppointmentGUID     string `json:"appointmentGUID"`
	StartTime           string `json:"startTime,omitempty"`
	ScheduleViewGUID    string `json:"scheduleViewGUID,omitempty"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID,omitempty"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID,omitempty"`
	Minutes             int    `json:"minutes,omitempty"`
	LocationGUID        string `json:"locationGUID,omitempty"`
	At                  string `json:"at"`
}
