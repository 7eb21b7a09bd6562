package booking

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// EditInsurance answers editInsurance: one SetPatientComment carrying the
// insurance text block (InsuranceComment), through the shared limiter.
func (f *Family) EditInsurance(ctx context.Context, req contracts.EditInsuranceRequest) Answer {
	missing, bad := famCheckGUID("patientGUID", req.PatientGUID)
	if strings.TrimSpace(req.InsuranceProvider+req.InsuranceGroupID+req.InsuranceMemberID) == "" {
		missing = append(missing, "insuranceProvider")
	}
	if missing != nil || bad != "" {
		return ok(contracts.ResultResponse{Message: "Insurance not updated", Error: famInvalidText(missing, bad),
			LLMGuidance: famInvalid(bad, missing...)})
	}
	comment := InsuranceComment(req, f.cfg.Now().In(f.cfg.PracticeZone))
	if err := f.turn(ctx, cloud9.ProcSetPatientComment); err != nil {
		return f.writeFailed("editInsurance", err)
	}
	_, _, err := f.d.Cloud9.SetPatientComment(ctx, strings.TrimSpace(req.PatientGUID), comment)
	if err != nil {
		return f.writeRefusal("editInsurance", "patient", err)
	}
	return ok(contracts.ResultResponse{Success: true, Message: "Insurance information updated"})
}

// InsuranceComment is editInsurance's SetPatientComment text: a header
// with the date, then one line per field given.
func InsuranceComment(req contracts.EditInsuranceRequest, now time.Time) string {
	lines := []string{"Insurance Information (updated " + now.Format("01/02/2006") + ")"}
	for _, l := range []struct{ name, v string }{{"Provider", req.InsuranceProvider},
		{"Group ID", req.InsuranceGroupID}, {"Member ID", req.InsuranceMemberID}} {
		if v := strings.TrimSpace(l.v); v != "" {
			lines = append(lines, l.name+": "+v)
		}
	}
	return strings.Join(lines, "\n")
}

// MalformedResult answers editInsurance's or confirmAppt's body that is
// not its JSON.
func (f *Family) MalformedResult(err error) Answer {
	return ok(contracts.ResultResponse{Message: "Request not understood", Error: MalformedText(err), LLMGuidance: famInvalid("")})
}

// ConfirmAppt answers confirmAppt: SetAppointmentStatusConfirmed through
// the shared limiter.
func (f *Family) ConfirmAppt(ctx context.Context, req contracts.ConfirmApptRequest) Answer {
	id := firstNonEmpty(req.AppointmentID, req.AppointmentGUID)
	if missing, bad := famCheckGUID("appointmentId", id); missing != nil || bad != "" {
		return ok(contracts.ResultResponse{Message: "Appointment not confirmed", Error: famInvalidText(missing, bad),
			LLMGuidance: famInvalid(bad, missing...)})
	}
	if err := f.turn(ctx, cloud9.ProcSetAppointmentStatusConfirmed); err != nil {
		return f.writeFailed("confirmAppt", err)
	}
	if _, err := f.d.Cloud9.SetAppointmentStatusConfirmed(ctx, id); err != nil {
		return f.writeRefusal("confirmAppt", "appointment", err)
	}
	return ok(contracts.ResultResponse{Success: true, Message: "Appointment confirmed"})
}

// writeFailed is the answer when a write could not be sent (no limiter
// turn in time, context ended): nothing was changed.
func (f *Family) writeFailed(endpoint string, err error) Answer {
	f.log.Warn(endpoint+": write not sent", "err", err)
	return failed(contracts.ResultResponse{Message: famMessage(err), Error: err.Error(), LLMGuidance: famFailedGuidance(err)})
}

// writeRefusal is the answer to a write Cloud9 refused or that failed.
func (f *Family) writeRefusal(endpoint, what string, err error) Answer {
	if famClassify(err) == famRefused {
		return ok(contracts.ResultResponse{Message: famMessage(err), LLMGuidance: famNotFound(what)})
	}
	f.log.Warn(endpoint+": Cloud9 write failed", "err", err)
	return failed(contracts.ResultResponse{Message: famMessage(err), Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
}

// CancelAppt answers cancelAppt: SetAppointmentStatusCanceled through the
// shared limiter; on success the slot is given back — the hold or
// reservation released, the appointment's cooldown cleared, the slot put
// back into the slot cache (`_cacheRevalidated`), and the change
// published. Those follow-ups are best effort (logged): the cancellation
// itself has happened. The slot is Cloud9's appointment record when
// patientGUID finds it; otherwise a request carrying startTime and
// scheduleViewGUID (the original's revalidation, docs/reference/nodered-endpoints.md §1.6) has its
// slot revalidated with Cloud9 (revalidate) and restored when Cloud9
// offers it open — never on the request's word alone.
func (f *Family) CancelAppt(ctx context.Context, req contracts.CancelApptRequest) Answer {
	id := firstNonEmpty(req.AppointmentGUID, req.AppointmentID)
	missing, bad := famCheckGUID("appointmentGUID", id)
	if m, b := famCheckGUID("patientGUID", req.PatientGUID); req.PatientGUID != "" && m == nil && b != "" {
		bad = b
	}
	if missing != nil || bad != "" {
		return ok(contracts.CancelResponse{Message: "Appointment not canceled", Error: famInvalidText(missing, bad),
			LLMGuidance: famInvalid(bad, missing...)})
	}
	slot, confirmed := f.cancelSlot(ctx, id, req)
	if err := f.turn(ctx, cloud9.ProcSetAppointmentStatusCanceled); err != nil {
		f.log.Warn("cancelAppt: write not sent", "err", err)
		return failed(contracts.CancelResponse{Message: famMessage(err), Error: err.Error(), LLMGuidance: famFailedGuidance(err)})
	}
	if _, err := f.d.Cloud9.SetAppointmentStatusCanceled(ctx, id); err != nil {
		if famClassify(err) == famRefused {
			return ok(contracts.CancelResponse{Message: famMessage(err), LLMGuidance: famNotFound("appointment")})
		}
		f.log.Warn("cancelAppt: Cloud9 write failed", "err", err)
		return failed(contracts.CancelResponse{Message: famMessage(err), Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
	}
	out := contracts.CancelResponse{Success: true, Message: "Appointment canceled"}
	f.giveBack(ctx, id, slot, confirmed, &out)
	return ok(out)
}

// MalformedCancel answers cancelAppt's body that is not its JSON.
func (f *Family) MalformedCancel(err error) Answer {
	return ok(contracts.CancelResponse{Message: "Request not understood", Error: MalformedText(err), LLMGuidance: famInvalid("")})
}

// cancelSlot is the slot the appointment holds. Cloud9's appointment list
// (patientGUID given) is the authority: when it has the appointment, its
// fields win and the request's only fill gaps, and confirmed is true.
// Otherwise the slot is the request's description, unconfirmed: giveBack
// then neither releases a hold nor restores a slot on the caller's word.
func (f *Family) cancelSlot(ctx context.Context, id string, req contracts.CancelApptRequest) (s slots.Slot, confirmed bool) {
	s = slots.Slot{StartTime: strings.TrimSpace(req.StartTime), ScheduleViewGUID: strings.TrimSpace(req.ScheduleViewGUID),
		ScheduleColumnGUID: strings.TrimSpace(req.ScheduleColumnGUID), AppointmentTypeGUID: strings.TrimSpace(req.AppointmentTypeGUID),
		Minutes: int(req.Minutes), LocationGUID: f.cfg.LocationGUID}
	if req.PatientGUID == "" {
		return s, false
	}
	appts, err := f.d.Cloud9.GetAppointmentListByPatient(ctx, strings.TrimSpace(req.PatientGUID))
	if err != nil {
		f.log.Warn("cancelAppt: appointment list unreadable; the slot cannot be confirmed", "err", err)
		return s, false
	}
	for _, a := range appts {
		if !strings.EqualFold(a.AppointmentGUID, id) {
			continue
		}
		s.StartTime = firstNonEmpty(strings.TrimSpace(a.AppointmentDateTime), s.StartTime)
		s.ScheduleViewGUID = firstNonEmpty(strings.TrimSpace(a.ScheduleViewGUID), s.ScheduleViewGUID)
		s.ScheduleColumnGUID = firstNonEmpty(strings.TrimSpace(a.ScheduleColumnGUID), s.ScheduleColumnGUID)
		s.AppointmentTypeGUID = firstNonEmpty(strings.TrimSpace(a.AppointmentTypeGUID), s.AppointmentTypeGUID)
		s.AppointmentTypeDescription = a.AppointmentTypeDescription
		s.LocationGUID = firstNonEmpty(a.LocationGUID, s.LocationGUID)
		if a.Minutes > 0 {
			s.Minutes = a.Minutes
		}
		return s, true
	}
	return s, false
}

// giveBack runs cancelAppt's follow-ups, each bounded by
// SideEffectTimeout and detached from the request's end. A slot not
// confirmed from the appointment list (cancelSlot) releases no hold, and
// is restored only as Cloud9 offers it (revalidate).
func (f *Family) giveBack(ctx context.Context, id string, s slots.Slot, confirmed bool, out *contracts.CancelResponse) {
	bctx := context.WithoutCancel(ctx)
	step := func(name string, run func(context.Context) error) {
		sctx, cancel := context.WithTimeout(bctx, f.cfg.SideEffectTimeout)
		defer cancel()
		if err := run(sctx); err != nil {
			f.log.Warn("cancelAppt: "+name+" failed", "appointment", id, "err", err)
		}
	}
	if f.d.Holds != nil {
		step("clear cooldown", func(c context.Context) (err error) {
			out.CooldownCleared, err = f.d.Holds.ClearCooldown(c, id)
			return err
		})
	}
	start, err := s.Start()
	if err != nil {
		return // no start time known: there is no slot to give back
	}
	if f.d.Holds != nil && confirmed && s.ScheduleColumnGUID != "" {
		at := slots.WallInstant(f.cfg.PracticeZone, time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC),
			start.Hour()*60+start.Minute()).UTC()
		step("release hold", func(c context.Context) (err error) {
			out.SlotReleased, err = f.d.Holds.ReleaseSlot(c, s.AppointmentTypeGUID, s.ScheduleColumnGUID, at)
			return err
		})
	}
	if f.d.Slots != nil && s.ScheduleViewGUID != "" && (s.ScheduleColumnGUID != "" || !confirmed) {
		step("restore slot", func(c context.Context) error {
			r := s
			if !confirmed {
				var open bool
				var err error
				if r, open, err = f.revalidate(c, s, start); err != nil || !open {
					return err
				}
			}
			if r.Minutes <= 0 {
				r.Minutes = slots.DefaultMinutes
			}
			if r.EndTime == "" {
				r.EndTime = slots.FormatTime(start.Add(r.Length()))
			}
			if err := f.d.Slots.RestoreSlot(c, r); err != nil {
				return err
			}
			out.CacheRevalidated = true
			return nil
		})
	}
	if f.d.Changes != nil {
		step("publish", func(c context.Context) error {
			return f.d.Changes.PublishSlotChange(c, contracts.SlotChangeEvent{Event: contracts.EventSlotReleased, AppointmentGUID: id,
				StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
				AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: s.Minutes, LocationGUID: s.LocationGUID,
				At: contracts.JSTime(f.cfg.Now())})
		})
	}
}

// revalidate asks Cloud9 whether the slot a cancel request describes is
// open now: GetOnlineReservations for its day and view, through the shared
// limiter. open is true with Cloud9's record of the slot at that start (to
// the minute) in the request's chair, else ScheduleColumnGUID (the
// original's Chair 8); a slot Cloud9 does not offer — still booked, or
// described wrongly — is not restored.
func (f *Family) revalidate(ctx context.Context, s slots.Slot, start time.Time) (slots.Slot, bool, error) {
	if err := f.turn(ctx, cloud9.ProcGetOnlineReservations); err != nil {
		return s, false, err
	}
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	list, err := f.d.Cloud9.GetOnlineReservations(ctx, cloud9.ReservationQuery{StartDate: day,
		EndDate: day.Add(24*time.Hour - time.Minute), ScheduleViewGUIDs: []string{s.ScheduleViewGUID}})
	if err != nil {
		return s, false, err
	}
	column := firstNonEmpty(s.ScheduleColumnGUID, f.cfg.ScheduleColumnGUID)
	for _, c := range list {
		t, err := slots.ParseTime(c.StartTime)
		if err != nil || !t.Truncate(time.Minute).Equal(start.Truncate(time.Minute)) ||
			!strings.EqualFold(c.ScheduleColumnGUID, column) || !strings.EqualFold(c.ScheduleViewGUID, s.ScheduleViewGUID) {
			continue
		}
		return slots.Slot{StartTime: c.StartTime, EndTime: c.EndTime, ScheduleViewGUID: c.ScheduleViewGUID,
			ScheduleViewDescription: c.ScheduleViewDescription, ScheduleColumnGUID: c.ScheduleColumnGUID,
			ScheduleColumnDescription: c.ScheduleColumnDescription, ScheduleTemplateName: c.ScheduleTemplateName,
			AppointmentClassGUID: c.AppointmentClassGUID, AppointmentClassDescription: c.AppointmentClassDescription,
			AppointmentTypeGUID:        firstNonEmpty(c.AppointmentTypeGUID, s.AppointmentTypeGUID),
			AppointmentTypeDescription: c.AppointmentTypeDescription, Minutes: cmp.Or(c.Minutes, s.Minutes),
			LocationGUID: firstNonEmpty(c.LocationGUID, s.LocationGUID)}, true, nil
	}
	f.log.Info("cancelAppt: the request's slot is not open in Cloud9; not restored", "start", s.StartTime, "column", column)
	return s, false, nil
}

// RedisSlotChanges publishes slot changes as JSON on a Redis channel
// (default contracts.SlotChangesChannel).
type RedisSlotChanges struct {
	Client  redis.UniversalClient
	Channel string
}

// PublishSlotChange implements SlotChanges.
func (r RedisSlotChanges) PublishSlotChange(ctx context.Context, ev contracts.SlotChangeEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode slot change: %w", err)
	}
	ch := r.Channel
	if ch == "" {
		ch = contracts.SlotChangesChannel
	}
	if err := r.Client.Publish(ctx, ch, b).Err(); err != nil {
		return fmt.Errorf("publish slot change: %w", err)
	}
	return nil
}
