package booking

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
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
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
	OperationID string    `json:"operationId"`
	CreatedAt   time.Time `json:"createdAt"`
	Appointment
	LocationGUID string `json:"locationGUID"`
	SessionID    string `json:"sessionId,omitempty"` // reservation holder
	// The call's own sessionId and uui as its request sent them (either
	// may be empty; SessionID above may be made up): queue-status looks
	// the call's operations up by them.
	CallSessionID string `json:"callSessionId,omitempty"`
	UUI           string `json:"uui,omitempty"`
	// CheckFirst: the sync path's call had an uncertain outcome; the first
	// attempt asks GetAppointmentListByPatient before sending.
	CheckFirst   bool   `json:"checkFirst,omitempty"`
	SyncAttempts int    `json:"syncAttempts"`
	SyncError    string `json:"syncError,omitempty"`
	// The caller as the call's session knew them (patient name, phone),
	// named by booking_failed should the booking fail for good.
	PatientName string `json:"patientName,omitempty"`
	PhoneNumber string `json:"phoneNumber,omitempty"`
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

	// Written when the operation fails for good (final.go).
	ErrorType string `json:"errorType,omitempty"`
	NextStep  string `json:"nextStep,omitempty"`
	FailedAt  int64  `json:"failedAt,omitempty"` // unix ms
}

// Worker is the async path on Asynq: it enqueues the booking tasks
// (implementing Queue), runs them, and reports them (Status). Create it
// with NewWorker and call Register before the runtime starts.
type Worker struct {
	rt       *asynqrt.Runtime
	d        Deps
	cfg      Config
	log      *slog.Logger
	m        *workerMetrics
	register sync.Once
}

// NewWorker validates its dependencies (Cloud9, Tokens, Sessions, Marks
// required) and registers the worker's metrics.
func NewWorker(rt *asynqrt.Runtime, d Deps, cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, errors.New("booking: Runtime is required")
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

// Register registers the task handlers with Config.Backoff; the booking
// and patient operations' final failures are reported (final.go). Calling
// it again does nothing.
func (w *Worker) Register() {
	w.register.Do(func() {
		w.rt.Handle(TypeSetAppointment, w.failures(w.handleAppointment), w.cfg.Backoff)
		w.rt.Handle(TypeSetPatient, w.failures(w.handlePatient), w.cfg.Backoff)
		w.rt.Handle(TypeSetPatientComment, asynq.HandlerFunc(w.handleNote), w.cfg.Backoff)
		w.rt.Handle(TypeConsultation, w.failures(w.handleConsultation), w.cfg.Backoff)
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
	lim := w.d.limiter(procedure)
	if lim == nil {
		return nil
	}
	for {
		allowed, after, err := lim.Allow(ctx, procedure)
		if err != nil {
			w.log.Warn("cloud9 limiter unavailable; calling without it", "procedure", procedure, "err", err)
			return nil
		}
		if allowed {
			return nil
		}
		if !a.last {
			w.m.deferred.WithLabelValues(procedure).Inc()
			return asynqrt.Defer(after, "cloud9 limiter: "+procedure)
		}
		if err := w.cfg.Sleep(ctx, max(after, 10*time.Millisecond)); err != nil {
			return err
		}
	}
}

// addNote adds the note at once when the limiter allows, else queues it.
// The queueing has a bookkeeping budget of its own from the moment it
// starts: a Cloud9 slow to refuse the note (up to CLOUD9_NOTE_TIMEOUT,
// 15 s) must not leave it no time to be queued.
func (w *Worker) addNote(ctx context.Context, opID, patientGUID, note string) bool {
	if note == "" {
		return false
	}
	queue := func() bool {
		t := NoteTask{OperationID: "note-" + opID, CreatedAt: w.cfg.Now().UTC(), PatientGUID: patientGUID, Note: note}
		bctx, cancel := bookkeeping(ctx)
		defer cancel()
		if err := w.EnqueueNote(bctx, t); err != nil {
			w.log.Error("patient note of a queued booking could not be queued", "operation_id", opID, "err", err)
		}
		return false
	}
	if ctx.Err() != nil {
		return queue()
	}
	if lim := w.d.limiter(cloud9.ProcSetPatientComment); lim != nil {
		allowed, _, err := lim.Allow(ctx, cloud9.ProcSetPatientComment)
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
		return fmt.Errorf("booking: bad %s payload: %w", TypeSetPatientComment, errors.Join(err, asynq.SkipRetry))
	}
	a := currentAttempt(ctx)
	if err := w.turn(ctx, cloud9.ProcSetPatientComment, a); err != nil {
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
// (SkipRetry); other errors are retried. The final failure is reported by
// failures (booking_failed).
func (w *Worker) handlePatient(ctx context.Context, t *asynq.Task) error {
	var p PatientTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OperationID == "" || p.FirstName == "" {
		return fmt.Errorf("booking: bad %s payload: %w", TypeSetPatient, errors.Join(err, asynq.SkipRetry))
	}
	a := currentAttempt(ctx)
	if err := w.turn(ctx, cloud9.ProcSetPatient, a); err != nil {
		return err
	}
	guid, _, err := w.d.Cloud9.SetPatient(ctx, cloud9.PatientInput{FirstName: p.FirstName, LastName: p.LastName,
		ProviderGUID: p.ProviderGUID, LocationGUID: p.LocationGUID, BirthDate: p.BirthDate, Phone: p.Phone,
		Email: p.Email, Gender: p.Gender})
	if err != nil {
		f := classify(err)
		if f.final() {
			w.log.Warn("queued patient refused by Cloud9 for good", "operation_id", p.OperationID, "err", f.text())
		}
		return failedErr(f, f.final())
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

// publish delivers ev within Config.EventTimeout from now, whatever is left of
// ctx's deadline (the run's, or its bookkeeping after a Cloud9 call): an
// event is not retried, so it is not sent with a budget already spent.
func (w *Worker) publish(ctx context.Context, ev contracts.BookingCompletedEvent) {
	if w.d.Events == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.EventTimeout)
	defer cancel()
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

// failedClasses are the error classes a queued operation fails for good
// with (the failure's Cloud9 class, or the answers' DUPLICATE_SLOT_BLOCKED).
var failedClasses = []string{string(cloud9.ClassSlotNotAvailable), string(cloud9.ClassPatientNotFound),
	string(cloud9.ClassRateLimit), string(cloud9.ClassTimeout), string(cloud9.ClassCloud9), string(cloud9.ClassUnknown),
	string(cloud9.ClassAuthorization), string(cloud9.ClassInvalidScheduleView), string(cloud9.ClassInvalidScheduleColumn),
	string(cloud9.ClassInvalidApptType), contracts.BookingErrDuplicateSlot}

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
			return nil, fmt.Errorf("booking: metrics: %w", err)
		}
	}
	// Every operation's series exist at zero from the start, so that the
	// first failure of a class shows in increase() and in alerts.
	for _, op := range []string{contracts.OpSetAppointment, contracts.OpSetPatient} {
		m.completed.WithLabelValues(op)
		m.deferred.WithLabelValues(op)
		for _, class := range failedClasses {
			m.failed.WithLabelValues(op, class)
		}
	}
	m.deferred.WithLabelValues("lease")
	return m, nil
}
