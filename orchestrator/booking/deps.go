package booking

import (
	"context"
	"errors"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The interfaces below are declared by this package for exactly what it
// uses; the sidecar adapts the Cloud9 client, the limiter, the booking-auth
// tokens, the session cache, the slot reservations and the slot tools to
// them.

// Cloud9 is the part of the Cloud9 client the booking path uses; the
// client (without its own limiter: Client.WithoutLimiter, the service takes
// the limiter's turn itself) implements it as is. Failures are classified
// by cloud9's own classifier (*cloud9.Error's Class); any error that is not
// a *cloud9.Error is taken as an uncertain outcome (the call may have
// reached Cloud9).
type Cloud9 interface {
	SetPatient(ctx context.Context, in cloud9.PatientInput) (patientGUID, result string, err error)
	SetAppointment(ctx context.Context, in cloud9.AppointmentInput) (appointmentGUID, result string, err error)
	SetPatientComment(ctx context.Context, patientGUID, comment string) (commentGUID, result string, err error)
	GetAppointmentListByPatient(ctx context.Context, patientGUID string) ([]cloud9.Appointment, error)
}

// Limiter is the shared per-procedure Cloud9 limiter (GCRA in Redis).
// Allow takes a turn when ok; otherwise retryAfter says when one is free.
// An error means the limiter could not answer: the service then goes ahead
// (fail open, logged) — Cloud9's own "Too many requests" is still handled.
type Limiter interface {
	Allow(ctx context.Context, procedure string) (ok bool, retryAfter time.Duration, err error)
}

// Spacer is an optional Limiter extension: the least time between two turns
// of a procedure. With it the sync path does not sleep the retry delay when
// no turn could follow within the budget, and queues at once (no dead air).
type Spacer interface {
	Spacing(procedure string) time.Duration
}

// AuthTokens issues and checks bookingAuthTokens (docs/reference/nodered-endpoints.md §1.1).
// Validate runs checks 2–5 on a token that is present and returns nil or
// an *AuthError with the code.
type AuthTokens interface {
	Issue(sessionID, patientGUID string) (token string, err error)
	Validate(token, patientGUID string) error
}

// AuthError is a refused bookingAuthToken. Code is one of
// contracts.BookingAuth*; TokenPatientGUID is the token's patient on a
// GUID mismatch (optional).
type AuthError struct {
	Code             string
	TokenPatientGUID string
}

func (e *AuthError) Error() string { return "booking auth: " + e.Code }

// Session is a bookingSessions entry (docs/reference/nodered-endpoints.md §3).
type Session struct {
	PatientGUID      string
	FamilyID         string
	BookingAuthToken string
	PatientName      string
	PhoneNumber      string
	UUI              string
	SessionID        string
	CreatedAt        time.Time
	ExpiresAt        time.Time
}

// Sessions is the bookingSessions cache. Put stores s under s.PatientGUID
// and, when set, s.UUI, for the session TTL (15 min); Lookup tries
// patientGUID first, then uui (either may be empty).
type Sessions interface {
	Put(ctx context.Context, s Session) error
	Lookup(ctx context.Context, patientGUID, uui string) (Session, bool, error)
}

// SlotHold names a slot reservation (docs/holds.md#the-hold-engine): SlotReservation:<location>:
// <date>:<time>:<column>, held by SessionID.
type SlotHold struct {
	LocationGUID       string
	StartTime          string
	ScheduleColumnGUID string
	SessionID          string
	PatientName        string
}

// ErrSlotReserved is returned (possibly wrapped) by Reservations.Reserve
// when another session holds the slot.
var ErrSlotReserved = errors.New("slot reserved by another session")

// Reservations are the cross-session slot reservations (docs/holds.md#the-hold-engine).
// Reserve holds the slot for 90 s (same session: idempotent, refreshed);
// Confirm extends the hold to 300 s; Release deletes it if this session
// holds it. Errors other than ErrSlotReserved mean Redis trouble: the
// service fails open (logs and goes on). HeldByOthers reports, per slot,
// whether a session other than sessionID holds it (fail open: all false).
type Reservations interface {
	Reserve(ctx context.Context, h SlotHold) error
	Confirm(ctx context.Context, h SlotHold) error
	Release(ctx context.Context, h SlotHold) error
	HeldByOthers(ctx context.Context, sessionID string, slots []SlotHold) ([]bool, error)
}

// SlotRef is what a bookingToken carries (docs/booking.md#the-booking-calls).
type SlotRef struct {
	StartTime           string
	ScheduleViewGUID    string
	ScheduleColumnGUID  string
	AppointmentTypeGUID string
	Minutes             int
}

// BookingTokens encodes and decodes the opaque bookingToken of a slot.
// Decode may ask the slot cache whether the slot is still offered, bounded
// by ctx.
type BookingTokens interface {
	Encode(s SlotRef) (string, error)
	Decode(ctx context.Context, token string) (SlotRef, error)
}

// SlotQuery is a slot search. Dates are MM/DD/YYYY; StartDate is never in
// the past (the service moves it to tomorrow).
type SlotQuery struct {
	StartDate         string
	EndDate           string // may be empty
	ScheduleViewGUIDs []string
	SessionID         string
}

// SlotSearch is a flat slot list (getApptSlots).
type SlotSearch struct {
	Slots       []contracts.ApptSlot
	SearchRange contracts.SearchRange
	Attempts    int
	Retries     int
	Expanded    bool
	// Cache says what the slot cache had (the grouped answer's
	// _cacheDecision); zero when the source has no cache.
	Cache SlotCacheCheck
}

// SlotCacheCheck is one slot-cache lookup: whether it was asked, found a
// list (of Slots, Age old) and whether that list was answered.
type SlotCacheCheck struct {
	Checked, Found, Used, Stale bool
	Slots                       int
	Age                         time.Duration
}

// GroupQuery is a grouped slot search.
type GroupQuery struct {
	SlotQuery
	NumberOfPatients  int
	TimeWindowMinutes int
}

// GroupSearch is a grouped slot search's result. Groups is optional: when
// nil the service groups Slots itself (docs/reference/nodered-endpoints.md §1.5's greedy rule).
type GroupSearch struct {
	Slots         []contracts.ApptSlot
	Groups        [][]contracts.ApptSlot
	SearchRange   contracts.SearchRange
	Tier          int
	TiersSearched []int
	FromCache     bool
	CacheSource   string
	CacheDecision *contracts.CacheDecision
	CacheInfo     *contracts.CacheInfo
	// Retries are the Cloud9 tries after the first (0: answered from a
	// cache, or in one try): transfer_reason says "after retries" only
	// when there were some.
	Retries int
}

// SlotSource finds open slots (cache tiers or GetOnlineReservations). The
// service filters out slots held by other sessions and adds bookingTokens.
type SlotSource interface {
	Slots(ctx context.Context, q SlotQuery) (SlotSearch, error)
	GroupedSlots(ctx context.Context, q GroupQuery) (GroupSearch, error)
}

// SlotInvalidator is an optional SlotSource extension: it stops offering a
// slot Cloud9 refused as not available, so the cached list and its
// bookingTokens follow at once (docs/reference/nodered-endpoints.md §1.2 step 9). A slot booked here
// is not invalidated but handed to SlotBooker (cache_ops.go): it leaves the
// cached lists too, while its bookingToken is still accepted for a while so
// the same request asked again decodes it and gets the idempotent answer.
type SlotInvalidator interface {
	Invalidate(ctx context.Context, s SlotRef) error
}

// Events receives booking events (queued bookings completed, queued
// patients created, queued bookings and patients failed for good).
// RedisEvents, WebhookEvents and MultiEvents implement it.
type Events interface {
	Publish(ctx context.Context, ev contracts.BookingCompletedEvent) error
}

// Queue is the async path: Worker implements it on Asynq.
type Queue interface {
	EnqueueAppointment(ctx context.Context, t AppointmentTask) error
	EnqueuePatient(ctx context.Context, t PatientTask) error
	EnqueueNote(ctx context.Context, t NoteTask) error
	Status(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error)
}
