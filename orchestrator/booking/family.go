package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/timeutil"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// FamilyCloud9 is the part of the Cloud9 client the family uses; the
// client without its own limiter (Family takes the write turns itself)
// implements it.
type FamilyCloud9 interface {
	GetPatientInformation(ctx context.Context, patGUID string) (cloud9.Record, error)
	GetPortalPatientLookup(ctx context.Context, q cloud9.PatientLookup) ([]cloud9.Record, error)
	GetAppointmentListByPatient(ctx context.Context, patGUID string) ([]cloud9.Appointment, error)
	GetLocations(ctx context.Context) ([]cloud9.Record, error)
	SetPatientComment(ctx context.Context, patGUID, comment string) (commentGUID, result string, err error)
	SetAppointmentStatusCanceled(ctx context.Context, apptGUID string) (result string, err error)
	SetAppointmentStatusConfirmed(ctx context.Context, apptGUID string) (result string, err error)
	GetOnlineReservations(ctx context.Context, q cloud9.ReservationQuery) ([]cloud9.Slot, error)
}

// PhoneIndex finds patients by phone digits at one location, or at every
// location of the client when location is ""; *phoneindex.Index
// implements it.
type PhoneIndex interface {
	Lookup(ctx context.Context, phone, location string) (phoneindex.Result, error)
}

// SlotHolds is the holds engine (orchestrator/holds) as cancelAppt uses
// it: release whatever hold or reservation covers the slot, and clear the
// cooldown keyed by the appointment. Both report whether there was one.
type SlotHolds interface {
	ReleaseSlot(ctx context.Context, appointmentTypeID, specialistID string, start time.Time) (bool, error)
	ClearCooldown(ctx context.Context, appointmentID string) (bool, error)
}

// SlotRestorer puts a slot a cancellation freed back into the slot cache
// (the tiered cache's RestoreSlot).
type SlotRestorer interface {
	RestoreSlot(ctx context.Context, s slots.Slot) error
}

// SlotChanges publishes slot changes for live listeners.
type SlotChanges interface {
	PublishSlotChange(ctx context.Context, ev contracts.SlotChangeEvent) error
}

// OperationLookup finds one queued operation by id; *Worker implements
// it over Asynq.
type OperationLookup interface {
	Operation(ctx context.Context, operationID string) (op contracts.QueueOperation, found bool, err error)
}

// FamilyDeps are Family's collaborators. Cloud9 is required; without
// Limiter writes are not spaced client-side; without Phones a phone search
// answers api_error; without Holds, Slots or Changes cancelAppt skips that
// step; without Operations the status endpoint answers api_error.
type FamilyDeps struct {
	Cloud9     FamilyCloud9
	Limiter    Limiter
	Phones     PhoneIndex
	Holds      SlotHolds
	Slots      SlotRestorer
	Changes    SlotChanges
	Operations OperationLookup
}

// FamilyConfig configures Family.
type FamilyConfig struct {
	// LocationGUID is the practice location: getLocation's `location` in
	// the list answer, the location of restored slots. Default
	// DefaultLocationGUID.
	LocationGUID string
	// ScheduleColumnGUID is the chair of a cancelled slot whose request
	// names none (the original restores Chair 8, its configured column).
	// Default DefaultScheduleColumnGUID, as the booking path's.
	ScheduleColumnGUID string
	// PracticeZone is the zone of Cloud9's wall-clock times, to turn a
	// slot's start into the instant the holds engine keys on. Default UTC.
	PracticeZone *time.Location
	// WriteWait bounds the wait for the shared limiter's turn before a
	// write (cancel, confirm, insurance comment). Default 15 s.
	WriteWait time.Duration
	// SideEffectTimeout bounds each of cancelAppt's follow-ups (hold
	// release, cooldown, slot cache, publish). Default 3 s.
	SideEffectTimeout time.Duration
	// VendorNote is the first line of editInsurance's comment. Default
	// "Insurance updated by flowgate".
	VendorNote string
	Now        func() time.Time
	Sleep      func(ctx context.Context, d time.Duration) error
	Logger     *slog.Logger
}

func (c FamilyConfig) withDefaults() FamilyConfig {
	c.LocationGUID = valutil.ValOrDefault(c.LocationGUID, DefaultLocationGUID)
	c.ScheduleColumnGUID = valutil.ValOrDefault(c.ScheduleColumnGUID, DefaultScheduleColumnGUID)
	c.VendorNote = valutil.ValOrDefault(c.VendorNote, "Insurance updated by flowgate")
	c.PracticeZone = valutil.ValOrDefault(c.PracticeZone, time.UTC)
	c.WriteWait = valutil.ValOrDefault(c.WriteWait, 15*time.Second)
	c.SideEffectTimeout = valutil.ValOrDefault(c.SideEffectTimeout, 3*time.Second)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Sleep = valutil.FuncOrDefault(c.Sleep, timeutil.Sleep)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

func (c FamilyConfig) validate() error {
	if !guidRE.MatchString(c.LocationGUID) {
		return fmt.Errorf("booking: FamilyConfig.LocationGUID %q is not a GUID", c.LocationGUID)
	}
	if !guidRE.MatchString(c.ScheduleColumnGUID) {
		return fmt.Errorf("booking: FamilyConfig.ScheduleColumnGUID %q is not a GUID", c.ScheduleColumnGUID)
	}
	if c.WriteWait < 0 || c.SideEffectTimeout <= 0 {
		return errors.New("booking: FamilyConfig.WriteWait must not be negative, SideEffectTimeout must be positive")
	}
	return nil
}

// The rest of the Node-RED family: getPatient,
// getPatientByFilter, getPatientAppts, editInsurance, confirmAppt,
// cancelAppt, getLocation and the operation status. Family is a service
// of its own (its own deps and config) so that it grows without touching
// the booking Service's.
//
// Family answers the family endpoints.
type Family struct {
	d   FamilyDeps
	cfg FamilyConfig
	log *slog.Logger
}

// NewFamily validates cfg and deps.
func NewFamily(d FamilyDeps, cfg FamilyConfig) (*Family, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Cloud9 == nil {
		return nil, errors.New("booking: FamilyDeps.Cloud9 is required")
	}
	return &Family{d: d, cfg: cfg, log: cfg.Logger.With("component", "booking-family")}, nil
}

// Unavailable marks an answer body whose failure is flowgate's own store
// (Redis: the phone search's records, the operation queue), not Cloud9's: bookinghttp
// answers it 503 instead of 500. It encodes as Body.
type Unavailable struct{ Body any }

// MarshalJSON encodes the wrapped body.
func (u Unavailable) MarshalJSON() ([]byte, error) { return json.Marshal(u.Body) }

// storeFailed is the Answer of an endpoint whose store failed.
func storeFailed(body any) Answer { return failed(Unavailable{Body: body}) }

// errFamBusy is a write the limiter did not admit within WriteWait.
var errFamBusy = errors.New("cloud9 write limit: no turn within the wait")

// turn waits for the shared limiter's turn on procedure, at most
// WriteWait. A limiter error lets the call go ahead (fail open, logged).
func (f *Family) turn(ctx context.Context, procedure string) error {
	if f.d.Limiter == nil {
		return nil
	}
	deadline := f.cfg.Now().Add(f.cfg.WriteWait)
	for {
		ok, after, err := f.d.Limiter.Allow(ctx, procedure)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f.log.Warn("cloud9 limiter unavailable; calling without it", "procedure", procedure, "err", err)
			return nil
		case ok:
			return nil
		}
		after = max(after, 10*time.Millisecond)
		if f.cfg.Now().Add(after).After(deadline) {
			f.log.Info("cloud9 write limit: no turn within the wait", "procedure", procedure, "next_turn_in", after)
			return fmt.Errorf("%w (%s)", errFamBusy, procedure)
		}
		if err := f.cfg.Sleep(ctx, after); err != nil {
			return err
		}
	}
}

// famOutcome sorts a Cloud9 failure: refused (Cloud9 answered and said no —
// unknown GUID, bad value, business rule: 200 with success false), or
// failed (unreachable, timeout, rate limit, no turn: the original's 500).
type famOutcome int

const (
	famRefused famOutcome = iota
	famFailed
)

func famClassify(err error) famOutcome {
	var e *cloud9.Error
	if !errors.As(err, &e) {
		return famFailed
	}
	switch e.Kind {
	case cloud9.KindResult, cloud9.KindEmpty:
		return famRefused
	case cloud9.KindStatus:
		switch e.Code {
		case 2, 3, 4, 5:
			return famRefused
		}
	}
	return famFailed
}

// famMessage is what the caller may read of a Cloud9 failure.
func famMessage(err error) string {
	var e *cloud9.Error
	if errors.As(err, &e) {
		return strings.TrimSpace(strings.TrimPrefix(e.Message, "Error:"))
	}
	if errors.Is(err, errFamBusy) {
		return "Cloud9 write limit reached; try again shortly"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return "Cloud9 could not be reached"
}

// Guidance of the family's refusals and failures (the sentences are
// contracts', in the original's style).
func famInvalid(field string, missing ...string) *contracts.FamilyGuidance {
	return contracts.NewFamilyInvalidGuidance(field, missing...)
}

func famNotFound(what string) *contracts.FamilyGuidance {
	return contracts.NewFamilyNotFoundGuidance(what)
}

func famFailedGuidance(err error) *contracts.FamilyGuidance {
	if errors.Is(err, errFamBusy) {
		return contracts.NewFamilyBusyGuidance()
	}
	return contracts.NewFamilyFailedGuidance()
}

// famCheckGUID says what is wrong with a GUID field: missing or malformed.
func famCheckGUID(name, v string) (missing []string, bad string) {
	switch {
	case strings.TrimSpace(v) == "":
		return []string{name}, ""
	case !guidRE.MatchString(strings.TrimSpace(v)):
		return nil, name
	}
	return nil, ""
}

// famInvalidText is the `error` of a refused request.
func famInvalidText(missing []string, bad string) string {
	if len(missing) > 0 {
		return "missing required field(s): " + strings.Join(missing, ", ")
	}
	return bad + " is not a GUID"
}

// MalformedText is the `error` of a body that is not the endpoint's JSON.
func MalformedText(err error) string {
	var ce *contracts.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return "request body is not valid JSON"
}

// famRecord turns a Cloud9 record into the answer's string map.
func famRecord(r cloud9.Record) contracts.Record {
	out := make(contracts.Record, len(r))
	for _, f := range r {
		out[f.Name] = f.Value
	}
	return out
}
