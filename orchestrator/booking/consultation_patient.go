package booking

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// The patient step of bookConsultation, written once for the sync path and
// the consultation task (the same policies as a booking attempt). A patient
// has an identity within its call — the session, the name and the date of
// birth (a parent: the phone) — and the booking marks (marks.go) keep it,
// as they keep a booking's:
//
//	Done mark ──────────────────────────────→ the recorded patient (cached)
//	lease (Claim) ── another attempt holds it ─→ later (policy.waitLease)
//	in-flight mark (an earlier SetPatient's outcome unknown: timeout,
//	dropped connection, crash mid-call) → GetPortalPatientLookup
//	   │   found (same name, birth date, phone) ─→ Done mark, the patient
//	   │   lookup impossible ─────────────────────→ later, never re-sent
//	limiter turn ── not now ──────────────────→ later
//	in-flight mark → SetPatient
//	   created ───────────────────────────────→ Done mark, token, session
//	   rate limited / unreachable ────────────→ mark cleared, later
//	   uncertain ─────────────────────────────→ mark kept, later (check first)
//	   refused, or final for the policy ─────→ failed
//
// So a retried call, the queued task, a second instance or a process
// restarted after a crash never sends SetPatient for a patient that may
// exist: a second patient is never created.
//
// ConsultPatient is one patient of a consultation (the task payload keeps
// it): what SetPatient gets, its identity within the call, and the comment
// added once it exists.
type ConsultPatient struct {
	PatientTask
	// Key is the patient's identity within the call (patientKey).
	Key string `json:"key"`
	// Comment is added with SetPatientComment right after the creation.
	Comment string `json:"comment,omitempty"`
}

// PatientMatch is a patient Cloud9 lists for a name.
type PatientMatch struct {
	PatientGUID string
	FirstName   string
	LastName    string
	BirthDate   string
	Phone       string
}

// PatientFinder is an optional Cloud9 extension: the patients whose name
// is "last, first" (GetPortalPatientLookup). Without it (and without the
// client's generic Call) an uncertain SetPatient is never resolved, so
// never sent again: the step stays "later" until its task gives up.
type PatientFinder interface {
	FindPatients(ctx context.Context, last, first string) ([]PatientMatch, error)
}

// cloud9Caller is *cloud9.Client's generic call, used for the lookup when
// the Cloud9 dependency has no FindPatients.
type cloud9Caller interface {
	Call(ctx context.Context, procedure string, params ...cloud9.Param) (*cloud9.Response, error)
}

var errNoPatientLookup = errors.New("no patient lookup: the Cloud9 client cannot search patients by name")

// findPatients asks Cloud9 for the patients named last, first.
func findPatients(ctx context.Context, c Cloud9, last, first string) ([]PatientMatch, error) {
	if f, ok := c.(PatientFinder); ok {
		return f.FindPatients(ctx, last, first)
	}
	cc, ok := c.(cloud9Caller)
	if !ok {
		return nil, errNoPatientLookup
	}
	// pageIndex counts from 1 (cloud9.PatientLookup).
	r, err := cc.Call(ctx, cloud9.ProcGetPortalPatientLookup, cloud9.P("filter", last+", "+first),
		cloud9.P("lookupByPatient", "1"), cloud9.P("pageIndex", "1"), cloud9.P("pageSize", "100"))
	if err != nil {
		return nil, err
	}
	out := make([]PatientMatch, 0, len(r.Records))
	for _, rec := range r.Records {
		out = append(out, PatientMatch{PatientGUID: rec.Get("PatientGUID"), FirstName: rec.Get("PatientFirstName"),
			LastName: rec.Get("PatientLastName"), BirthDate: rec.Get("PatientBirthDate"), Phone: rec.Get("PatientPhone")})
	}
	return out, nil
}

// patientKey is the marks' identity of a consultation patient: the call
// (session), and the person (a child: first, last, date of birth as in
// the original's childDedupCache; the parent: name and phone digits).
func patientKey(session string, p PatientTask) string {
	person := "child|" + strings.ToLower(p.FirstName+"|"+p.LastName) + "|" + normDate(p.BirthDate)
	if !p.IsChild {
		person = "parent|" + strings.ToLower(p.FirstName+"|"+p.LastName) + "|" + digits(p.Phone)
	}
	// Braces would break the marks' Cluster hash tag.
	return strings.NewReplacer("{", "", "}", "").Replace("consult-patient|" + strings.ToLower(strings.TrimSpace(session)) + "|" + person)
}

// normDate is a date of birth as MM/DD/YYYY (as sent when it does not
// parse).
func normDate(s string) string {
	if t, ok := contracts.ParseDOB(s); ok {
		return t.Format("01/02/2006")
	}
	return strings.TrimSpace(s)
}

func digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// matches reports whether m is p: same names (case-folded), same birth
// date when both have one, same phone digits (last 10) when both have one.
func (p ConsultPatient) matches(m PatientMatch) bool {
	if !strings.EqualFold(strings.TrimSpace(m.FirstName), p.FirstName) || !strings.EqualFold(strings.TrimSpace(m.LastName), p.LastName) {
		return false
	}
	if p.BirthDate != "" && m.BirthDate != "" && normDate(m.BirthDate) != normDate(p.BirthDate) {
		return false
	}
	a, b := digits(p.Phone), digits(m.Phone)
	return a == "" || b == "" || last10(a) == last10(b)
}

func last10(s string) string { return s[max(0, len(s)-10):] }

// patientOutcome is how a patient step ended.
type patientOutcome struct {
	kind     verdictKind // vBooked: created now (or found after an uncertain call); vDone: recorded; vLater; vFailed
	guid     string
	familyID string
	token    string
	detail   string // vLater: why
	err      error  // vLater: the policy's own error (a Defer)
	f        failure
}

func patientLater(detail string, err error) patientOutcome {
	return patientOutcome{kind: vLater, detail: detail, err: err}
}

// markTimeout bounds the marks that must land whatever is left of the
// request's budget: the lease's release (a lost one stalls the patient's
// next attempt for the lease TTL, about a minute), the Done mark and the
// session after a patient was made, the marks after a failed SetPatient.
const markTimeout = time.Second

func markCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
}

// ensurePatient runs the patient step of p with pol (see the diagram).
func (e engine) ensurePatient(ctx context.Context, pol policy, p ConsultPatient, ownerPrefix string) patientOutcome {
	if o, ok := e.recordedPatient(ctx, pol, p.Key); ok {
		return o
	}
	owner := newOwner(ownerPrefix)
	for {
		bctx, cancel := pol.bookkeeping(ctx)
		got, _, err := e.d.Marks.Claim(bctx, p.Key, Lease{Owner: owner, ChildName: p.FirstName}, e.cfg.leaseTTL())
		cancel()
		if err != nil {
			e.log.Warn("booking marks unavailable; never creating a patient unguarded", "err", err)
			return patientLater("booking marks unavailable", nil)
		}
		if got {
			break
		}
		wait, werr := pol.waitLease(ctx)
		if !wait {
			return patientLater("this patient is being created by another attempt", werr)
		}
	}
	// The previous holder may have just created it.
	if o, ok := e.recordedPatient(ctx, pol, p.Key); ok {
		e.releasePatient(ctx, p.Key, owner)
		return o
	}
	if o, found := e.checkPatient(ctx, pol, p, owner); found {
		return o
	}
	return e.sendPatient(ctx, pol, p, owner)
}

// recordedPatient answers from the patient's Done mark.
func (e engine) recordedPatient(ctx context.Context, pol policy, key string) (patientOutcome, bool) {
	bctx, cancel := pol.bookkeeping(ctx)
	rec, done, err := e.d.Marks.Completed(bctx, key)
	cancel()
	if err != nil {
		e.log.Warn("booking marks unavailable", "err", err)
		return patientLater("booking marks unavailable", nil), true
	}
	if !done || rec.PatientGUID == "" {
		return patientOutcome{}, false
	}
	return patientOutcome{kind: vDone, guid: rec.PatientGUID, familyID: rec.FamilyID}, true
}

// checkPatient looks the patient up when an earlier SetPatient's outcome is
// unknown (in-flight mark). found: the step ended here (found, or later).
func (e engine) checkPatient(ctx context.Context, pol policy, p ConsultPatient, owner string) (patientOutcome, bool) {
	bctx, cancel := pol.bookkeeping(ctx)
	inflight, err := e.d.Marks.InFlight(bctx, p.Key)
	cancel()
	if err == nil && !inflight {
		return patientOutcome{}, false
	}
	if _, ok, perr := pol.turn(ctx, cloud9.ProcGetPortalPatientLookup); !ok {
		e.releasePatient(ctx, p.Key, owner)
		return patientLater("earlier SetPatient's outcome unknown", perr), true
	}
	list, err := findPatients(ctx, e.d.Cloud9, p.LastName, p.FirstName)
	if err != nil {
		e.log.Warn("cannot look the patient up after an uncertain SetPatient; not sending it again", "err", err)
		e.releasePatient(ctx, p.Key, owner)
		f := failure{class: cloud9.ClassUnknown, code: -1, msg: "looking the patient up: " + err.Error(), uncertain: true}
		if pol.final(f) {
			return patientOutcome{kind: vFailed, f: f}, true
		}
		return patientLater("earlier SetPatient's outcome unknown", nil), true
	}
	for i := len(list) - 1; i >= 0; i-- { // newest last
		if p.matches(list[i]) {
			e.log.Info("patient found after an uncertain SetPatient; not sending it again", "patient_guid", list[i].PatientGUID)
			return e.patientMade(ctx, p, owner, list[i].PatientGUID), true
		}
	}
	bctx, cancel = markCtx(ctx)
	defer cancel()
	if err := e.d.Marks.Clear(bctx, p.Key, owner); err != nil {
		e.log.Warn("booking marks: clear failed", "err", err)
	}
	return patientOutcome{}, false
}

// sendPatient takes the limiter's turn, marks the call in flight and sends
// SetPatient.
func (e engine) sendPatient(ctx context.Context, pol policy, p ConsultPatient, owner string) patientOutcome {
	if _, ok, perr := pol.turn(ctx, cloud9.ProcSetPatient); !ok {
		e.releasePatient(ctx, p.Key, owner)
		return patientLater("Rate limited", perr)
	}
	bctx, cancel := pol.bookkeeping(ctx)
	held, err := e.d.Marks.Begin(bctx, p.Key, owner, e.cfg.leaseTTL())
	cancel()
	if err != nil || !held {
		e.log.Warn("booking marks: could not mark SetPatient in flight; not sending", "lease_held", held, "err", err)
		e.releasePatient(ctx, p.Key, owner)
		return patientLater("could not mark the patient in flight", nil)
	}
	guid, _, err := e.d.Cloud9.SetPatient(ctx, cloud9.PatientInput{FirstName: p.FirstName, LastName: p.LastName,
		ProviderGUID: p.ProviderGUID, LocationGUID: p.LocationGUID, BirthDate: p.BirthDate, Phone: p.Phone,
		Email: p.Email, Gender: p.Gender})
	if err == nil {
		return e.patientMade(ctx, p, owner, guid)
	}
	f := classify(err)
	bctx, cancel = markCtx(ctx)
	defer cancel()
	switch f.disposition() {
	case dispUncertain:
		// The mark stays: whoever runs this step next looks first.
		e.log.Warn("SetPatient outcome uncertain; looking the patient up before any retry", "err", f.text())
		if _, err := e.d.Marks.Extend(bctx, p.Key, owner, e.cfg.LeaseGrace); err != nil {
			e.log.Warn("booking marks: could not keep the lease", "err", err)
		}
	default:
		if err := e.d.Marks.Clear(bctx, p.Key, owner); err != nil {
			e.log.Warn("booking marks: clear failed", "err", err)
		}
		if _, err := e.d.Marks.Release(bctx, p.Key, owner); err != nil {
			e.log.Warn("booking marks: lease release failed (it expires by itself)", "err", err)
		}
	}
	if f.final() || pol.final(f) {
		e.log.Warn("SetPatient refused", "class", f.class, "err", f.text())
		return patientOutcome{kind: vFailed, f: f}
	}
	return patientLater(f.text(), nil)
}

// patientMade records a patient that exists (Done mark, which releases the
// lease), issues its bookingAuthToken and caches its session.
func (e engine) patientMade(ctx context.Context, p ConsultPatient, owner, guid string) patientOutcome {
	bctx, cancel := markCtx(ctx)
	defer cancel()
	if err := e.d.Marks.Done(bctx, p.Key, owner, DoneRecord{PatientGUID: guid, FamilyID: p.FamilyID, ChildName: p.FirstName}); err != nil {
		e.log.Warn("booking marks: could not record the created patient", "patient_guid", guid, "err", err)
	}
	sess, err := patientSession(bctx, e.d, e.cfg, p.PatientTask, guid, e.cfg.Now())
	if err != nil {
		e.log.Warn("patient created; its token or session could not be stored", "patient_guid", guid, "err", err)
	}
	return patientOutcome{kind: vBooked, guid: guid, familyID: p.FamilyID, token: sess.BookingAuthToken}
}

func (e engine) releasePatient(ctx context.Context, key, owner string) {
	bctx, cancel := markCtx(ctx)
	defer cancel()
	if _, err := e.d.Marks.Release(bctx, key, owner); err != nil {
		e.log.Warn("booking marks: lease release failed (it expires by itself)", "err", err)
	}
}

// consultComment is the insurance comment of a consultation's parent
// ("" when none was given).
func consultComment(r contracts.BookConsultationRequest) string {
	var parts []string
	for _, f := range []struct{ label, v string }{{"Insurance", r.InsuranceProvider}, {"Group", r.InsuranceGroupID},
		{"Member", r.InsuranceMemberID}} {
		if f.v != "" {
			parts = append(parts, f.label+": "+f.v)
		}
	}
	return strings.Join(parts, " | ")
}

// childComment is a child's comment: the parent and the family (never
// written to Cloud9 otherwise), then the parent's insurance.
func childComment(parentName, parentGUID, familyID, insurance string) string {
	s := "Parent: " + parentName + " (" + parentGUID + ") | Family: " + familyID
	if insurance != "" {
		s += " | " + insurance
	}
	return s
}
