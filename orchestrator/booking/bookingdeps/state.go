package bookingdeps

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Tokens is booking.AuthTokens on the bookingAuthToken signer.
type Tokens struct{ S *authtoken.Signer }

var _ booking.AuthTokens = Tokens{}

// Issue implements booking.AuthTokens.
func (t Tokens) Issue(sessionID, patientGUID string) (string, error) {
	tok, _, err := t.S.Issue(sessionID, patientGUID)
	return tok, err
}

// Validate implements booking.AuthTokens: nil or *booking.AuthError.
func (t Tokens) Validate(token, patientGUID string) error {
	if _, err := t.S.Validate(token, patientGUID); err != nil {
		ae := &booking.AuthError{Code: string(authtoken.CodeOf(err))}
		var te *authtoken.Error
		if errors.As(err, &te) {
			ae.TokenPatientGUID = te.TokenPatientGUID
		}
		return ae
	}
	return nil
}

// Sessions is booking.Sessions on the bookingSessions cache.
type Sessions struct{ C *session.Cache }

var _ booking.Sessions = Sessions{}

// Put implements booking.Sessions.
func (s Sessions) Put(ctx context.Context, v booking.Session) error {
	_, err := s.C.Put(ctx, session.Session{PatientGUID: v.PatientGUID, FamilyID: v.FamilyID,
		BookingAuthToken: v.BookingAuthToken, PhoneNumber: v.PhoneNumber, PatientName: v.PatientName,
		UUI: v.UUI, SessionID: v.SessionID, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt})
	return err
}

// Lookup implements booking.Sessions.
func (s Sessions) Lookup(ctx context.Context, patientGUID, uui string) (booking.Session, bool, error) {
	v, ok, err := s.C.Lookup(ctx, patientGUID, uui)
	return booking.Session{PatientGUID: v.PatientGUID, FamilyID: v.FamilyID, BookingAuthToken: v.BookingAuthToken,
		PhoneNumber: v.PhoneNumber, PatientName: v.PatientName, UUI: v.UUI, SessionID: v.SessionID,
		CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt}, ok, err
}

// Reservations is booking.Reservations on the SlotReservation store.
type Reservations struct{ R *reservation.Store }

var _ booking.Reservations = Reservations{}

func holdSlot(h booking.SlotHold) slots.Slot {
	return slots.Slot{LocationGUID: h.LocationGUID, StartTime: h.StartTime, ScheduleColumnGUID: h.ScheduleColumnGUID}
}

// Reserve implements booking.Reservations.
func (r Reservations) Reserve(ctx context.Context, h booking.SlotHold) error {
	_, err := r.R.Reserve(ctx, holdSlot(h), h.SessionID, h.PatientName)
	if errors.Is(err, reservation.ErrReservedByOther) {
		return fmt.Errorf("%w: %w", booking.ErrSlotReserved, err)
	}
	return err
}

// Confirm implements booking.Reservations.
func (r Reservations) Confirm(ctx context.Context, h booking.SlotHold) error {
	_, err := r.R.Confirm(ctx, holdSlot(h), h.SessionID, h.PatientName)
	return err
}

// Release implements booking.Reservations.
func (r Reservations) Release(ctx context.Context, h booking.SlotHold) error {
	_, err := r.R.Release(ctx, holdSlot(h), h.SessionID)
	return err
}

// HeldByOthers implements booking.Reservations.
func (r Reservations) HeldByOthers(ctx context.Context, sessionID string, holds []booking.SlotHold) ([]bool, error) {
	list := make([]slots.Slot, len(holds))
	for i, h := range holds {
		list[i] = holdSlot(h)
	}
	return r.R.HeldByOthers(ctx, sessionID, list)
}
