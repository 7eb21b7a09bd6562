package bookingsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator"
)

// Task types of the async path.
const (
	TypeSetAppointment    = "booking:set_appointment"
	TypeSetPatient        = "booking:set_patient"
	TypeSetPatientComment = "booking:set_patient_comment"
)

// AppointmentTask is the payload of booking:set_appointment (no secrets:
// no bookingAuthToken, no Cloud9 credentials).
type AppointmentTask struct {
	OperationID         string    `json:"operationId"`
	CreatedAt           time.Time `json:"createdAt"`
	PatientGUID         string    `json:"patientGUID"`
	StartTime           string    `json:"startTime"`
	ScheduleViewGUID    string    `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string    `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string    `json:"appointmentTypeGUID"`
	Minutes             int       `json:"minutes"`
	ChildName           string    `json:"childName,omitempty"`
	Note                string    `json:"note,omitempty"`
	LocationGUID        string    `json:"locationGUID"`
	SessionID           string    `json:"sessionId,omitempty"` // reservation holder
	// CheckFirst: the sync path's call had an uncertain outcome; the first
	// attempt asks GetAppointmentListByPatient before sending.
	CheckFirst   bool   `json:"checkFirst,omitempty"`
	SyncAttempts int    `json:"syncAttempts"`
	SyncError    string `json:"syncError,omitempty"`
}

// PatientTask is the payload of booking:set_patient.
type PatientTask struct {
	OperationID       string    `json:"operationId"`
	CreatedAt         time.Time `json:"createdAt"`
	FirstName         string    `json:"patientFirstName"`
	LastName          string    `json:"patientLastName"`
	ProviderGUID      string    `json:"providerGUID,omitempty"`
	LocationGUID      string    `json:"locationGUID"`
	BirthDate         string    `json:"birthDate,omitempty"`
	Phone             string    `json:"phoneNumber,omitempty"`
	Email             string    `json:"emailAddress,omitempty"`
	Gender            string    `json:"gender,omitempty"`
	IsChild           bool      `json:"isChild"`
	ParentPatientGUID string    `json:"parentPatientGUID,omitempty"`
	FamilyID          string    `json:"familyId"`
	UUI               string    `json:"uui,omitempty"`
	SessionID         string    `json:"sessionId,omitempty"`
	TokenSessionID    string    `json:"tokenSessionId,omitempty"`
	SyncError         string    `json:"syncError,omitempty"`
}

// NoteTask is the payload of booking:set_patient_comment: a note that could
// not be added right after its booking.
type NoteTask struct {
	OperationID string    `json:"operationId"`
	CreatedAt   time.Time `json:"createdAt"`
	PatientGUID string    `json:"patientGUID"`
	Note        string    `json:"note"`
}

// opResult is what a completed task writes as its Asynq result (shown by
// queue-status and Asynqmon).
type opResult struct {
	AppointmentGUID string `json:"appointmentGUID,omitempty"`
	PatientGUID     string `json:"patientGUID,omitempty"`
	NoteAdded       bool   `json:"noteAdded,omitempty"`
	Recovered       bool   `json:"recovered,omitempty"`
	CompletedAt     int64  `json:"completedAt,omitempty"` // unix ms; asynq's own CompletedAt has whole seconds
}

// Worker is the async path on Asynq: it enqueues the booking tasks
// (implementing Queue), runs them, and reports them (Status). Create it
// with NewWorker and call Register before the runtime starts.
type Worker struct {
	rt       *orchestrator.Runtime
	d        Deps
	cfg      Config
	log      *slog.Logger
	m        *workerMetrics
	register sync.Once
}

// NewWorker validates its dependencies (Cloud9, Tokens, Sessions, Marks
// required) and registers the worker's metrics.
func NewWorker(rt *orchestrator.Runtime, d Deps, cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, errors.New("bookingsvc: Runtime is required")
	}
	if err := d.check(false); err != nil {
		return nil, err
	}
	m, err := newWorkerMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Worker{rt: rt, d: d, cfg: cfg, log: cfg.Logger.With("component", "booking-worker"), m: m}, nil
}

// Register registers the three task handlers with Config.Backoff. Calling
// it again does nothing.
func (w *Worker) Register() {
	w.register.Do(func() {
		w.rt.Handle(TypeSetAppointment, asynq.HandlerFunc(w.handleAppointment), w.cfg.Backoff)
		w.rt.Handle(TypeSetPatient, asynq.HandlerFunc(w.handlePatient), w.cfg.Backoff)
		w.rt.Handle(TypeSetPatientComment, asynq.HandlerFunc(w.handleNote), w.cfg.Backoff)
	})
}

func (w *Worker) enqueue(ctx context.Context, typ, id string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	opts := []asynq.Option{asynq.TaskID(id), asynq.Queue(w.cfg.Queue), asynq.MaxRetry(w.cfg.AsyncMaxAttempts - 1),
		asynq.Timeout(w.cfg.TaskTimeout), asynq.ProcessIn(w.cfg.QueueDelay)}
	if w.cfg.CompletedRetention > 0 {
		opts = append(opts, asynq.Retention(w.cfg.CompletedRetention))
	}
	_, err = w.rt.Client.EnqueueContext(ctx, asynq.NewTask(typ, b), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil // already queued under this operation id
	}
	return err
}

// EnqueueAppointment implements Queue: TaskID = operationId, queue
// Config.Queue, AsyncMaxAttempts attempts, first run after QueueDelay.
func (w *Worker) EnqueueAppointment(ctx context.Context, t AppointmentTask) error {
	return w.enqueue(ctx, TypeSetAppointment, t.OperationID, t)
}

// EnqueuePatient implements Queue.
func (w *Worker) EnqueuePatient(ctx context.Context, t PatientTask) error {
	return w.enqueue(ctx, TypeSetPatient, t.OperationID, t)
}

// EnqueueNote implements Queue.
func (w *Worker) EnqueueNote(ctx context.Context, t NoteTask) error {
	return w.enqueue(ctx, TypeSetPatientComment, t.OperationID, t)
}

// attemptInfo is where the running task stands.
type attemptInfo struct {
	attempt int  // 1-based
	last    bool // no retry after this one
}

func currentAttempt(ctx context.Context) attemptInfo {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return attemptInfo{attempt: retried + 1, last: retried >= maxRetry}
}

// turn takes the limiter's turn for procedure. Not now → the task is
// deferred by retryAfter without spending an attempt — except on its last
// attempt, where asynq would archive it whatever the error: there it waits
// in the handler (bounded by the task's timeout).
func (w *Worker) turn(ctx context.Context, procedure string, a attemptInfo) error {
	if w.d.Limiter == nil {
		return nil
	}
	for {
		allowed, after, err := w.d.Limiter.Allow(ctx, procedure)
		if err != nil {
			w.log.Warn("cloud9 limiter unavailable; calling without it", "procedure", procedure, "err", err)
			return nil
		}
		if allowed {
			return nil
		}
		if !a.last {
			w.m.deferred.WithLabelValues(procedure).Inc()
			return orchestrator.Defer(after, "cloud9 limiter: "+procedure)
		}
		if err := w.cfg.Sleep(ctx, max(after, 10*time.Millisecond)); err != nil {
			return err
		}
	}
}

// handleAppointment runs booking:set_appointment:
//
//  1. A Done mark for the booking → complete without calling Cloud9.
//  2. The identity's lease (Marks.Claim): another attempt holds it (the
//     sync path or another task at Cloud9 right now) → deferred (no
//     attempt spent; on the last attempt the handler waits).
//  3. CheckFirst or an in-flight mark (an uncertain outcome before: a
//     timeout, a dropped connection, a crash mid-call — in this task or
//     the sync path) → GetAppointmentListByPatient; found → complete
//     without sending SetAppointment again.
//  4. Limiter turn (deferral when not now), in-flight mark, SetAppointment.
//  5. Success → complete. Rate limit / other errors → retried with the
//     backoff; uncertain → retried, the mark stays so step 3 checks;
//     SLOT_NOT_AVAILABLE, PATIENT_NOT_FOUND, INVALID_* → archived at once
//     (SkipRetry). The reservation is released on the final failure —
//     unless another attempt of this booking holds the slot; the
//     runtime's error handler writes the durable dead-letter record.
func (w *Worker) handleAppointment(ctx context.Context, t *asynq.Task) error {
	var p AppointmentTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OperationID == "" || p.PatientGUID == "" {
		return fmt.Errorf("bookingsvc: bad %s payload: %v: %w", TypeSetAppointment, err, asynq.SkipRetry)
	}
	a := currentAttempt(ctx)
	key := IdentityKey(p.PatientGUID, p.StartTime, p.ScheduleColumnGUID)
	log := w.log.With("operation_id", p.OperationID, "attempt", a.attempt)

	if rec, done, err := w.d.Marks.Completed(ctx, key); err == nil && done {
		return w.fromDone(ctx, t, p, key, "", rec, a)
	}
	owner := newOwner(p.OperationID)
	if err := w.claim(ctx, key, Lease{Owner: owner, ChildName: p.ChildName}, a); err != nil {
		return err
	}
	sent := false
	defer func() {
		if !sent {
			w.dropLease(ctx, key, owner)
		}
	}()
	// The attempt we waited for may have completed it.
	if rec, done, err := w.d.Marks.Completed(ctx, key); err == nil && done {
		return w.fromDone(ctx, t, p, key, "", rec, a)
	}
	// Keep the slot held while the booking is still being tried: the hold
	// confirmed at queueing (300 s) would lapse before a late attempt, and
	// other sessions would be offered the slot again (seed 003's race).
	w.keepHold(ctx, p, log)
	inflight, err := w.d.Marks.InFlight(ctx, key)
	if err != nil {
		inflight = true // cannot tell: check
	}
	if p.CheckFirst || inflight {
		if err := w.turn(ctx, ProcGetAppointments, a); err != nil {
			return err
		}
		guid, err := findExisting(ctx, w.d.Cloud9, p.PatientGUID, p.StartTime, p.ScheduleColumnGUID)
		if err != nil {
			return w.failAppointment(ctx, p, a, failure{class: ClassUnknown, msg: "checking for an existing appointment: " + err.Error(), uncertain: true})
		}
		if guid != "" {
			log.Info("appointment found after an uncertain attempt; not sending it again", "appointment_guid", guid)
			sent = true
			return w.completeAppointment(ctx, t, p, key, owner, guid, a, true, true)
		}
	}
	if err := w.turn(ctx, ProcSetAppointment, a); err != nil {
		return err
	}
	if held, err := w.d.Marks.Begin(ctx, key, owner, w.cfg.leaseTTL()); err != nil || !held {
		// never call without the lease and the mark
		return fmt.Errorf("marking the booking in flight (lease held %v): %v", held, err)
	}
	sent = true
	guid, _, err := w.d.Cloud9.SetAppointment(ctx, AppointmentInput{PatientGUID: p.PatientGUID, StartTime: p.StartTime,
		ScheduleViewGUID: p.ScheduleViewGUID, ScheduleColumnGUID: p.ScheduleColumnGUID,
		AppointmentTypeGUID: p.AppointmentTypeGUID, Minutes: p.Minutes})
	if err == nil {
		return w.completeAppointment(ctx, t, p, key, owner, guid, a, false, true)
	}
	f := classify(err)
	if f.disposition() == dispUncertain {
		// The mark stays (the next attempt checks); the lease a little longer.
		bctx, cancel := bookkeeping(ctx)
		if _, xerr := w.d.Marks.Extend(bctx, key, owner, w.cfg.LeaseGrace); xerr != nil {
			log.Warn("booking marks: could not keep the lease", "err", xerr)
		}
		cancel()
		return w.failAppointment(ctx, p, a, f)
	}
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	if cerr := w.d.Marks.Clear(bctx, key, owner); cerr != nil {
		log.Warn("booking marks: clear failed", "err", cerr)
	}
	held := w.dropLease(ctx, key, owner)
	if f.class == ClassSlotNotAvailable {
		if rec, done, err := w.d.Marks.Completed(bctx, key); err == nil && done {
			log.Info("slot refused, but it is booked under this identity", "appointment_guid", rec.AppointmentGUID)
			return w.fromDone(ctx, t, p, key, "", rec, a)
		}
		if !held {
			// This attempt's lease lapsed during the call: another attempt
			// of the booking may hold the slot. Not ours to release; the
			// next attempt checks.
			log.Warn("slot refused after this attempt's lease lapsed; retrying with a check first")
			return errors.New(f.text())
		}
	}
	return w.failAppointment(ctx, p, a, f)
}

// fromDone completes the task from the identity's Done mark (whoever set
// it saw the success and added the note) — if it is this child's. Another
// child's (parent-as-patient siblings on one slot) fails the task for good
// as DUPLICATE_SLOT_BLOCKED, keeping the reservation (it is the other
// child's).
func (w *Worker) fromDone(ctx context.Context, t *asynq.Task, p AppointmentTask, key, owner string, rec DoneRecord, a attemptInfo) error {
	if sameChild(rec.ChildName, p.ChildName) {
		return w.completeAppointment(ctx, t, p, key, owner, rec.AppointmentGUID, a, true, false)
	}
	w.m.failed.WithLabelValues(contracts.OpSetAppointment, contracts.BookingErrDuplicateSlot).Inc()
	w.log.Warn("queued booking refused: the slot is booked for another child of this patient", "operation_id", p.OperationID,
		"child", p.ChildName, "other_child", rec.ChildName, "appointment_guid", rec.AppointmentGUID)
	return fmt.Errorf("%s: the slot is booked for %q: %w", contracts.BookingErrDuplicateSlot, rec.ChildName, asynq.SkipRetry)
}

// claim takes the identity's lease for this attempt. Held by another
// attempt → deferred by LeaseGrace without spending an attempt (on the
// last attempt the handler waits, bounded by the task's timeout).
func (w *Worker) claim(ctx context.Context, key string, l Lease, a attemptInfo) error {
	for {
		got, holder, err := w.d.Marks.Claim(ctx, key, l, w.cfg.leaseTTL())
		if err != nil {
			return fmt.Errorf("claiming the booking: %w", err) // never call without the lease
		}
		if got {
			return nil
		}
		w.log.Info("another attempt of this booking is in progress; waiting for it", "holder", holder.Owner)
		if !a.last {
			w.m.deferred.WithLabelValues("lease").Inc()
			return orchestrator.Defer(w.cfg.LeaseGrace, "booking in progress elsewhere")
		}
		if err := w.cfg.Sleep(ctx, w.cfg.LeaseGrace); err != nil {
			return err
		}
	}
}

func (w *Worker) dropLease(ctx context.Context, key, owner string) bool {
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	held, err := w.d.Marks.Release(ctx, key, owner)
	if err != nil {
		w.log.Warn("booking marks: lease release failed (it expires by itself)", "err", err)
	}
	return held
}

func (w *Worker) failAppointment(ctx context.Context, p AppointmentTask, a attemptInfo, f failure) error {
	permanent := f.disposition() == dispPermanent
	if permanent || a.last {
		w.releaseHold(ctx, p)
		w.m.failed.WithLabelValues(contracts.OpSetAppointment, f.class).Inc()
		w.log.Warn("queued booking failed for good", "operation_id", p.OperationID, "attempt", a.attempt, "class", f.class, "err", f.text())
	} else {
		w.log.Info("queued booking attempt failed; retrying with backoff", "operation_id", p.OperationID, "attempt", a.attempt, "err", f.text())
	}
	if permanent {
		return fmt.Errorf("%s: %w", f.text(), asynq.SkipRetry)
	}
	return errors.New(f.text())
}

// keepHold re-confirms the slot's reservation for this booking before an
// attempt (fail open: Cloud9 decides whether the slot is still free).
func (w *Worker) keepHold(ctx context.Context, p AppointmentTask, log *slog.Logger) {
	if w.d.Reservations == nil {
		return
	}
	if err := w.d.Reservations.Confirm(ctx, w.hold(p)); err != nil {
		log.Warn("could not keep the slot held for the queued booking; trying it anyway", "err", err)
	}
}

func (w *Worker) hold(p AppointmentTask) SlotHold {
	return SlotHold{LocationGUID: firstNonEmpty(p.LocationGUID, w.cfg.LocationGUID), StartTime: p.StartTime,
		ScheduleColumnGUID: p.ScheduleColumnGUID, SessionID: firstNonEmpty(p.SessionID, "patient:"+p.PatientGUID),
		PatientName: p.ChildName}
}

func (w *Worker) releaseHold(ctx context.Context, p AppointmentTask) {
	if w.d.Reservations == nil {
		return
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := w.d.Reservations.Release(ctx, w.hold(p)); err != nil {
		w.log.Warn("slot reservation: release failed (it expires by itself)", "err", err)
	}
}

// completeAppointment: done mark (owner's lease released), reservation extended to 300 s, note
// added (or queued) when withNote, result written, completion event
// published.
func (w *Worker) completeAppointment(ctx context.Context, t *asynq.Task, p AppointmentTask, key, owner, guid string, a attemptInfo,
	recovered, withNote bool) error {
	callCtx := ctx
	ctx, cancel := bookkeeping(ctx) // the appointment exists: record it even if the run's deadline has passed
	defer cancel()
	if err := w.d.Marks.Done(ctx, key, owner, DoneRecord{AppointmentGUID: guid, ChildName: p.ChildName}); err != nil {
		w.log.Warn("booking marks: could not record the completed booking", "appointment_guid", guid, "err", err)
	}
	if w.d.Reservations != nil {
		if err := w.d.Reservations.Confirm(ctx, w.hold(p)); err != nil {
			w.log.Warn("slot reservation: extend failed", "err", err)
		}
	}
	noteAdded := false
	if withNote {
		noteAdded = w.addNote(callCtx, ctx, p.OperationID, p.PatientGUID, p.Note)
	}
	w.writeResult(t, opResult{AppointmentGUID: guid, PatientGUID: p.PatientGUID, NoteAdded: noteAdded, Recovered: recovered})
	w.m.completed.WithLabelValues(contracts.OpSetAppointment).Inc()
	w.log.Info("queued booking completed", "operation_id", p.OperationID, "appointment_guid", guid, "attempt", a.attempt,
		"recovered", recovered)
	w.publish(ctx, contracts.BookingCompletedEvent{Event: contracts.EventBookingCompleted, OperationID: p.OperationID,
		OperationType: contracts.OpSetAppointment, AppointmentGUID: guid, PatientGUID: p.PatientGUID,
		ChildName: p.ChildName, StartTime: p.StartTime, Attempts: a.attempt, CompletedAt: contracts.JSTime(w.cfg.Now())})
	return nil
}

// addNote adds the note at once when the limiter allows, else queues it.
func (w *Worker) addNote(ctx, bctx context.Context, opID, patientGUID, note string) bool {
	if note == "" {
		return false
	}
	queue := func() bool {
		t := NoteTask{OperationID: "note-" + opID, CreatedAt: w.cfg.Now().UTC(), PatientGUID: patientGUID, Note: note}
		if err := w.EnqueueNote(bctx, t); err != nil {
			w.log.Error("patient note of a queued booking could not be queued", "operation_id", opID, "err", err)
		}
		return false
	}
	if ctx.Err() != nil {
		return queue()
	}
	if w.d.Limiter != nil {
		allowed, _, err := w.d.Limiter.Allow(ctx, ProcSetPatientComment)
		if err == nil && !allowed {
			return queue()
		}
	}
	_, _, err := w.d.Cloud9.SetPatientComment(ctx, patientGUID, note)
	if err == nil {
		return true
	}
	if classify(err).disposition() == dispPermanent {
		w.log.Warn("patient note refused by Cloud9", "operation_id", opID, "err", err)
		return false
	}
	return queue()
}

// handleNote runs booking:set_patient_comment. An uncertain outcome is
// retried as is (a duplicate note is the lesser harm than a lost one).
func (w *Worker) handleNote(ctx context.Context, t *asynq.Task) error {
	var p NoteTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.PatientGUID == "" || p.Note == "" {
		return fmt.Errorf("bookingsvc: bad %s payload: %v: %w", TypeSetPatientComment, err, asynq.SkipRetry)
	}
	a := currentAttempt(ctx)
	if err := w.turn(ctx, ProcSetPatientComment, a); err != nil {
		return err
	}
	_, _, err := w.d.Cloud9.SetPatientComment(ctx, p.PatientGUID, p.Note)
	if err == nil {
		w.writeResult(t, opResult{PatientGUID: p.PatientGUID, NoteAdded: true})
		return nil
	}
	f := classify(err)
	if f.disposition() == dispPermanent {
		return fmt.Errorf("%s: %w", f.text(), asynq.SkipRetry)
	}
	return errors.New(f.text())
}

// handlePatient runs booking:set_patient: SetPatient, then the token and
// the session cache (so the same call's createAppt auto-injects them), the
// result, and a patient_created event. A refusal no retry changes (the
// permanent classes, Cloud9 codes 2–5 and 16) is archived at once
// (SkipRetry); other errors are retried.
func (w *Worker) handlePatient(ctx context.Context, t *asynq.Task) error {
	var p PatientTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OperationID == "" || p.FirstName == "" {
		return fmt.Errorf("bookingsvc: bad %s payload: %v: %w", TypeSetPatient, err, asynq.SkipRetry)
	}
	a := currentAttempt(ctx)
	if err := w.turn(ctx, ProcSetPatient, a); err != nil {
		return err
	}
	guid, _, err := w.d.Cloud9.SetPatient(ctx, PatientInput{FirstName: p.FirstName, LastName: p.LastName,
		ProviderGUID: p.ProviderGUID, LocationGUID: p.LocationGUID, BirthDate: p.BirthDate, Phone: p.Phone,
		Email: p.Email, Gender: p.Gender})
	if err != nil {
		f := classify(err)
		if a.last || f.final() {
			w.m.failed.WithLabelValues(contracts.OpSetPatient, f.class).Inc()
		}
		if f.final() {
			w.log.Warn("queued patient refused by Cloud9 for good", "operation_id", p.OperationID, "err", f.text())
			return fmt.Errorf("%s: %w", f.text(), asynq.SkipRetry)
		}
		return errors.New(f.text())
	}
	if _, serr := patientSession(ctx, w.d, w.cfg, p, guid, w.cfg.Now()); serr != nil {
		w.log.Warn("queued patient created, but its session could not be cached", "operation_id", p.OperationID, "err", serr)
	}
	w.writeResult(t, opResult{PatientGUID: guid})
	w.m.completed.WithLabelValues(contracts.OpSetPatient).Inc()
	w.log.Info("queued patient created", "operation_id", p.OperationID, "patient_guid", guid, "attempt", a.attempt)
	w.publish(ctx, contracts.BookingCompletedEvent{Event: contracts.EventPatientCreated, OperationID: p.OperationID,
		OperationType: contracts.OpSetPatient, PatientGUID: guid, PatientName: p.FirstName + " " + p.LastName,
		Attempts: a.attempt, CompletedAt: contracts.JSTime(w.cfg.Now())})
	return nil
}

func (w *Worker) publish(ctx context.Context, ev contracts.BookingCompletedEvent) {
	if w.d.Events == nil {
		return
	}
	if err := w.d.Events.Publish(ctx, ev); err != nil {
		w.log.Warn("booking event not delivered", "operation_id", ev.OperationID, "event", ev.Event, "err", err)
	}
}

func (w *Worker) writeResult(t *asynq.Task, r opResult) {
	r.CompletedAt = w.cfg.Now().UnixMilli()
	if rw := t.ResultWriter(); rw != nil {
		b, _ := json.Marshal(r)
		_, _ = rw.Write(b)
	}
}

type workerMetrics struct {
	completed *prometheus.CounterVec
	failed    *prometheus.CounterVec
	deferred  *prometheus.CounterVec
}

func newWorkerMetrics(reg prometheus.Registerer) (*workerMetrics, error) {
	m := &workerMetrics{
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowgate_booking_completed_total",
			Help: "Queued booking operations completed, by operation (SetAppointment, SetPatient)."}, []string{"operation"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowgate_booking_failed_total",
			Help: "Queued booking operations failed for good, by operation and error class."}, []string{"operation", "class"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowgate_booking_deferred_total",
			Help: "Queued booking runs deferred by the Cloud9 limiter (no attempt spent), by procedure."}, []string{"procedure"}),
	}
	for _, c := range []prometheus.Collector{m.completed, m.failed, m.deferred} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bookingsvc: metrics: %w", err)
		}
	}
	return m, nil
}
