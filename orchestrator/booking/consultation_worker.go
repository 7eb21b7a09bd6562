package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// TypeConsultation is the task that finishes a bookConsultation in the
// background: the parent and the children's patients the sync path could
// not create within its budget, then each child's appointment as a
// booking:set_appointment task (its OperationID fixed in advance, so the
// answer names it and a re-run enqueues it once).
const TypeConsultation = "booking:consultation"

// ConsultationTask is the payload of booking:consultation (no secrets).
type ConsultationTask struct {
	OperationID  string         `json:"operationId"`
	CreatedAt    time.Time      `json:"createdAt"`
	SessionID    string         `json:"sessionId"` // the call: reservation holder, patients' identity
	LocationGUID string         `json:"locationGUID"`
	Parent       ConsultPatient `json:"parent"`
	// ParentGUID is set when the sync path had the parent.
	ParentGUID string             `json:"parentGUID,omitempty"`
	FamilyID   string             `json:"familyId"`
	Children   []ConsultChildTask `json:"children"`
}

// ConsultChildTask is one child left to the task.
type ConsultChildTask struct {
	Index           int            `json:"index"`
	Patient         ConsultPatient `json:"patient"`
	Appointment     Appointment    `json:"appointment"` // PatientGUID filled once the patient exists
	AppointmentOpID string         `json:"appointmentOperationId"`
}

// consultResult is the task's Asynq result.
type consultResult struct {
	ParentGUID string               `json:"parentGUID"`
	Children   []consultChildResult `json:"children"`
}

type consultChildResult struct {
	Index                  int    `json:"index"`
	PatientGUID            string `json:"patientGUID,omitempty"`
	AppointmentOperationID string `json:"appointmentOperationId,omitempty"`
	Error                  string `json:"error,omitempty"`
}

// EnqueueConsultation implements ConsultationQueue.
func (w *Worker) EnqueueConsultation(ctx context.Context, t ConsultationTask) error {
	return w.enqueue(ctx, TypeConsultation, t.OperationID, t)
}

// handleConsultation runs booking:consultation: the parent's patient step,
// then each child's patient step and its appointment task. A step another
// attempt holds, or for which the limiter has no turn, defers the task
// (no attempt spent); a step that failed for now retries it with the
// backoff; done steps are answered from their marks on every re-run. A
// child Cloud9 refuses for good is left out (its slot released, reported
// once: later runs skip it, recordRefused); a parent
// refused for good ends the task (SkipRetry). A run that has created a
// patient and is left with less time than another patient step may take
// (Config.patientStep) defers the task before its next child — unless an
// earlier child is to be retried (that error is returned: the backoff and
// the attempt count apply) or this is the last attempt (a deferral would
// archive it unreported: the run goes on, and its end is reported) — so a
// large family against a slow Cloud9 goes on in the next run instead of
// being cut mid-call by the run's deadline, which spends an attempt.
// Every run extends the children's slot holds first, and again when it
// ends unfinished with another attempt to come (keepHolds).
func (w *Worker) handleConsultation(ctx context.Context, t *asynq.Task) error {
	var p ConsultationTask
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OperationID == "" || p.Parent.Key == "" {
		return fmt.Errorf("booking: bad %s payload: %w", TypeConsultation, errors.Join(err, asynq.SkipRetry))
	}
	a := currentAttempt(ctx)
	pol := &workerPolicy{w: w, t: t, p: AppointmentTask{OperationID: p.OperationID}, a: a}
	log := w.log.With("operation_id", p.OperationID, "attempt", a.attempt)
	e := w.engine()
	w.keepHolds(ctx, p, nil)
	worked := false // this run created a patient: it may defer the next one
	if p.ParentGUID == "" {
		o := e.ensurePatient(ctx, pol, p.Parent, p.OperationID)
		worked = o.kind == vBooked
		switch o.kind {
		case vLater:
			return laterErr(o)
		case vFailed:
			log.Warn("consultation: parent refused for good", "err", o.f.text())
			w.releaseChildren(ctx, p.Children, p)
			// failures reports it (metric, booking_failed) as the task's end.
			return &opError{class: o.f.errType(), text: "parent: " + o.f.text(), skip: true, uncertain: o.f.uncertain}
		case vBooked:
			w.patientCreated(ctx, pol, p, p.Parent, o.guid)
		}
		p.ParentGUID, p.FamilyID = o.guid, firstNonEmpty(o.familyID, p.Parent.FamilyID)
	}
	res := consultResult{ParentGUID: p.ParentGUID}
	var pending error
	refused := map[int]bool{} // children refused for good in this run: their slots were released
	for _, c := range p.Children {
		if short := w.timeShort(ctx, a); short != nil && worked {
			w.keepHolds(ctx, p, refused)
			if pending != nil {
				return pending
			}
			log.Info("consultation: too little time left in this run for the next child; deferred", "child", c.Index)
			return short
		}
		r, created, err := w.consultChild(ctx, pol, p, c)
		worked = worked || created
		refused[c.Index] = r.Error != ""
		res.Children = append(res.Children, r)
		if err != nil && pending == nil {
			pending = err
		}
	}
	if pending != nil {
		if !a.last { // the last attempt's end: nothing follows to book them
			w.keepHolds(ctx, p, refused) // until the retry
		}
		return pending
	}
	if rw := t.ResultWriter(); rw != nil {
		b, _ := json.Marshal(res)
		_, _ = rw.Write(b)
	}
	log.Info("consultation completed in the background", "parent_guid", p.ParentGUID, "children", len(res.Children))
	return nil
}

// timeShort is a deferral when ctx's deadline leaves less than a patient
// step, else nil; nil on the last attempt, where Asynq would archive a
// deferral without the task's failure being reported.
func (w *Worker) timeShort(ctx context.Context, a attemptInfo) error {
	if a.last {
		return nil
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < w.cfg.patientStep() {
		return asynqrt.Defer(time.Second, "consultation: less than a patient step left in this run")
	}
	return nil
}

// consultChild is one child of the task: its patient, then its
// appointment task. created: the patient was created (or found after an
// uncertain SetPatient) in this call. err: try again later.
func (w *Worker) consultChild(ctx context.Context, pol *workerPolicy, p ConsultationTask, c ConsultChildTask) (_ consultChildResult, created bool, _ error) {
	r := consultChildResult{Index: c.Index}
	if why, ok := w.refusedChild(ctx, p, c); ok { // an earlier run reported it
		r.Error = why
		return r, false, nil
	}
	cp := c.Patient
	cp.ParentPatientGUID, cp.FamilyID = p.ParentGUID, p.FamilyID
	o := w.engine().ensurePatient(ctx, pol, cp, p.OperationID)
	created = o.kind == vBooked
	switch o.kind {
	case vLater:
		return r, created, laterErr(o)
	case vFailed:
		w.log.Warn("consultation: child patient refused for good", "operation_id", p.OperationID, "child", c.Index, "err", o.f.text())
		w.releaseChildren(ctx, []ConsultChildTask{c}, p)
		w.reportFailed(ctx, subject{opID: p.OperationID, opType: contracts.OpSetPatient, patientGUID: p.ParentGUID,
			patientName: cp.FirstName + " " + cp.LastName, childName: cp.FirstName + " " + cp.LastName, phone: p.Parent.Phone,
			startTime: c.Appointment.StartTime, created: p.CreatedAt},
			opError{class: o.f.errType(), text: o.f.text(), uncertain: o.f.uncertain},
			contracts.FailedNextStep(contracts.OpSetPatient, o.f.errType(), o.f.uncertain), w.cfg.Now())
		r.Error = o.f.text()
		w.recordRefused(ctx, p, c, r.Error)
		return r, created, nil
	case vBooked:
		w.patientCreated(ctx, pol, p, cp, o.guid)
	}
	r.PatientGUID, r.AppointmentOperationID = o.guid, c.AppointmentOpID
	ap := c.Appointment
	ap.PatientGUID = o.guid
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	err := w.EnqueueAppointment(bctx, AppointmentTask{OperationID: c.AppointmentOpID, CreatedAt: w.cfg.Now().UTC(),
		Appointment: ap, LocationGUID: firstNonEmpty(p.LocationGUID, w.cfg.LocationGUID), SessionID: p.SessionID,
		CallSessionID: strings.TrimSpace(p.Parent.SessionID), UUI: strings.TrimSpace(p.Parent.UUI),
		PatientName: p.Parent.FirstName + " " + p.Parent.LastName, PhoneNumber: p.Parent.Phone})
	if err != nil {
		return r, created, fmt.Errorf("queueing the appointment of child %d: %w", c.Index+1, err)
	}
	return r, created, nil
}

// patientCreated adds the new patient's comment and publishes
// patient_created.
func (w *Worker) patientCreated(ctx context.Context, pol *workerPolicy, p ConsultationTask, cp ConsultPatient, guid string) {
	note := p.Parent.Comment
	if cp.IsChild {
		note = childComment(p.Parent.FirstName+" "+p.Parent.LastName, p.ParentGUID, p.FamilyID, p.Parent.Comment)
	}
	w.addNote(ctx, p.OperationID+"-"+guid, guid, note)
	w.m.completed.WithLabelValues(contracts.OpSetPatient).Inc()
	w.publish(ctx, contracts.BookingCompletedEvent{Event: contracts.EventPatientCreated, OperationID: p.OperationID,
		OperationType: contracts.OpSetPatient, PatientGUID: guid, PatientName: cp.FirstName + " " + cp.LastName,
		Attempts: pol.a.attempt, CompletedAt: contracts.JSTime(w.cfg.Now())})
}

// releaseChildren releases the slots of children that will not be booked.
func (w *Worker) releaseChildren(ctx context.Context, cs []ConsultChildTask, p ConsultationTask) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	for _, c := range cs {
		w.engine().release(bctx, w.childHold(p, c))
	}
}

// keepHolds extends the slot holds of the children whose patient does not
// exist yet at the start of every run (Reservations.Confirm: the 300 s the
// call gave them at queue time again, or taken again if they lapsed and
// nobody took them): a family spread over runs — the write window,
// deferrals, retries with their backoff — keeps its slots until each
// child's appointment task, queued once its patient exists, holds its own.
// A child whose patient exists is left to that task (which may have
// released its slot for good), and so is a child refused for good (in skip,
// refused in this run, or marked by an earlier one: its slot was released).
func (w *Worker) keepHolds(ctx context.Context, p ConsultationTask, skip map[int]bool) {
	if w.d.Reservations == nil || len(p.Children) == 0 {
		return
	}
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	for _, c := range p.Children {
		if skip[c.Index] {
			continue
		}
		if _, refused := w.refusedChild(ctx, p, c); refused {
			continue // its slot was released for good
		}
		if rec, done, err := w.d.Marks.Completed(bctx, c.Patient.Key); err == nil && done && rec.PatientGUID != "" {
			continue
		}
		if err := w.d.Reservations.Confirm(bctx, w.childHold(p, c)); err != nil {
			w.log.Warn("consultation: a child's slot hold could not be extended", "operation_id", p.OperationID,
				"child", c.Index, "err", err)
		}
	}
}

// refusedChildKey is the marks' key recording that the task refused child
// c for good: the task's own (a new call may try the same child again).
func refusedChildKey(p ConsultationTask, c ConsultChildTask) string {
	return strings.NewReplacer("{", "", "}", "").Replace(fmt.Sprintf("consult-refused|%s|%d", p.OperationID, c.Index))
}

// recordRefused marks child c refused for good, so that a later run of the
// task (another child's retry, a deferral) neither sends its SetPatient
// again — a write of Cloud9's scarce quota, refused again — nor reports
// booking_failed twice, nor holds its released slot again. Lost (Redis
// down, its Done TTL past), the child is tried again, as before.
func (w *Worker) recordRefused(ctx context.Context, p ConsultationTask, c ConsultChildTask, why string) {
	bctx, cancel := markCtx(ctx)
	defer cancel()
	if err := w.d.Marks.Done(bctx, refusedChildKey(p, c), "", DoneRecord{Refused: why}); err != nil {
		w.log.Warn("consultation: could not record a refused child; a later run tries it again",
			"operation_id", p.OperationID, "child", c.Index, "err", err)
	}
}

// refusedChild answers whether an earlier run refused child c for good,
// and why.
func (w *Worker) refusedChild(ctx context.Context, p ConsultationTask, c ConsultChildTask) (string, bool) {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	rec, done, err := w.d.Marks.Completed(bctx, refusedChildKey(p, c))
	if err != nil || !done || rec.Refused == "" {
		return "", false
	}
	return rec.Refused, true
}

// childHold is child c's slot hold: the call's session holds it.
func (w *Worker) childHold(p ConsultationTask, c ConsultChildTask) SlotHold {
	return SlotHold{LocationGUID: firstNonEmpty(p.LocationGUID, w.cfg.LocationGUID), StartTime: c.Appointment.StartTime,
		ScheduleColumnGUID: c.Appointment.ScheduleColumnGUID, SessionID: p.SessionID, PatientName: c.Appointment.ChildName}
}

// laterErr is the task's error for a step to try again: the policy's own
// (a Defer: no attempt spent) or a retry with the backoff.
func laterErr(o patientOutcome) error {
	if o.err != nil {
		return o.err
	}
	return errors.New(o.detail)
}
