package contracts

import (
	"encoding/json"
	"strconv"
	"strings"
)

// getApptSlots and getGroupedApptSlots (docs/reference/nodered-endpoints.md §1.4, §1.5). Every slot
// carries an opaque bookingToken (docs/booking.md#the-booking-calls) that createAppt accepts in
// place of startTime and the GUIDs.

// GetApptSlotsRequest is POST getApptSlots. A missing or past startDate
// becomes tomorrow (in the practice's zone); the search spans startDate
// and the 30 days after it, as the original's: endDate is accepted and
// ignored.
type GetApptSlotsRequest struct {
	StartDate         string     `json:"startDate,omitempty"`
	EndDate           string     `json:"endDate,omitempty"`
	ScheduleViewGUIDs StringList `json:"scheduleViewGUIDs,omitempty"`
	UUI               string     `json:"uui,omitempty"`
	SessionID         string     `json:"sessionId,omitempty"`
	// Ignored names the optional fields of a wrong type that were dropped
	// for their default (booking_lenient.go).
	Ignored []string `json:"-"`
}

// GetGroupedApptSlotsRequest is POST getGroupedApptSlots.
// numberOfPatients defaults to 2, timeWindowMinutes to 40.
type GetGroupedApptSlotsRequest struct {
	NumberOfPatients  FlexInt    `json:"numberOfPatients,omitempty"`
	TimeWindowMinutes FlexInt    `json:"timeWindowMinutes,omitempty"`
	StartDate         string     `json:"startDate,omitempty"`
	EndDate           string     `json:"endDate,omitempty"`
	ScheduleViewGUIDs StringList `json:"scheduleViewGUIDs,omitempty"`
	UUI               string     `json:"uui,omitempty"`
	SessionID         string     `json:"sessionId,omitempty"`
	// Ignored: as GetApptSlotsRequest's.
	Ignored []string `json:"-"`
}

// ApptSlot is one open slot: Cloud9's GetOnlineReservations fields
// (PascalCase, values as Cloud9 sends them, Minutes a string) plus the
// camelCase aliases Node-RED adds and the bookingToken. It marshals both
// spellings; it unmarshals either.
type ApptSlot struct {
	StartTime                   string
	EndTime                     string
	ScheduleViewGUID            string
	ScheduleViewDescription     string
	ScheduleColumnGUID          string
	ScheduleColumnDescription   string
	ScheduleTemplateName        string
	AppointmentClassGUID        string
	AppointmentClassDescription string
	AppointmentTypeGUID         string
	AppointmentTypeDescription  string
	Minutes                     string
	LocationGUID                string
	BookingToken                string
}

type apptSlotWire struct {
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
	Minutes                     string `json:"Minutes"`
	LocationGUID                string `json:"LocationGUID"`

	CamelStartTime           string `json:"startTime"`
	CamelEndTime             string `json:"endTime"`
	CamelScheduleViewGUID    string `json:"scheduleViewGUID"`
	CamelScheduleColumnGUID  string `json:"scheduleColumnGUID"`
	CamelAppointmentTypeGUID string `json:"appointmentTypeGUID"`
	CamelMinutes             string `json:"minutes"`
	CamelLocationGUID        string `json:"locationGUID"`
	CamelScheduleViewDesc    string `json:"scheduleViewDescription"`
	CamelScheduleColumnDesc  string `json:"scheduleColumnDescription"`

	BookingToken string `json:"bookingToken"`
}

// MarshalJSON writes the Pascal fields, the camel aliases and bookingToken.
func (s ApptSlot) MarshalJSON() ([]byte, error) {
	return json.Marshal(apptSlotWire{
		StartTime: s.StartTime, EndTime: s.EndTime, ScheduleViewGUID: s.ScheduleViewGUID,
		ScheduleViewDescription: s.ScheduleViewDescription, ScheduleColumnGUID: s.ScheduleColumnGUID,
		ScheduleColumnDescription: s.ScheduleColumnDescription, ScheduleTemplateName: s.ScheduleTemplateName,
		AppointmentClassGUID: s.AppointmentClassGUID, AppointmentClassDescription: s.AppointmentClassDescription,
		AppointmentTypeGUID: s.AppointmentTypeGUID, AppointmentTypeDescription: s.AppointmentTypeDescription,
		Minutes: s.Minutes, LocationGUID: s.LocationGUID,
		CamelStartTime: s.StartTime, CamelEndTime: s.EndTime, CamelScheduleViewGUID: s.ScheduleViewGUID,
		CamelScheduleColumnGUID: s.ScheduleColumnGUID, CamelAppointmentTypeGUID: s.AppointmentTypeGUID,
		CamelMinutes: s.Minutes, CamelLocationGUID: s.LocationGUID,
		CamelScheduleViewDesc: s.ScheduleViewDescription, CamelScheduleColumnDesc: s.ScheduleColumnDescription,
		BookingToken: s.BookingToken,
	})
}

// UnmarshalJSON reads either spelling (the Pascal one wins when both differ).
func (s *ApptSlot) UnmarshalJSON(b []byte) error {
	// Decode into a map first: encoding/json matches keys case-insensitively,
	// which would mix the two spellings unpredictably.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			raw, ok := m[k]
			if !ok {
				continue
			}
			var v string
			if json.Unmarshal(raw, &v) == nil && v != "" {
				return v
			}
			var n json.Number
			if json.Unmarshal(raw, &n) == nil {
				return n.String()
			}
		}
		return ""
	}
	*s = ApptSlot{
		StartTime: get("StartTime", "startTime"), EndTime: get("EndTime", "endTime"),
		ScheduleViewGUID: get("ScheduleViewGUID", "scheduleViewGUID"), ScheduleViewDescription: get("ScheduleViewDescription", "scheduleViewDescription"),
		ScheduleColumnGUID: get("ScheduleColumnGUID", "scheduleColumnGUID"), ScheduleColumnDescription: get("ScheduleColumnDescription", "scheduleColumnDescription"),
		ScheduleTemplateName: get("ScheduleTemplateName"), AppointmentClassGUID: get("AppointmentClassGUID"),
		AppointmentClassDescription: get("AppointmentClassDescription"),
		AppointmentTypeGUID:         get("AppointmentTypeGUID", "appointmentTypeGUID"), AppointmentTypeDescription: get("AppointmentTypeDescription"),
		Minutes: get("Minutes", "minutes"), LocationGUID: get("LocationGUID", "locationGUID"), BookingToken: get("bookingToken"),
	}
	return nil
}

// MinutesInt is Minutes as a number (0 when absent or not a number).
func (s ApptSlot) MinutesInt() int {
	n, _ := strconv.Atoi(strings.TrimSpace(s.Minutes))
	return n
}

// VoiceSlot is a slot as read to the caller; Raw is the whole slot, as in
// the original, and Time keeps Cloud9's seconds ("8:00:00 AM").
type VoiceSlot struct {
	Time string   `json:"time"`
	Date string   `json:"date"`
	Day  string   `json:"day"`
	Raw  ApptSlot `json:"raw"`
}

// NewVoiceSlot splits a slot's start time.
func NewVoiceSlot(slot ApptSlot) VoiceSlot {
	sp := SpeakStartTime(slot.StartTime)
	t := sp.Time
	if _, clock, ok := strings.Cut(strings.TrimSpace(slot.StartTime), " "); ok {
		t = strings.TrimSpace(clock) // "8:00:00 AM" as Cloud9 wrote it
	}
	return VoiceSlot{Time: t, Date: sp.Date, Day: sp.Day, Raw: slot}
}

// OnUserConfirms is llm_guidance.on_user_confirms of the slot answers.
type OnUserConfirms struct {
	Action   string `json:"action"`
	DoSay    string `json:"do_say"`
	DoNotSay string `json:"do_not_say"`
}

// OnUserDeclines is getApptSlots' llm_guidance.on_user_declines.
type OnUserDeclines struct {
	Action string `json:"action"`
	DoSay  string `json:"do_say"`
}

// SearchRange is the window searched, as sent to Cloud9. Start and End
// (getGroupedApptSlots' spelling in the original) repeat it.
type SearchRange struct {
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate"`
	Start     string `json:"start,omitempty"`
	End       string `json:"end,omitempty"`
}

// GroupedSearchRange is getGroupedApptSlots' searchRange: the window
// searched (startDate, start, end) and endDate as the request gave it —
// null when it gave none, as the original's.
type GroupedSearchRange struct {
	StartDate string     `json:"startDate"`
	EndDate   NullString `json:"endDate"`
	Start     string     `json:"start,omitempty"`
	End       string     `json:"end,omitempty"`
}

// GetApptSlotsResponse is getApptSlots' answer (OK and no-slots).
type GetApptSlotsResponse struct {
	Slots       []ApptSlot    `json:"slots"`
	Count       int           `json:"count"`
	VoiceSlots  []VoiceSlot   `json:"voiceSlots"`
	SearchRange SearchRange   `json:"searchRange"`
	Attempts    int           `json:"attempts"`
	Retries     int           `json:"retries"`
	Expanded    bool          `json:"expanded"`
	LLMGuidance SlotsGuidance `json:"llm_guidance"`
}

// SlotsGuidance is the llm_guidance of the slot lists.
type SlotsGuidance struct {
	ConfirmationTriggers []string        `json:"confirmation_triggers,omitempty"`
	GoodbyeTriggers      []string        `json:"goodbye_triggers,omitempty"`
	ProhibitedResponses  []string        `json:"prohibited_responses"`
	CurrentState         string          `json:"current_state"`
	NextState            string          `json:"next_state"`
	ActionRequired       string          `json:"action_required"`
	VoiceResponse        string          `json:"voice_response"`
	ChainOfAction        []string        `json:"chain_of_action,omitempty"`
	OnUserConfirms       *OnUserConfirms `json:"on_user_confirms,omitempty"`
	OnUserDeclines       *OnUserDeclines `json:"on_user_declines,omitempty"`
	TransferReason       string          `json:"transfer_reason,omitempty"`
	Critical             string          `json:"CRITICAL,omitempty"`
	// Timestamp is when the answer was written (set by the service).
	Timestamp string `json:"timestamp"`
}

// Slot-list actions and transfer reasons.
const (
	ActionOfferTime          = "offer_time_to_caller"
	ActionOfferGroupedTimes  = "offer_grouped_times_to_caller"
	ActionOfferSeparateTimes = "offer_separate_times_to_caller"
	ActionExpandOrTransfer   = "expand_search_or_transfer"

	TransferNoSlots  = "no_slots_after_retries"
	TransferTimeout  = "timeout"
	TransferAPIError = "api_error"
	// TransferNoSlotsFound is flowgate's: no slot, and no retry was made
	// (the list came from the cache, or the search's budget allowed one
	// try), so "after retries" would not be true.
	TransferNoSlotsFound = "no_slots"
)

// NoSlotsReason is the transfer_reason of an answer without slots after a
// search that retried retries times: the original's no_slots_after_retries
// only when it did retry.
func NoSlotsReason(retries int) string {
	if retries > 0 {
		return TransferNoSlots
	}
	return TransferNoSlotsFound
}

// The original's triggers (docs/reference/nodered-guidance.md
// "getApptSlots"); its decline triggers (no · nope · not that · different
// · another · other times) have no key of their own in its answer.
var (
	confirmationTriggers = []string{"yes", "yeah", "yep", "yup", "sure", "okay", "ok", "alright", "that works",
		"works for me", "perfect", "sounds good"}
	goodbyeTriggers = []string{"that's all", "that's it", "no thanks", "i'm good", "goodbye", "bye"}
)

// SlotOfferVoice is the original's offer of a slot: "I have 9:00:00 AM
// available on Thursday. Would that work?" (the time as Cloud9 writes it,
// the weekday).
func SlotOfferVoice(startTime string) string {
	sp := VoiceStartTime(startTime)
	if sp.Day == "" {
		return "I have " + sp.Date + " available. Would that work?"
	}
	return "I have " + sp.Time + " available on " + sp.Day + ". Would that work?"
}

// NewSlotsGuidance is getApptSlots' guidance for a non-empty list, on the
// base {timestamp (set by the service), prohibited_responses}.
func NewSlotsGuidance(first ApptSlot) SlotsGuidance {
	return SlotsGuidance{
		ConfirmationTriggers: confirmationTriggers,
		GoodbyeTriggers:      goodbyeTriggers,
		ProhibitedResponses:  BaseProhibited(),
		CurrentState:         StateScheduling,
		NextState:            StateConfirmation,
		ActionRequired:       ActionOfferTime,
		VoiceResponse:        SlotOfferVoice(first.StartTime),
		ChainOfAction: []string{
			"1. Offer the first available time",
			"2. If the caller declines, offer the next one from voiceSlots",
			"3. When the caller confirms, call book_child with that slot's bookingToken",
		},
		OnUserConfirms: &OnUserConfirms{Action: "Call book_child with patientGUID, bookingAuthToken and the confirmed slot's bookingToken",
			DoSay: "Let me book that for you.", DoNotSay: "Your appointment is booked (before book_child succeeds)"},
		OnUserDeclines: &OnUserDeclines{Action: "Offer the next slot from voiceSlots",
			DoSay: "Okay. How about the next available time?"},
	}
}

// NewNoSlotsGuidance is the original's transfer when nothing was found (or
// Cloud9 failed: reason timeout / api_error): its transfer sentence and
// its own prohibited list.
func NewNoSlotsGuidance(reason string) SlotsGuidance {
	return SlotsGuidance{
		ConfirmationTriggers: confirmationTriggers,
		GoodbyeTriggers:      goodbyeTriggers,
		ProhibitedResponses:  SlotsTransferProhibited(),
		CurrentState:         StateScheduling,
		NextState:            StateTransfer,
		ActionRequired:       ActionTransferToAgent,
		TransferReason:       reason,
		VoiceResponse:        TransferNowVoice,
		Critical:             "Do NOT invent times. Transfer the caller.",
	}
}

// SlotGroup is one set of consecutive slots for several children.
type SlotGroup struct {
	Slots     []ApptSlot `json:"slots"`
	Date      string     `json:"date"`
	Day       string     `json:"day"`
	Times     []string   `json:"times"`
	StartTime string     `json:"startTime"`
	EndTime   string     `json:"endTime"`
}

// NewSlotGroup fills date, day, times and the group's start and end.
func NewSlotGroup(slots []ApptSlot) SlotGroup {
	g := SlotGroup{Slots: slots, Times: []string{}}
	if len(slots) == 0 {
		g.Slots = []ApptSlot{}
		return g
	}
	sp := SpeakStartTime(slots[0].StartTime)
	g.Date, g.Day = sp.Date, sp.Day
	for _, s := range slots {
		g.Times = append(g.Times, SpeakStartTime(s.StartTime).Time)
	}
	g.StartTime, g.EndTime = slots[0].StartTime, slots[len(slots)-1].EndTime
	return g
}

// BookingPlanStep is one book_child call of the plan.
type BookingPlanStep struct {
	ChildIndex          int    `json:"child_index"`
	ChildLabel          string `json:"child_label"`
	StartTime           string `json:"startTime"`
	ScheduleViewGUID    string `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID"`
	Minutes             string `json:"minutes"` // a string, as in the original
	BookingToken        string `json:"bookingToken"`
	Instruction         string `json:"instruction"`
}

// NewBookingPlan makes one step per slot.
func NewBookingPlan(slots []ApptSlot) []BookingPlanStep {
	plan := make([]BookingPlanStep, 0, len(slots))
	for i, s := range slots {
		plan = append(plan, BookingPlanStep{
			ChildIndex: i + 1, ChildLabel: "Child " + strconv.Itoa(i+1), StartTime: s.StartTime,
			ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
			AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: strconv.Itoa(s.MinutesInt()), BookingToken: s.BookingToken,
			Instruction: "Book child " + strconv.Itoa(i+1) + " at " + s.StartTime + " with this bookingToken",
		})
	}
	return plan
}

// Booking modes of getGroupedApptSlots.
const (
	BookingModeConsecutive = "consecutive"
	BookingModeIndividual  = "individual"
	BookingModeNone        = "none"
)

// GroupedSlotsResponse is getGroupedApptSlots' answer.
type GroupedSlotsResponse struct {
	Groups            []SlotGroup        `json:"groups"`
	TotalGroups       int                `json:"totalGroups"`
	Slots             []ApptSlot         `json:"slots"`
	TotalSlots        int                `json:"totalSlots"`
	NumberOfPatients  int                `json:"numberOfPatients"`
	TimeWindowMinutes int                `json:"timeWindowMinutes"`
	SearchRange       GroupedSearchRange `json:"searchRange"`
	Tier              int                `json:"tier"`
	TiersSearched     []int              `json:"tiersSearched"`
	TierBased         bool               `json:"_tierBased"`
	BookingMode       string             `json:"_bookingMode"`
	FromCache         bool               `json:"_fromCache"`
	CacheSource       NullString         `json:"_cacheSource"`
	CacheDecision     CacheDecision      `json:"_cacheDecision"`
	CacheInfo         *CacheInfo         `json:"_cacheInfo"`
	Error             bool               `json:"error,omitempty"`
	LLMGuidance       GroupedGuidance    `json:"llm_guidance"`
}

// GroupedGuidance is getGroupedApptSlots' llm_guidance.
type GroupedGuidance struct {
	Model               string            `json:"model"`
	ConfirmationTrigger []string          `json:"confirmation_triggers,omitempty"`
	GoodbyeTriggers     []string          `json:"goodbye_triggers"`
	Timestamp           string            `json:"timestamp"`
	CurrentState        string            `json:"current_state"`
	NextState           string            `json:"next_state"`
	ActionRequired      string            `json:"action_required"`
	VoiceResponse       string            `json:"voice_response"`
	OnUserConfirms      *OnUserConfirms   `json:"on_user_confirms,omitempty"`
	BookingMode         string            `json:"booking_mode"`
	BookingInstructions string            `json:"BOOKING_INSTRUCTIONS,omitempty"`
	SlotUsageRule       string            `json:"SLOT_USAGE_RULE,omitempty"`
	BookingPlan         []BookingPlanStep `json:"booking_plan"`
	TransferReason      string            `json:"transfer_reason,omitempty"`
	Critical            string            `json:"CRITICAL,omitempty"`
	ProhibitedResponses []string          `json:"prohibited_responses,omitempty"`
}

// GroupedModel names the grouped-slots model: the original's value (its
// getGroupedApptSlots v21 writes the model's version into the name).
const GroupedModel = "PARENT_AS_PATIENT_V63"

// NewGroupedGuidance writes the guidance for mode (consecutive: groups[0]
// planned; individual: the first n single slots; none: transfer).
func NewGroupedGuidance(mode string, n int, plan []BookingPlanStep) GroupedGuidance {
	if plan == nil {
		plan = []BookingPlanStep{}
	}
	g := GroupedGuidance{Model: GroupedModel, CurrentState: StateScheduling, NextState: StateConfirmation,
		BookingMode: mode, BookingPlan: plan, ConfirmationTrigger: confirmationTriggers, GoodbyeTriggers: goodbyeTriggers,
		OnUserConfirms: groupedConfirms, BookingInstructions: groupedInstructions, SlotUsageRule: groupedRule}
	times := make([]string, 0, len(plan))
	for _, p := range plan {
		times = append(times, VoiceStartTime(p.StartTime).Time)
	}
	switch mode {
	case BookingModeConsecutive:
		g.ActionRequired = ActionOfferGroupedTimes
		g.VoiceResponse = "I have back-to-back appointments for all " + strconv.Itoa(n) + " children on " +
			VoiceStartTime(plan[0].StartTime).Day + " " + VoiceStartTime(plan[0].StartTime).Date + " at " +
			strings.Join(times, ", ") + ". Would that work?"
	case BookingModeIndividual:
		g.ActionRequired = ActionOfferSeparateTimes
		var parts []string
		for _, p := range plan {
			parts = append(parts, VoiceStartTime(p.StartTime).String())
		}
		g.VoiceResponse = "I don't have back-to-back times, but I can book " + strings.Join(parts, " and ") + ". Would that work?"
	default:
		// The original's grouped no-slots transfer: its sentence and its
		// prohibited list (nodered-guidance.md, "getApptSlots and
		// getGroupedApptSlots transfer").
		g.ActionRequired = ActionExpandOrTransfer
		g.NextState = StateTransfer
		g.VoiceResponse = TransferNowVoice
		g.TransferReason = TransferNoSlots
		g.Critical = "Do NOT invent times."
		g.ProhibitedResponses = SlotsTransferProhibited()
	}
	return g
}

var (
	groupedRule         = "Use each booking_plan step's bookingToken exactly once, one step per child, in order."
	groupedInstructions = "Call book_child once per child with the parent's patientGUID, bookingAuthToken, the step's bookingToken, childName and note."
	groupedConfirms     = &OnUserConfirms{Action: "Book every child with the booking_plan",
		DoSay: "Let me book those for you.", DoNotSay: "Your appointments are booked (before every book_child succeeds)"}
)

// CacheDecision is `_cacheDecision`: which slot-cache tiers were looked at
// and which answered (the original's tiered cache; flowgate has one tier,
// its Redis slot cache).
type CacheDecision struct {
	Checked        bool                 `json:"checked"`
	Tiers          map[string]TierCheck `json:"tiers"`
	UsedTier       *int                 `json:"usedTier"`
	FallbackReason NullString           `json:"fallbackReason"`
	PreGroupedHit  bool                 `json:"preGroupedHit"`
}

// TierCheck is one tier of CacheDecision.
type TierCheck struct {
	Found   bool       `json:"found"`
	Slots   int        `json:"slots"`
	Age     NullString `json:"age"`
	Status  NullString `json:"status"`
	Skipped NullString `json:"skipped"`
	Checked bool       `json:"checked"`
}

// CacheInfo is `_cacheInfo`: where the answered slots came from.
type CacheInfo struct {
	PreGroupedHit bool   `json:"preGroupedHit"`
	Source        string `json:"source"`
	Tier          int    `json:"tier"`
}

// NewGroupedErrorGuidance is the guidance of the error answer: the
// original's slot-list transfer (its sentence and prohibited list).
func NewGroupedErrorGuidance(reason string) GroupedGuidance {
	return GroupedGuidance{
		Model: GroupedModel, CurrentState: StateScheduling, NextState: StateTransfer,
		ConfirmationTrigger: confirmationTriggers, GoodbyeTriggers: goodbyeTriggers,
		ActionRequired: ActionTransferToAgent, BookingMode: BookingModeNone, BookingPlan: []BookingPlanStep{},
		VoiceResponse:  TransferNowVoice,
		TransferReason: reason, Critical: "Do NOT invent times. Transfer the caller.",
		ProhibitedResponses: SlotsTransferProhibited(),
	}
}
