package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-playground/validator/v10"
	"github.com/google/uuid"

	"github.com/flowgate/flowgate/contracts"
)

// ConsultAnswer is bookConsultation's body and HTTP status.
type ConsultAnswer struct {
	Body   any
	Status contracts.ConsultStatus
}

// consultMinutes is the original's default length of a consultation.
const consultMinutes = 40

// placeholderGUID stands for a child's patient while its slot is
// validated (the patient does not exist yet).
const placeholderGUID = "00000000-0000-4000-8000-000000000000"

// ConsultationQueue is the part of the Queue that runs consultations in
// the background; Worker implements it.
type ConsultationQueue interface {
	EnqueueConsultation(ctx context.Context, t ConsultationTask) error
}

// consultValidation is the shared validation plus the dob tag (a date of
// birth that parses, after 1900; the future is checked on the service's
// clock).
var consultValidation = sync.OnceValue(func() *validator.Validate {
	v := newValidation().v
	_ = v.RegisterValidation("dob", func(fl validator.FieldLevel) bool {
		t, ok := contracts.ParseDOB(fl.Field().String())
		return ok && t.Year() >= 1900
	})
	return v
})

// checkConsult validates req; the field names are JSON paths
// (children[1].dob).
func checkConsult(req contracts.BookConsultationRequest) (missing, invalid []string) {
	err := consultValidation().Struct(req)
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return nil, nil
	}
	for _, fe := range ves {
		_, name, _ := strings.Cut(fe.Namespace(), ".")
		if fe.Tag() == "required" {
			missing = append(missing, name)
		} else {
			invalid = append(invalid, name)
		}
	}
	return missing, invalid
}

// consultRun is one bookConsultation on the sync path.
type consultRun struct {
	s      *Service
	req    contracts.BookConsultationRequest
	start  time.Time
	holder string // reservation holder and the patients' call identity
	books  []booking
	// refused are the children named by raw fields whose slot the slot
	// source does not offer (checkSlots, offer.go).
	refused []offerState
	pol     *syncPolicy
	resp    contracts.ConsultationResponse
	task    ConsultationTask // the background part, when not empty
}

// bookConsultation (docs/reference/nodered-endpoints.md §1.3): parent, children and their
// appointments in one call, on the booking core:
//
//  1. Validation before anything is written: fields, types, dates of
//     birth, each child's slot resolved (bookingToken or raw fields,
//     defaults) and offered by the slot source (so unknown GUIDs and slots
//     are refused here, not after patients were created), no slot or
//     child named twice. → the validation shape, nothing changed.
//  2. Parent: the call's session (createPatient earlier in the call) or
//     the patient step (consultation_patient.go).
//  3. Each child: its slot held (SlotReservation, docs/holds.md#the-hold-engine), its patient
//     step, then its appointment through the one booking attempt
//     (Service.book: marks, limiter, check first, queued when not now).
//  4. Whatever cannot be done within the sync budget — the parent, a
//     child's patient — goes to one booking:consultation task
//     (consultation_worker.go) that runs the same steps in the background;
//     an appointment that cannot be made now is a booking:set_appointment
//     task as for createAppt. Every step is idempotent through the marks,
//     so a retried call, the task and a restart after a crash never create
//     a second patient or appointment.
//
// Status: 200 every child booked, 202 something queued, 207 some booked
// and some failed, 500 nothing booked (the parent failed, or every child).
//
// BookConsultation is POST bookConsultation (see the package's
// consultation overview above).
func (s *Service) BookConsultation(ctx context.Context, req contracts.BookConsultationRequest) ConsultAnswer {
	now := s.cfg.Now()
	trimConsult(&req)
	rb := newRedisBudget(s.cfg.SyncBudget)
	r := &consultRun{s: s, req: req, start: now,
		holder: firstNonEmpty(req.SessionID, req.UUI, "consult:"+digits(req.ParentPhone)),
		pol:    &syncPolicy{s: s, deadline: now.Add(s.cfg.callBudget()), rb: rb}}
	if bad := r.validate(ctx); bad != nil {
		s.count("bookConsultation", "validation_error")
		return ConsultAnswer{Body: *bad, Status: contracts.ConsultAllBooked}
	}
	r.resp = contracts.ConsultationResponse{Children: make([]contracts.ConsultChildResult, len(req.Children)),
		Parent: contracts.ConsultParent{FirstName: req.ParentFirstName, LastName: req.ParentLastName}}
	r.task = ConsultationTask{OperationID: NewOperationID("op-consult", now), CreatedAt: now.UTC(), SessionID: r.holder,
		LocationGUID: s.cfg.LocationGUID}
	switch {
	case r.allRefused(): // nothing can be booked: nothing is sent
		for i := range req.Children {
			r.notOffered(i)
		}
	case r.parent(ctx):
		for i := range req.Children {
			r.child(ctx, i)
		}
	}
	r.queueRest(ctx)
	return r.answer()
}

// MalformedConsultation answers a bookConsultation body that could not be
// decoded (not JSON, wrong types, too large).
func (s *Service) MalformedConsultation(err error) ConsultAnswer {
	s.count("bookConsultation", "validation_error")
	msg := "request body is not valid JSON"
	var ce *contracts.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	return ConsultAnswer{Body: contracts.NewConsultValidation(nil, nil, msg, s.cfg.Now()), Status: contracts.ConsultAllBooked}
}

func trimConsult(r *contracts.BookConsultationRequest) {
	trim(&r.ParentFirstName, &r.ParentLastName, &r.ParentPhone, &r.ParentEmail, &r.ParentDOB, &r.InsuranceProvider,
		&r.InsuranceGroupID, &r.InsuranceMemberID, &r.SessionID, &r.UUI)
	for i := range r.Children {
		c := &r.Children[i]
		trim(&c.FirstName, &c.LastName, &c.DOB, &c.BookingToken, &c.StartTime, &c.ScheduleViewGUID, &c.ScheduleColumnGUID,
			&c.AppointmentTypeGUID)
	}
}

// validate checks the request and resolves every child's slot; nil when
// it can be booked as sent.
func (r *consultRun) validate(ctx context.Context) *contracts.ConsultValidationResponse {
	s, now := r.s, r.s.cfg.Now()
	if missing, invalid := checkConsult(r.req); len(missing)+len(invalid) > 0 {
		v := contracts.NewConsultValidation(missing, invalid, "", now)
		return &v
	}
	rctx, cancel := r.pol.rb.ctx(ctx)
	defer cancel()
	var invalid []string
	slotsSeen, childrenSeen := map[string]bool{}, map[string]bool{}
	for i, c := range r.req.Children {
		minutes := int(c.Minutes)
		if minutes == 0 {
			minutes = consultMinutes
		}
		name := c.FirstName + " " + c.LastName
		b, bad := s.resolve(rctx, placeholderGUID, slotFields{bookingToken: c.BookingToken, startTime: c.StartTime,
			view: c.ScheduleViewGUID, column: c.ScheduleColumnGUID, apptType: c.AppointmentTypeGUID, minutes: minutes},
			name, "", r.holder) // no appointment note: the original writes one comment per child, before the appointment
		b.fromCall(r.req.SessionID, r.req.UUI)
		path := fmt.Sprintf("children[%d].", i)
		person := strings.ToLower(name) + "|" + normDate(c.DOB)
		switch dob, _ := contracts.ParseDOB(c.DOB); {
		case dob.After(now):
			invalid = append(invalid, path+"dob")
		case bad != nil:
			for _, f := range append(bad.missing, bad.invalid...) {
				invalid = append(invalid, path+f)
			}
		case slotsSeen[slotKey(b.StartTime, b.ScheduleColumnGUID)]:
			invalid = append(invalid, path+"startTime") // one chair, one time, one child
		case childrenSeen[person]:
			invalid = append(invalid, path+"firstName") // the same child twice
		}
		slotsSeen[slotKey(b.StartTime, b.ScheduleColumnGUID)], childrenSeen[person] = true, true
		r.books = append(r.books, b)
	}
	if len(invalid) == 0 {
		invalid = r.checkSlots(rctx)
	}
	if len(invalid) > 0 {
		v := contracts.NewConsultValidation(nil, invalid, "", now)
		return &v
	}
	return nil
}

// checkSlots asks the slot source once, for the days from the first
// child's to the last's, and names the children whose view, column or
// appointment type GUID no offered slot of their days has (validation
// errors). It records in r.refused the children named by raw fields whose
// slot is not offered, or could not be checked (offer.go: refused unless
// this call already booked it; answered per child as SLOT_NOT_AVAILABLE).
// The GUID check fails open: a slot source that cannot answer (or offers
// nothing there) refuses no GUID.
func (r *consultRun) checkSlots(ctx context.Context) []string {
	r.refused = make([]offerState, len(r.books))
	if r.s.d.Slots == nil || len(r.books) == 0 {
		return nil
	}
	res, err := r.s.d.Slots.Slots(ctx, offerQuery(r.books, r.holder))
	if err != nil {
		r.s.log.Warn("bookConsultation: slots unavailable; children named by raw fields are refused", "err", err)
	}
	var invalid []string
	for i := range r.books {
		b := &r.books[i]
		if err == nil {
			if f := unknownGUID(*b, res.Slots); f != "" {
				invalid = append(invalid, fmt.Sprintf("children[%d].%s", i, f))
			}
		}
		c := r.req.Children[i]
		if list := r.s.found(ctx, *b); list != nil {
			if !fitOffer(b, list, c.Minutes != 0) {
				r.refused[i] = slotNotOffered
			}
			continue
		}
		switch list, cerr := r.s.candidates(ctx, *b, res.Slots, err); {
		case cerr != nil && c.BookingToken != "": // as createAppt: a token's booking fails open (offer.go)
		case cerr != nil:
			r.refused[i] = slotUnchecked
		case !fitOffer(b, list, c.Minutes != 0):
			r.refused[i] = slotNotOffered
		}
	}
	if len(invalid) > 0 {
		return invalid
	}
	for i := range r.books { // as createAppt: not with minutes of its own (offer.go)
		if r.refused[i] != slotOffered && r.s.markedFits(r.books[i], r.req.Children[i].Minutes != 0) && r.bookedHere(ctx, i) {
			r.refused[i] = slotOffered
		}
	}
	return nil
}

// bookedHere reports whether this call already booked child i on its slot
// (the child's patient and appointment Done marks): the same call
// repeated is answered from the marks.
func (r *consultRun) bookedHere(ctx context.Context, i int) bool {
	c := r.req.Children[i]
	rec, done, err := r.s.d.Marks.Completed(ctx, patientKey(r.holder, PatientTask{FirstName: c.FirstName, LastName: c.LastName,
		BirthDate: normDate(c.DOB), IsChild: true}))
	if err != nil || !done || rec.PatientGUID == "" {
		return false
	}
	_, done, err = r.s.d.Marks.Completed(ctx, IdentityKey(rec.PatientGUID, r.books[i].StartTime, r.books[i].ScheduleColumnGUID))
	return err == nil && done
}

// notOffered answers child i whose slot is not offered: SLOT_NOT_AVAILABLE
// with the slot-conflict advice, as a slot Cloud9 refused; no hold, no
// patient, no appointment.
func (r *consultRun) notOffered(i int) {
	res := &r.resp.Children[i]
	res.FirstName, res.LastName, res.Appointment.StartTime = r.req.Children[i].FirstName, r.req.Children[i].LastName, r.books[i].StartTime
	res.ErrorType = contracts.BookingErrSlotNotAvailable
	res.Error = contracts.FailedMessage(contracts.BookingErrSlotNotAvailable, "")
	res.LLMGuidance = contracts.NewSlotConflictAdvice("", res.FirstName)
	r.s.log.Info("bookConsultation: child's slot not offered; not booked", "child", i, "start", r.books[i].StartTime,
		"column", r.books[i].ScheduleColumnGUID, "minutes", r.books[i].Minutes, "unchecked", r.refused[i] == slotUnchecked)
}

// allRefused: no child's slot is offered (then not even the parent is
// made).
func (r *consultRun) allRefused() bool {
	for _, st := range r.refused {
		if st == slotOffered {
			return false
		}
	}
	return len(r.refused) > 0
}

// unknownGUID names the first GUID field of b that no offered slot of list
// has ("" when all are known). The time is not checked here: a slot taken
// since it was offered has left the list, which is a slot conflict answered
// per child (checkSlots, offer.go), not bad input.
func unknownGUID(b booking, list []contracts.ApptSlot) string {
	if len(list) == 0 {
		return ""
	}
	views, cols, types := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, sl := range list {
		views[strings.ToLower(sl.ScheduleViewGUID)] = true
		cols[strings.ToLower(sl.ScheduleColumnGUID)] = true
		if sl.AppointmentTypeGUID != "" {
			types[strings.ToLower(sl.AppointmentTypeGUID)] = true
		}
	}
	switch {
	case !views[strings.ToLower(b.ScheduleViewGUID)]:
		return "scheduleViewGUID"
	case !cols[strings.ToLower(b.ScheduleColumnGUID)]:
		return "scheduleColumnGUID"
	case len(types) > 0 && !types[strings.ToLower(b.AppointmentTypeGUID)]:
		return "appointmentTypeGUID"
	}
	return ""
}

// parent runs the parent's step; false when the children cannot follow
// now (queued or failed).
func (r *consultRun) parent(ctx context.Context) bool {
	s, req := r.s, r.req
	p := ConsultPatient{PatientTask: PatientTask{FirstName: req.ParentFirstName, LastName: req.ParentLastName,
		ProviderGUID: s.cfg.ProviderGUID, LocationGUID: s.cfg.LocationGUID, BirthDate: req.ParentDOB, Phone: req.ParentPhone,
		Email: req.ParentEmail, FamilyID: uuid.NewString(), UUI: req.UUI, SessionID: req.SessionID,
		TokenSessionID: r.holder}}
	p.Key = patientKey(r.holder, p.PatientTask)
	p.Comment = consultComment(req)
	r.task.Parent = p
	if sess, ok := r.callSession(ctx); ok {
		r.parentDone(sess.PatientGUID, sess.FamilyID, false)
		return true
	}
	o := s.engine().ensurePatient(ctx, r.pol, p, "sync")
	switch o.kind {
	case vBooked, vDone:
		r.parentDone(o.guid, firstNonEmpty(o.familyID, p.FamilyID), o.kind == vBooked)
		if o.kind == vBooked && p.Comment != "" {
			s.addNote(ctx, r.pol, o.guid, p.Comment)
		}
		return true
	case vLater:
		r.resp.Parent.Queued, r.resp.Parent.OperationID, r.resp.FamilyID = true, r.task.OperationID, p.FamilyID
		r.resp.Parent.FamilyID = p.FamilyID
		for i := range req.Children {
			r.queueChild(ctx, i)
		}
		return false
	}
	r.resp.Parent.Error = o.f.text()
	r.resp.Error = "Parent creation failed: " + o.f.text()
	return false
}

// callSession is the parent created earlier in this call (createPatient),
// by name.
func (r *consultRun) callSession(ctx context.Context) (Session, bool) {
	call := firstNonEmpty(r.req.UUI, r.req.SessionID)
	if call == "" {
		return Session{}, false
	}
	rctx, cancel := r.pol.rb.ctx(ctx)
	defer cancel()
	sess, found, err := r.s.d.Sessions.Lookup(rctx, "", call)
	if err != nil || !found || !strings.EqualFold(strings.Join(strings.Fields(sess.PatientName), " "),
		r.req.ParentFirstName+" "+r.req.ParentLastName) {
		return Session{}, false
	}
	return sess, true
}

func (r *consultRun) parentDone(guid, familyID string, created bool) {
	r.resp.Parent.PatientGUID, r.resp.Parent.FamilyID = &guid, familyID
	r.resp.Parent.Created, r.resp.Parent.Cached = created, !created
	r.resp.FamilyID = familyID
	r.task.ParentGUID, r.task.FamilyID = guid, familyID
	r.task.Parent.FamilyID = familyID
}

// childPatient is child i's patient step input.
func (r *consultRun) childPatient(i int) ConsultPatient {
	c, s := r.req.Children[i], r.s
	p := ConsultPatient{PatientTask: PatientTask{FirstName: c.FirstName, LastName: c.LastName, ProviderGUID: s.cfg.ProviderGUID,
		LocationGUID: s.cfg.LocationGUID, BirthDate: normDate(c.DOB), IsChild: true, ParentPatientGUID: r.task.ParentGUID,
		FamilyID: r.task.Parent.FamilyID, UUI: r.req.UUI, SessionID: r.req.SessionID, TokenSessionID: r.holder}}
	p.Key = patientKey(r.holder, p.PatientTask)
	return p
}

// child runs child i: hold its slot, its patient step, its appointment.
func (r *consultRun) child(ctx context.Context, i int) {
	s, b := r.s, r.books[i]
	if r.refused[i] != slotOffered {
		r.notOffered(i)
		return
	}
	res := &r.resp.Children[i]
	res.FirstName, res.LastName, res.Appointment.StartTime = r.req.Children[i].FirstName, r.req.Children[i].LastName, b.StartTime
	if !s.fits(0, r.pol.deadline) { // the budget is spent: the task does the rest, no more Redis work here
		r.queueChild(ctx, i)
		return
	}
	if !r.hold(ctx, i) {
		res.ErrorType, res.Error = contracts.BookingErrSlotReserved, "This time is being booked by another caller."
		res.LLMGuidance = contracts.NewSlotConflictAdvice("", res.FirstName)
		return
	}
	p := r.childPatient(i)
	o := s.engine().ensurePatient(ctx, r.pol, p, "sync")
	switch o.kind {
	case vLater:
		r.queueChild(ctx, i)
		return
	case vFailed:
		res.ErrorType, res.Error = o.f.errType(), "Child patient creation failed: "+o.f.text()
		s.engine().release(ctx, s.hold(b))
		return
	}
	guid := o.guid
	res.PatientGUID, res.Created, res.Cached = &guid, o.kind == vBooked, o.kind == vDone
	if o.kind == vBooked {
		s.addNote(ctx, r.pol, guid, childComment(r.req.ParentFirstName+" "+r.req.ParentLastName, r.task.ParentGUID,
			r.task.FamilyID, r.task.Parent.Comment))
	}
	b.PatientGUID, b.AuthMethod = guid, contracts.AuthMethodSessionMatch
	r.fillAppointment(res, s.book(ctx, b, r.pol.deadline, r.pol.rb))
}

// hold takes child i's slot reservation for the call (same call:
// idempotent); false when another call holds it. Redis trouble fails open.
func (r *consultRun) hold(ctx context.Context, i int) bool {
	if r.s.d.Reservations == nil {
		return true
	}
	rctx, cancel := r.pol.rb.ctx(ctx)
	defer cancel()
	err := r.s.d.Reservations.Reserve(rctx, r.s.hold(r.books[i]))
	if err != nil && !errors.Is(err, ErrSlotReserved) {
		r.s.log.Warn("slot reservation unavailable; booking without it (fail open)", "err", err)
	}
	return !errors.Is(err, ErrSlotReserved)
}

// queueChild hands child i to the consultation task.
func (r *consultRun) queueChild(ctx context.Context, i int) {
	if r.refused[i] != slotOffered {
		r.notOffered(i)
		return
	}
	b := r.books[i]
	res := &r.resp.Children[i]
	res.FirstName, res.LastName, res.Appointment.StartTime = r.req.Children[i].FirstName, r.req.Children[i].LastName, b.StartTime
	if r.resp.Parent.Queued && r.s.fits(0, r.pol.deadline) && !r.hold(ctx, i) {
		res.ErrorType, res.Error = contracts.BookingErrSlotReserved, "This time is being booked by another caller."
		res.LLMGuidance = contracts.NewSlotConflictAdvice("", res.FirstName)
		return
	}
	ct := ConsultChildTask{Index: i, Patient: r.childPatient(i), Appointment: b.Appointment,
		AppointmentOpID: r.task.OperationID + "-appt" + fmt.Sprint(i+1)}
	r.task.Children = append(r.task.Children, ct)
	res.Queued, res.OperationID = true, r.task.OperationID
	res.Appointment.Queued, res.Appointment.OperationID = true, ct.AppointmentOpID
}

// fillAppointment puts a child's booking outcome into its result.
func (r *consultRun) fillAppointment(res *contracts.ConsultChildResult, o outcome) {
	switch o.kind {
	case kindBooked:
		g := o.apptGUID
		res.Success, res.Appointment.AppointmentGUID, res.Appointment.Booked = true, &g, true
	case kindQueued:
		res.Queued, res.OperationID = true, o.opID
		res.Appointment.Queued, res.Appointment.OperationID = true, o.opID
	case kindReserved, kindDuplicate:
		res.ErrorType, res.Error = contracts.BookingErrSlotReserved, "This time is no longer available."
		res.LLMGuidance = contracts.NewSlotConflictAdvice(*res.PatientGUID, res.FirstName)
	default:
		res.ErrorType, res.Error = o.errType, contracts.FailedMessage(o.errType, o.c9Msg)
		if o.errType == contracts.BookingErrSlotNotAvailable {
			res.LLMGuidance = contracts.NewSlotConflictAdvice(*res.PatientGUID, res.FirstName)
		}
	}
}

// queueRest enqueues the consultation task for what is left; if it cannot
// be queued those items fail (their slots released). It has a Redis budget
// of its own (RedisTimeout): the sync budget may be spent by now, and the
// work already done must not be answered as lost for want of one enqueue.
func (r *consultRun) queueRest(ctx context.Context) {
	if len(r.task.Children) == 0 && !r.resp.Parent.Queued {
		return
	}
	bctx, cancel := newRedisBudget(r.s.cfg.RedisTimeout).ctx(ctx)
	defer cancel()
	q, ok := r.s.d.Queue.(ConsultationQueue)
	err := errors.New("the queue cannot run consultations")
	if ok {
		err = q.EnqueueConsultation(bctx, r.task)
	}
	if err == nil {
		r.confirmHolds(bctx)
		r.s.log.Info("consultation queued", "operation_id", r.task.OperationID, "parent_queued", r.resp.Parent.Queued,
			"children", len(r.task.Children))
		return
	}
	r.s.log.Error("consultation could not be queued", "operation_id", r.task.OperationID, "err", err)
	r.resp.Parent.Queued, r.resp.Parent.OperationID = false, ""
	if r.resp.Parent.PatientGUID == nil {
		r.resp.Parent.Error = "could not queue the parent"
	}
	for _, ct := range r.task.Children {
		res := &r.resp.Children[ct.Index]
		res.Queued, res.OperationID, res.Appointment = false, "", contracts.ConsultAppointment{StartTime: res.Appointment.StartTime}
		res.ErrorType, res.Error = contracts.BookingErrException, "could not queue the child"
		r.s.engine().release(bctx, r.s.hold(r.books[ct.Index]))
	}
	r.task.Children = nil
}

// confirmHolds keeps the queued children's slots held (300 s) until their
// appointment tasks take them over.
func (r *consultRun) confirmHolds(ctx context.Context) {
	if r.s.d.Reservations == nil {
		return
	}
	for _, ct := range r.task.Children {
		if err := r.s.d.Reservations.Confirm(ctx, r.s.hold(r.books[ct.Index])); err != nil {
			r.s.log.Warn("slot reservation: extend failed", "err", err)
		}
	}
}

// answer is the response and its status.
func (r *consultRun) answer() ConsultAnswer {
	resp := &r.resp
	booked, failedN := 0, 0
	for _, c := range resp.Children {
		switch {
		case c.Queued:
			resp.AnyQueued = true
		case c.Success:
			booked++
		default:
			failedN++
		}
	}
	resp.AnyQueued = resp.AnyQueued || resp.Parent.Queued
	st := contracts.ConsultFailed
	switch {
	case resp.Parent.Error != "":
	case resp.AnyQueued:
		st = contracts.ConsultQueued
		resp.OperationID = r.task.OperationID
	case failedN == 0:
		st = contracts.ConsultAllBooked
	case booked > 0:
		st = contracts.ConsultPartial
	}
	resp.Success = st == contracts.ConsultAllBooked
	resp.PartialSuccess = booked > 0 && (failedN > 0 || resp.AnyQueued)
	resp.ElapsedMS = r.s.cfg.Now().Sub(r.start).Milliseconds()
	resp.LLMGuidance = contracts.ConsultGuidance(st, resp.Children, resp.Parent.Queued, resp.Parent.Error != "",
		r.task.OperationID, r.s.cfg.Now())
	if st == contracts.ConsultFailed && resp.Error == "" {
		resp.Error = "No appointment could be booked"
	}
	resp.Status = st
	r.s.count("bookConsultation", map[contracts.ConsultStatus]string{contracts.ConsultAllBooked: "booked",
		contracts.ConsultQueued: "queued", contracts.ConsultPartial: "partial", contracts.ConsultFailed: "failed"}[st])
	return ConsultAnswer{Body: *resp, Status: st}
}
