package booking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Auth modes (BOOKING_AUTH_MODE).
const (
	// AuthModeToken: a valid bookingAuthToken is required.
	AuthModeToken = "token"
	// AuthModeSession (default): a valid token, or — without one — a
	// session-cache entry for the same patientGUID.
	AuthModeSession = "session"

	// BOOKING_PATIENT_MODEL values (Config.PatientModel) and the default.
	PatientModelParent     = "parent"
	PatientModelIndividual = "individual"
	DefaultPatientModel    = PatientModelParent
	// AuthModeLegacy: as session, and also any well-formed patientGUID
	// without a token (the Node-RED "legacy" path; only when chosen).
	AuthModeLegacy = "legacy"
)

// The original's defaults (docs/reference/nodered-endpoints.md §5).
const (
	DefaultSyncBudget          = 10 * time.Second
	DefaultInCallWait          = 15 * time.Second
	DefaultSyncRetryDelay      = 5 * time.Second
	DefaultSyncAttempts        = 2
	DefaultPatientSyncAttempts = 3
	DefaultAsyncMaxAttempts    = 10
	DefaultBackoffBase         = 10 * time.Second
	DefaultBackoffMax          = 300 * time.Second
	DefaultCompletedRetention  = 24 * time.Hour
	DefaultTaskTimeout         = 2 * time.Minute // the least: see Config.TaskTimeout
	DefaultEventTimeout        = 15 * time.Second
	DefaultWriteTimeout        = 45 * time.Second
	DefaultLeaseMargin         = 15 * time.Second
	DefaultLeaseGrace          = 10 * time.Second
	DefaultRedisTimeout        = time.Second
	DefaultMinutes             = 45
	DefaultSessionTTL          = 15 * time.Minute
	DefaultGroupedPatients     = 2
	DefaultTimeWindowMinutes   = 40

	// The seed's hard-coded values, now settings.
	DefaultScheduleColumnGUID  = cloud9.SeedChair8GUID // Chair 8
	DefaultScheduleViewGUID    = cloud9.SeedScheduleViewGUID
	DefaultAppointmentTypeGUID = cloud9.SeedAppointmentTypeGUID
	DefaultLocationGUID        = cloud9.SeedLocationGUID // CDH Allegheny 202

	// DefaultBasePath is the Node-RED endpoints' path prefix
	// (NODERED_BASE_PATH); queued answers name DefaultBasePath +
	// "/queue-status" unless StatusEndpoint says otherwise.
	DefaultBasePath = "/chord/ortho-prd"
)

// Config configures the service and the worker. Zero values take the
// defaults (the seed's values).
type Config struct {
	// SyncBudget bounds how long createAppt / createPatient may spend
	// waiting (limiter turns and the retry delay) before answering queued
	// (BOOKING_SYNC_BUDGET).
	SyncBudget time.Duration
	// InCallWait is how long a booking in a call (createAppt, its batch,
	// bookConsultation; not the web face's BookHeld) may wait in the call for its
	// admission to the shared write window before it is queued
	// (BOOKING_INCALL_WAIT; default 15 s, about what the original waited
	// before confirming after one code 8). The call's budget is the larger
	// of it and SyncBudget (Config.callBudget).
	InCallWait time.Duration
	// SyncRetryDelay is the wait before the second sync attempt after a
	// rate-limit answer.
	SyncRetryDelay time.Duration
	// SyncAttempts is createAppt's sync attempts (2); PatientSyncAttempts
	// createPatient's (3).
	SyncAttempts        int
	PatientSyncAttempts int
	// AsyncMaxAttempts is the attempts of a queued operation (10): Asynq
	// MaxRetry is AsyncMaxAttempts−1.
	AsyncMaxAttempts int
	// Backoff gives the delay after a queued operation's failed attempts.
	// Default BackoffPolicy{10s, 300s}: 20 s after the first, 40 s, 80 s,
	// 160 s, then 300 s (min(300 s, 10 s·2^n), n = attempts made).
	Backoff asynqrt.RetryPolicy
	// QueueDelay is when a newly queued operation first runs. Default
	// 10 s (the backoff at n = 0).
	QueueDelay time.Duration
	// CompletedRetention keeps completed operations visible (queue-status,
	// Asynqmon). Default 24h.
	CompletedRetention time.Duration
	// TaskTimeout bounds one run of a queued operation. Default: the
	// longest run of an appointment task at the Cloud9 timeouts below —
	// two appointment-list reads, the write, the note, its event, a write
	// window's wait (1 min) and LeaseGrace — and at least 2 min: 4 min 25 s
	// with every default. It must hold one patient step of a consultation
	// (ReadTimeout + WriteTimeout + NoteTimeout + EventTimeout), the most a
	// run of one starts with time short (handleConsultation).
	TaskTimeout time.Duration
	// WriteTimeout is the Cloud9 client's timeout of a write
	// (SetAppointment); LeaseMargin is added to it for the lease an attempt
	// holds on a booking identity while it checks and sends (Marks).
	// Defaults 45 s and 15 s.
	WriteTimeout time.Duration
	LeaseMargin  time.Duration
	// NoteTimeout and ReadTimeout are the Cloud9 client's timeouts of
	// SetPatientComment and of a read (CLOUD9_NOTE_TIMEOUT,
	// CLOUD9_READ_TIMEOUT), which size TaskTimeout. Defaults
	// cloud9.DefaultNoteTimeout and cloud9.DefaultReadTimeout.
	NoteTimeout time.Duration
	ReadTimeout time.Duration
	// EventTimeout bounds the delivery of each event a queued operation
	// publishes (booking_completed, patient_created, booking_failed): the
	// Redis publish and BOOKING_EVENTS_WEBHOOK's POST (10 s). Default 15 s.
	EventTimeout time.Duration
	// LeaseGrace is how long the lease is kept after an uncertain outcome
	// (timeout, dropped connection), so a late commit at Cloud9 lands
	// before anyone checks for it. Default 10 s.
	LeaseGrace time.Duration
	// RedisTimeout bounds each Redis step of the slot endpoints (the
	// reservation filter; the sidecar gives the slot source's cache calls
	// the same bound), which fail open past it (BOOKING_REDIS_TIMEOUT).
	// Default 1 s. createAppt, createPatient and queue-status are bounded
	// by SyncBudget instead (budget.go).
	RedisTimeout time.Duration
	// Queue is the Asynq queue of booking tasks. Default critical.
	Queue string

	// AuthMode is token | session (default) | legacy.
	AuthMode string
	// PatientModel is createPatient's guidance model: PatientModelParent
	// (default, docs/booking.md#the-booking-calls) or PatientModelIndividual (the original's current
	// guidance: each child its own patient). BOOKING_PATIENT_MODEL.
	PatientModel string

	DefaultScheduleColumnGUID string
	// Chairs are the practice's configured chairs (CLOUD9_SLOT_COLUMNS;
	// nil: every chair). createAppt books a column that is not one of them
	// on DefaultScheduleColumnGUID, as the original booked Chair 8 whatever
	// was sent: a stale or invented GUID never books another chair.
	Chairs                     []string
	DefaultScheduleViewGUID    string
	DefaultAppointmentTypeGUID string
	DefaultMinutes             int
	LocationGUID               string
	ProviderGUID               string

	// SessionTTL is how long a created patient's session is cached (and
	// the bookingAuthToken lives). Default 15 min.
	SessionTTL time.Duration
	// StatusEndpoint is named in queued answers (check_status_endpoint).
	// Default "/chord/ortho-prd/queue-status".
	StatusEndpoint string
	// StatusScanLimit bounds how many tasks per Asynq state queue-status
	// reads. Default 10000.
	StatusScanLimit int

	// PracticeZone is the practice's zone (PRACTICE_TIME_ZONE): a missing
	// or past startDate becomes the day after today there
	// (slots.Tomorrow). Default UTC.
	PracticeZone *time.Location

	Now        func() time.Time
	Sleep      func(ctx context.Context, d time.Duration) error // default: timeutil.Sleep
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// BackoffPolicy is the seed's async backoff min(Max, Base·2^n) where n is
// the number of attempts made so far (asynq passes the failures before the
// current one, so n = that + 1): 20 s, 40 s, 80 s, 160 s, 300 s, … with the
// defaults.
type BackoffPolicy struct {
	Base time.Duration
	Max  time.Duration
}

// RetryDelay implements asynqrt.RetryPolicy.
func (b BackoffPolicy) RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	return asynqrt.Exponential{Base: b.Base, Max: b.Max}.RetryDelay(n+1, err, t)
}

func (c Config) withDefaults() Config {
	c.SyncBudget = valutil.ValOrDefault(c.SyncBudget, DefaultSyncBudget)
	c.InCallWait = valutil.ValOrDefault(c.InCallWait, DefaultInCallWait)
	c.SyncRetryDelay = valutil.ValOrDefault(c.SyncRetryDelay, DefaultSyncRetryDelay)
	c.SyncAttempts = valutil.ValOrDefault(c.SyncAttempts, DefaultSyncAttempts)
	c.PatientSyncAttempts = valutil.ValOrDefault(c.PatientSyncAttempts, DefaultPatientSyncAttempts)
	c.AsyncMaxAttempts = valutil.ValOrDefault(c.AsyncMaxAttempts, DefaultAsyncMaxAttempts)
	c.Backoff = valutil.ValOrDefault[asynqrt.RetryPolicy](c.Backoff, BackoffPolicy{Base: DefaultBackoffBase, Max: DefaultBackoffMax})
	c.QueueDelay = valutil.ValOrDefault(c.QueueDelay, DefaultBackoffBase)
	c.CompletedRetention = valutil.ValOrDefault(c.CompletedRetention, DefaultCompletedRetention)
	c.WriteTimeout = valutil.ValOrDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.NoteTimeout = valutil.ValOrDefault(c.NoteTimeout, cloud9.DefaultNoteTimeout)
	c.ReadTimeout = valutil.ValOrDefault(c.ReadTimeout, cloud9.DefaultReadTimeout)
	c.EventTimeout = valutil.ValOrDefault(c.EventTimeout, DefaultEventTimeout)
	c.LeaseMargin = valutil.ValOrDefault(c.LeaseMargin, DefaultLeaseMargin)
	c.RedisTimeout = valutil.ValOrDefault(c.RedisTimeout, DefaultRedisTimeout)
	c.LeaseGrace = valutil.ValOrDefault(c.LeaseGrace, DefaultLeaseGrace)
	c.TaskTimeout = valutil.ValOrDefault(c.TaskTimeout, max(DefaultTaskTimeout,
		2*c.ReadTimeout+c.WriteTimeout+c.NoteTimeout+c.EventTimeout+time.Minute+c.LeaseGrace))
	c.Queue = valutil.ValOrDefault(c.Queue, asynqrt.QueueCritical)
	c.AuthMode = valutil.ValOrDefault(c.AuthMode, AuthModeSession)
	c.PatientModel = valutil.ValOrDefault(c.PatientModel, DefaultPatientModel)
	c.DefaultScheduleColumnGUID = valutil.ValOrDefault(c.DefaultScheduleColumnGUID, DefaultScheduleColumnGUID)
	c.DefaultScheduleViewGUID = valutil.ValOrDefault(c.DefaultScheduleViewGUID, DefaultScheduleViewGUID)
	c.DefaultAppointmentTypeGUID = valutil.ValOrDefault(c.DefaultAppointmentTypeGUID, DefaultAppointmentTypeGUID)
	c.DefaultMinutes = valutil.ValOrDefault(c.DefaultMinutes, DefaultMinutes)
	c.LocationGUID = valutil.ValOrDefault(c.LocationGUID, DefaultLocationGUID)
	c.SessionTTL = valutil.ValOrDefault(c.SessionTTL, DefaultSessionTTL)
	c.StatusEndpoint = valutil.ValOrDefault(c.StatusEndpoint, DefaultBasePath+"/queue-status")
	c.StatusScanLimit = valutil.ValOrDefault(c.StatusScanLimit, 10000)
	c.PracticeZone = valutil.ValOrDefault(c.PracticeZone, time.UTC)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Sleep = valutil.FuncOrDefault(c.Sleep, timeutil.Sleep)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Registerer = valutil.ValOrDefault[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	return c
}

// guidanceModel is createPatient's llm_guidance.model for PatientModel.
func (c Config) guidanceModel() string {
	if c.PatientModel == PatientModelIndividual {
		return contracts.PatientModelIndividual
	}
	return contracts.PatientModel
}

// patientStep is the longest a consultation's patient step may take: the
// lookup after an uncertain SetPatient (a read), SetPatient, its note and
// its patient_created event.
func (c Config) patientStep() time.Duration {
	return c.ReadTimeout + c.WriteTimeout + c.NoteTimeout + c.EventTimeout
}

// RetryHorizon is how long a queued operation may go on with c (its
// defaults applied) when every attempt fails and runs its whole
// TaskTimeout: the first run's QueueDelay, the backoff before each retry,
// and AsyncMaxAttempts runs — 74 min 20 s with the defaults. A Done mark
// must outlive it (MarksDoneTTL); deferrals (no attempt spent) are not
// counted.
func (c Config) RetryHorizon() time.Duration {
	c = c.withDefaults()
	h := c.QueueDelay + time.Duration(c.AsyncMaxAttempts)*c.TaskTimeout
	for n := range c.AsyncMaxAttempts - 1 { // Asynq's n: the retries made before this one
		h += c.Backoff.RetryDelay(n, nil, nil)
	}
	return h
}

// HoldKeepTTL is the least a queued booking's slot hold must be kept for
// at each run's start (the worker's Confirm) so that it lasts to the next
// run's: the run itself (TaskTimeout), the longest backoff before a retry,
// and a minute. A hold kept for less lapsed between two retries once the
// backoff reached its cap (300 s, the default SLOT_RESERVATION_BOOKED_TTL
// too), and the slot was offered and booked again while the caller had
// been told a confirmation would follow.
func (c Config) HoldKeepTTL() time.Duration {
	c = c.withDefaults()
	var longest time.Duration
	for n := range max(c.AsyncMaxAttempts-1, 1) {
		longest = max(longest, c.Backoff.RetryDelay(n, nil, nil))
	}
	return c.TaskTimeout + longest + time.Minute
}

// MarksDoneTTL is the Done mark's TTL for c: DefaultDoneTTL, or the retry
// horizon when that is longer, so a retry of a booking made in an earlier
// attempt answers from its mark rather than from Cloud9's list.
func (c Config) MarksDoneTTL() time.Duration { return max(DefaultDoneTTL, c.RetryHorizon()) }

// leaseTTL is the lease an attempt takes on a booking identity.
func (c Config) leaseTTL() time.Duration { return c.WriteTimeout + c.LeaseMargin }

func (c Config) validate() error {
	switch {
	case c.SyncBudget < 0 || c.InCallWait < 0 || c.SyncRetryDelay < 0 || c.QueueDelay < 0 || c.TaskTimeout < 0 || c.WriteTimeout < 0 ||
		c.LeaseMargin < 0 || c.LeaseGrace < 0 || c.NoteTimeout < 0 || c.ReadTimeout < 0 || c.EventTimeout < 0:
		return errors.New("booking: durations must not be negative")
	case c.TaskTimeout < c.patientStep():
		return fmt.Errorf("booking: TaskTimeout %s must hold one patient step, ReadTimeout + WriteTimeout + NoteTimeout + EventTimeout = %s",
			c.TaskTimeout, c.patientStep())
	case c.SyncAttempts < 1 || c.PatientSyncAttempts < 1:
		return fmt.Errorf("booking: SyncAttempts and PatientSyncAttempts must be ≥ 1")
	case c.AsyncMaxAttempts < 1 || c.AsyncMaxAttempts > 100:
		return fmt.Errorf("booking: AsyncMaxAttempts must be 1..100, got %d", c.AsyncMaxAttempts)
	case c.PatientModel != PatientModelParent && c.PatientModel != PatientModelIndividual:
		return fmt.Errorf("booking: PatientModel must be %s or %s, got %q", PatientModelParent, PatientModelIndividual, c.PatientModel)
	case c.DefaultMinutes < 1:
		return fmt.Errorf("booking: DefaultMinutes must be ≥ 1")
	case c.StatusScanLimit < 1:
		return fmt.Errorf("booking: StatusScanLimit must be ≥ 1")
	}
	switch c.AuthMode {
	case AuthModeToken, AuthModeSession, AuthModeLegacy:
	default:
		return fmt.Errorf("booking: AuthMode must be token, session or legacy, got %q", c.AuthMode)
	}
	for name, g := range map[string]string{"DefaultScheduleColumnGUID": c.DefaultScheduleColumnGUID,
		"DefaultScheduleViewGUID": c.DefaultScheduleViewGUID, "DefaultAppointmentTypeGUID": c.DefaultAppointmentTypeGUID,
		"LocationGUID": c.LocationGUID} {
		if !guidRE.MatchString(g) {
			return fmt.Errorf("booking: %s %q is not a GUID", name, g)
		}
	}
	if c.ProviderGUID != "" && !guidRE.MatchString(c.ProviderGUID) {
		return fmt.Errorf("booking: ProviderGUID %q is not a GUID", c.ProviderGUID)
	}
	return nil
}

// callBudget is how long a booking call may wait for the shared write
// window, a limiter turn or the retry after a rate-limit answer before what
// is left is queued: InCallWait, or SyncBudget when that is longer.
func (c Config) callBudget() time.Duration { return max(c.SyncBudget, c.InCallWait) }

// chairConfigured reports whether column is one of Chairs (always, when
// Chairs is nil: every chair is the practice's) or the default chair.
func (c Config) chairConfigured(column string) bool {
	if len(c.Chairs) == 0 || strings.EqualFold(column, c.DefaultScheduleColumnGUID) {
		return true
	}
	for _, ch := range c.Chairs {
		if strings.EqualFold(ch, column) {
			return true
		}
	}
	return false
}
