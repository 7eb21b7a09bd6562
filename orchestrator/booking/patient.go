package booking

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// CreatePatient is POST createPatient (docs/reference/nodered-endpoints.md §1.1, parent-as-patient
// of docs/reference/nodered-endpoints.md §1.1): a repeat for the same call (uui, else sessionId, else
// msgid) with the same name answers the cached patient (`_cached:true`);
// otherwise SetPatient through the limiter within the sync budget, up to
// PatientSyncAttempts tries 5 s apart on rate-limit answers; then the
// bookingAuthToken is issued and the session cached (parent: by patientGUID
// and uui; child: by patientGUID) for SessionTTL. Rate limited, timed out or
// unreachable → queued (booking:set_patient, op-pat-…). Invalid input → the
// failure shape with 200; Cloud9 refusing the patient → the failure shape
// with 500 (Node-RED's status for it).
//
// A SetPatient whose outcome is uncertain is queued and sent again: Cloud9
// has no reliable way to find a patient created moments ago, so a duplicate
// patient is possible there (a duplicate appointment never is).
func (s *Service) CreatePatient(ctx context.Context, req contracts.CreatePatientRequest) Answer {
	now := s.cfg.Now()
	isChild := bool(req.IsChild)
	if a, bad := s.checkPatient(&req, now); bad {
		return a
	}
	rb := newRedisBudget(s.cfg.SyncBudget) // Redis work bounded (budget.go)
	name := req.PatientFirstName + " " + req.PatientLastName
	callKey := firstNonEmpty(req.UUI, req.SessionID, req.MsgID)
	if !isChild && callKey != "" {
		if a, hit := s.cachedPatient(ctx, rb, callKey, name, now); hit {
			return a
		}
	}
	familyID := req.FamilyID
	if !isChild || familyID == "" {
		familyID = uuid.NewString()
	}
	location := req.LocationGUID
	if !guidRE.MatchString(location) {
		location = s.cfg.LocationGUID
	}
	in := cloud9.PatientInput{FirstName: req.PatientFirstName, LastName: req.PatientLastName,
		ProviderGUID: firstNonEmpty(req.ProviderGUID, s.cfg.ProviderGUID), LocationGUID: location,
		BirthDate: firstNonEmpty(req.BirthdayDateTime, req.BirthDate), Phone: req.PhoneNumber, Email: req.EmailAddress,
		Gender: req.Gender}
	p := PatientTask{FirstName: in.FirstName, LastName: in.LastName, ProviderGUID: in.ProviderGUID, LocationGUID: in.LocationGUID,
		BirthDate: in.BirthDate, Phone: in.Phone, Email: in.Email, Gender: in.Gender, IsChild: isChild,
		ParentPatientGUID: req.ParentPatientGUID, FamilyID: familyID, UUI: req.UUI, SessionID: req.SessionID,
		TokenSessionID: firstNonEmpty(req.UUI, req.SessionID, req.MsgID)}

	deadline := now.Add(s.cfg.SyncBudget)
	var lastErr string
	for attempt := 1; attempt <= s.cfg.PatientSyncAttempts; attempt++ {
		if attempt > 1 && (!s.fits(s.cfg.SyncRetryDelay, deadline) || s.cfg.Sleep(ctx, s.cfg.SyncRetryDelay) != nil) {
			break
		}
		if _, fits := s.turn(ctx, rb, cloud9.ProcSetPatient, deadline); !fits {
			break
		}
		guid, result, err := s.d.Cloud9.SetPatient(ctx, in)
		if err == nil {
			rctx, cancel := rb.ctx(ctx)
			sess, terr := s.patientCreated(rctx, p, guid, s.cfg.Now())
			cancel()
			if terr != nil {
				s.log.Error("patient created but no bookingAuthToken could be issued", "patient_guid", guid, "err", terr)
			}
			s.count("createPatient", "created")
			return ok(contracts.NewPatientCreated(s.cfg.guidanceModel(), guid, familyID, sess.BookingAuthToken,
				firstNonEmpty(result, "Patient Added: "+guid), req.ParentPatientGUID, isChild, false))
		}
		f := classify(err)
		lastErr = f.text()
		switch f.disposition() {
		case dispRateLimited:
			continue
		case dispUncertain, dispUnavailable:
			return s.queuePatient(ctx, rb, p, isChild, lastErr)
		}
		s.count("createPatient", "failed")
		s.log.Warn("SetPatient refused", "err", err)
		return failed(contracts.NewPatientFailed(isChild, f.text(),
			firstNonEmpty(f.msg, "Patient creation failed"), f.errType(), nil, s.cfg.Now()))
	}
	return s.queuePatient(ctx, rb, p, isChild, firstNonEmpty(lastErr, "Rate limited"))
}

// checkPatient trims and validates a createPatient request; bad: the
// VALIDATION_ERROR answer.
func (s *Service) checkPatient(req *contracts.CreatePatientRequest, now time.Time) (Answer, bool) {
	isChild := bool(req.IsChild)
	trim(&req.PatientFirstName, &req.PatientLastName, &req.ParentPatientGUID, &req.FamilyID, &req.PhoneNumber,
		&req.EmailAddress, &req.UUI, &req.SessionID, &req.MsgID, &req.ProviderGUID, &req.LocationGUID)
	missing, invalid := s.val.check(*req)
	if isChild {
		switch {
		case req.ParentPatientGUID == "":
			missing = append(missing, "parentPatientGUID")
		case !guidRE.MatchString(req.ParentPatientGUID):
			invalid = append(invalid, "parentPatientGUID")
		}
	}
	if len(missing)+len(invalid) == 0 {
		return Answer{}, false
	}
	s.count("createPatient", "validation_error")
	msg := "Missing required fields: " + strings.Join(missing, ", ")
	if len(missing) == 0 {
		msg = "Invalid fields: " + strings.Join(invalid, ", ")
	}
	return ok(contracts.NewPatientFailed(isChild, contracts.BookingErrValidation+": "+msg, msg,
		contracts.BookingErrValidation, append(missing, invalid...), now)), true
}

// MalformedPatient answers a createPatient body that could not be decoded
// with the failure shape (error_type VALIDATION_ERROR) and 200.
func (s *Service) MalformedPatient(err error) Answer {
	s.count("createPatient", "validation_error")
	msg := "request body is not valid JSON"
	var ce *contracts.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	return ok(contracts.NewPatientFailed(false, contracts.BookingErrValidation+": "+msg, msg, contracts.BookingErrValidation,
		nil, s.cfg.Now()))
}

// QueueStatus is GET queue-status (see Worker.Status), answered within the
// sync budget: Asynq's inspector takes no context, so a hung Redis would
// hold it until the client's read timeouts — past the budget the answer is
// UNAVAILABLE (503) and the read ends in the background.
//
// Bad lookup keys or pages are refused (CodeInvalid) before Redis is read,
// and an anonymous query that names nothing is answered empty without it.
// Whatever the Queue answers, a query without q.Operator never gets a
// name back.
func (s *Service) QueueStatus(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	q, err := CheckQueueQuery(q)
	if err != nil {
		return contracts.QueueStatusResponse{}, err
	}
	if !q.Operator && !q.Lookup() {
		page, size, _ := pageOf(q)
		return contracts.QueueStatusResponse{Operations: []contracts.QueueOperation{}, Page: page, PageSize: size,
			TotalPages: 1, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeLookup}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SyncBudget)
	defer cancel()
	type result struct {
		r   contracts.QueueStatusResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := s.d.Queue.Status(ctx, q)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err == nil && !q.Operator { // a copy: the Queue may keep its slice
			ops := make([]contracts.QueueOperation, len(res.r.Operations))
			for i, op := range res.r.Operations {
				ops[i] = op.WithoutNames()
			}
			res.r.Operations = ops
		}
		if res.err == nil && (q.Lookup() || !q.Operator) {
			res.r.Scope = contracts.QueueScopeLookup
		}
		return res.r, res.err
	case <-ctx.Done():
		return contracts.QueueStatusResponse{}, &contracts.Error{Code: contracts.CodeUnavailable, Op: "booking.QueueStatus",
			Message: "the booking queue did not answer in time", Err: ctx.Err()}
	}
}

// cachedPatient answers a repeat createPatient of the same call and name
// from the session cache.
func (s *Service) cachedPatient(ctx context.Context, rb *redisBudget, callKey, name string, now time.Time) (Answer, bool) {
	ctx, cancel := rb.ctx(ctx)
	defer cancel()
	sess, found, err := s.d.Sessions.Lookup(ctx, "", callKey)
	if err != nil {
		s.log.Warn("booking session cache unavailable; creating the patient", "err", err)
		return Answer{}, false
	}
	if !found || sess.BookingAuthToken == "" || !sess.ExpiresAt.After(now) ||
		!strings.EqualFold(strings.Join(strings.Fields(sess.PatientName), " "), strings.Join(strings.Fields(name), " ")) {
		return Answer{}, false
	}
	s.count("createPatient", "cached")
	return ok(contracts.NewPatientCreated(s.cfg.guidanceModel(), sess.PatientGUID, sess.FamilyID, sess.BookingAuthToken,
		"Patient Added: "+sess.PatientGUID, "", false, true)), true
}

// patientSession issues the bookingAuthToken of a created patient and
// caches the session (the sync path and the worker share it). An error
// with a token set means only the cache put failed.
func patientSession(ctx context.Context, d Deps, cfg Config, p PatientTask, guid string, now time.Time) (Session, error) {
	sess := Session{PatientGUID: guid, FamilyID: p.FamilyID, PatientName: p.FirstName + " " + p.LastName,
		PhoneNumber: p.Phone, SessionID: p.SessionID, CreatedAt: now.UTC(), ExpiresAt: now.Add(cfg.SessionTTL).UTC()}
	if !p.IsChild {
		sess.UUI = firstNonEmpty(p.UUI, p.SessionID)
	}
	tokenSession := firstNonEmpty(p.TokenSessionID, "patient:"+guid)
	tok, err := d.Tokens.Issue(tokenSession, guid)
	if err != nil {
		return sess, err
	}
	sess.BookingAuthToken = tok
	return sess, d.Sessions.Put(ctx, sess)
}

func (s *Service) patientCreated(ctx context.Context, p PatientTask, guid string, now time.Time) (Session, error) {
	sess, err := patientSession(ctx, s.d, s.cfg, p, guid, now)
	if err != nil && sess.BookingAuthToken != "" {
		s.log.Warn("booking session cache: put failed (no auto-injection for this patient)", "patient_guid", guid, "err", err)
		err = nil
	}
	return sess, err
}

func (s *Service) queuePatient(ctx context.Context, rb *redisBudget, p PatientTask, isChild bool, lastErr string) Answer {
	ctx, cancel := rb.ctx(ctx)
	defer cancel()
	now := s.cfg.Now()
	p.OperationID, p.CreatedAt, p.SyncError = NewOperationID("op-pat", now), now.UTC(), lastErr
	if err := s.d.Queue.EnqueuePatient(ctx, p); err != nil {
		s.count("createPatient", "failed")
		s.log.Error("patient creation could not be queued", "err", err)
		return failed(contracts.NewPatientFailed(isChild,
			"could not queue the patient", "Patient creation failed", contracts.BookingErrException, nil, now))
	}
	s.count("createPatient", "queued")
	s.log.Info("patient creation queued", "operation_id", p.OperationID, "last_error", lastErr)
	return ok(contracts.NewPatientQueued(p.OperationID, p.FamilyID, p.ParentPatientGUID, isChild, s.cfg.StatusEndpoint))
}

func trim(ps ...*string) {
	for _, p := range ps {
		*p = strings.TrimSpace(*p)
	}
}
