package availability

import (
	"errors"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
)

// DefaultCooldownMinutes is the seed's cooldown after a booking (24 h),
// taken by an appointment type that names none.
const DefaultCooldownMinutes = 1440

// AppointmentType is one bookable kind of appointment (docs/holds.md).
type AppointmentType struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	DurationMinutes int      `json:"durationMinutes"`
	BufferMinutes   int      `json:"bufferMinutes"`
	CooldownMinutes int      `json:"cooldownMinutes"`
	SpecialistIDs   []string `json:"specialistIds"`
}

// Duration is DurationMinutes as a duration.
func (t AppointmentType) Duration() time.Duration {
	return time.Duration(t.DurationMinutes) * time.Minute
}

// Buffer is BufferMinutes as a duration.
func (t AppointmentType) Buffer() time.Duration { return time.Duration(t.BufferMinutes) * time.Minute }

// Cooldown is CooldownMinutes as a duration.
func (t AppointmentType) Cooldown() time.Duration {
	return time.Duration(t.CooldownMinutes) * time.Minute
}

// Specialist is one bookable resource: a person, or a Cloud9 schedule
// column (chair). A higher Priority is assigned first.
type Specialist struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Priority int    `json:"priority"`
}

// Candidate is a specialist free at a slot, with its priority: the hold
// engine's holds.Candidate, which Claim assigns from.
type Candidate = holds.Candidate

// Appointment is a booking made through /v1, kept in Redis (Store).
type Appointment struct {
	AppointmentID     string    `json:"appointmentId"`
	AppointmentTypeID string    `json:"appointmentTypeId"`
	SpecialistID      string    `json:"specialistId"`
	ClientID          string    `json:"clientId"`
	SlotStartDate     time.Time `json:"slotStartDate"`
	SlotEndDate       time.Time `json:"slotEndDate"`
	BookedAt          time.Time `json:"bookedAt"`
}

// Opening is one slot start of one specialist on an appointment type's
// grid: the specialist works then and, for the Cloud9 source, the slot is
// open. Start and End are UTC instants.
type Opening struct {
	Start, End   time.Time
	SpecialistID string
}

// Timeslot is one slot start of a type with the specialists free at it.
type Timeslot struct {
	SlotStartDate time.Time `json:"slotStartDate"`
	SlotEndDate   time.Time `json:"slotEndDate"`
	SpecialistIDs []string  `json:"specialistIds"`
}

// The errors of the package; each is wrapped in a *contracts.Error whose
// code picks the HTTP status, and matches with errors.Is.
var (
	// ErrNotFound: no such appointment type, specialist or appointment (404).
	ErrNotFound = errors.New("availability: not found")
	// ErrNotOnGrid: a slot start that is not on the type's grid (400).
	ErrNotOnGrid = errors.New("availability: slot start not on the appointment type's grid")
	// ErrSlotTaken: a slot start on the type's grid that the source no
	// longer offers because it is booked (409, details.reason slot_taken).
	ErrSlotTaken = errors.New("availability: slot start already booked")
	// ErrInvalid: a malformed value (400).
	ErrInvalid = errors.New("availability: invalid")
	// ErrConflict: an appointment id already recorded, or a change the
	// source does not allow (409).
	ErrConflict = errors.New("availability: conflict")
	// ErrUnavailable: Redis or Cloud9 could not answer (503).
	ErrUnavailable = errors.New("availability: unavailable")
)

func notFound(op, format string, args ...any) error {
	e := contracts.Errorf(contracts.CodeNotFound, format, args...)
	e.Op, e.Err = op, ErrNotFound
	return e
}

func invalidField(op, field, format string, args ...any) error {
	e := contracts.Errorf(contracts.CodeInvalid, format, args...)
	e.Op, e.Err, e.Details = op, ErrInvalid, map[string]any{"field": field}
	return e
}

func notOnGrid(op string, start time.Time) error {
	e := contracts.Errorf(contracts.CodeInvalid, "slotStartDate %s is not a slot start of this appointment type", start.UTC().Format(time.RFC3339))
	e.Op, e.Err, e.Details = op, ErrNotOnGrid, map[string]any{"field": "slotStartDate"}
	return e
}

// slotTaken is ErrSlotTaken as the web face answers a taken slot: 409
// with details.reason "slot_taken".
func slotTaken(op string, start time.Time) error {
	e := contracts.Errorf(contracts.CodeConflict, "slotStartDate %s is already booked", start.UTC().Format(time.RFC3339))
	e.Op, e.Err, e.Details = op, ErrSlotTaken, map[string]any{"field": "slotStartDate", "reason": "slot_taken"}
	return e
}

func conflict(op, format string, args ...any) error {
	e := contracts.Errorf(contracts.CodeConflict, format, args...)
	e.Op, e.Err = op, ErrConflict
	return e
}

// unavailableErr wraps a Redis or Cloud9 failure: 503, the cause logged
// and matched by errors.Is(err, ErrUnavailable).
func unavailableErr(op string, err error) error {
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "availability store could not answer",
		Err: errors.Join(ErrUnavailable, err)}
}
