package booking

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// injectSession is step 1 of docs/booking.md#createappt-step-by-step: look the session cache up by patientGUID,
// then uui (the caller passes sessionId when there is no uui, as
// createPatient caches under it then); a missing bookingAuthToken and a missing patientGUID are taken
// from the entry. (Like the seed, the token is injected even when the
// entry's patient differs from the request's: the auth check then answers
// GUID_MISMATCH with the right patientGUID, which the IVA can recover from,
// instead of BOOKING_AUTH_MISSING, which sends it to create a second
// patient.) A cache error is logged and treated as no entry.
func (s *Service) injectSession(ctx context.Context, patientGUID, token *string, uui string) *Session {
	if *patientGUID == "" && uui == "" {
		return nil
	}
	sess, found, err := s.d.Sessions.Lookup(ctx, strings.TrimSpace(*patientGUID), strings.TrimSpace(uui))
	if err != nil {
		s.log.Warn("booking session cache unavailable; no auto-injection", "err", err)
		return nil
	}
	if !found {
		return nil
	}
	if *token == "" && sess.BookingAuthToken != "" {
		*token = sess.BookingAuthToken
		s.log.Info("auto-injected bookingAuthToken from session cache", "patient_guid", sess.PatientGUID)
	}
	if *patientGUID == "" && sess.PatientGUID != "" {
		*patientGUID = sess.PatientGUID
		s.log.Info("auto-injected patientGUID from session cache", "patient_guid", sess.PatientGUID)
	}
	return &sess
}

// checkToken runs checks 2–5 of docs/booking.md#createappt-step-by-step
// on a present token: code is "" when it authorizes patientGUID, else the
// BOOKING_AUTH_* refusal (correct: the token's patient on a GUID
// mismatch). An unexpected validator error refuses as MALFORMED.
func (s *Service) checkToken(token, patientGUID string) (code, correct string) {
	err := s.d.Tokens.Validate(token, patientGUID)
	if err == nil {
		return "", ""
	}
	var ae *AuthError
	if errors.As(err, &ae) && ae.Code != "" {
		if ae.Code == contracts.BookingAuthGUIDMismatch {
			correct = ae.TokenPatientGUID
		}
		return ae.Code, correct
	}
	s.log.Warn("booking auth token check failed unexpectedly; refusing", "err", err)
	return contracts.BookingAuthMalformed, ""
}

// authorize is step 2 of docs/booking.md#createappt-step-by-step with the mode of Config.AuthMode: a present
// token must pass checks 2–5 (any mode); without one, token mode refuses,
// session mode accepts a session-cache entry of the same patient, legacy
// mode also any well-formed patientGUID. Auth fails closed: an unexpected
// validator error refuses as MALFORMED.
func (s *Service) authorize(token, patientGUID string, sess *Session, now time.Time) (method string, rej *contracts.ApptAuthRejectedResponse) {
	refuse := func(code, correct string) (string, *contracts.ApptAuthRejectedResponse) {
		r := contracts.NewApptAuthRejected(code, patientGUID, correct, s.cfg.AuthMode, now)
		return "", &r
	}
	if token != "" {
		if code, correct := s.checkToken(token, patientGUID); code != "" {
			return refuse(code, correct)
		}
		return contracts.AuthMethodToken, nil
	}
	if s.cfg.AuthMode != AuthModeToken {
		if sess != nil && sess.PatientGUID != "" && strings.EqualFold(sess.PatientGUID, patientGUID) {
			return contracts.AuthMethodSessionMatch, nil
		}
		if s.cfg.AuthMode == AuthModeLegacy && guidRE.MatchString(patientGUID) {
			return contracts.AuthMethodLegacy, nil
		}
	}
	return refuse(contracts.BookingAuthMissing, "")
}
