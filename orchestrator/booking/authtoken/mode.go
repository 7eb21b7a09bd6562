package authtoken

import (
	"fmt"
	"regexp"
	"strings"
)

// Mode is how createAppt authorises a booking (BOOKING_AUTH_MODE).
type Mode string

// The modes. ModeSession is the default.
const (
	// ModeToken requires a valid token.
	ModeToken Mode = "token"
	// ModeSession accepts a valid token, or no token when the session
	// cache's patientGUID equals the request's (the seed's session_match).
	ModeSession Mode = "session"
	// ModeLegacy is ModeSession plus the seed's legacy method: no token but
	// a well-formed GUID passes. It is a hole kept for flows that cannot
	// send tokens yet; it must be chosen explicitly.
	ModeLegacy Mode = "legacy"
)

// ParseMode reads a setting; "" is ModeSession.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeSession, nil
	case ModeToken, ModeSession, ModeLegacy:
		return m, nil
	default:
		return "", fmt.Errorf("authtoken: unknown auth mode %q (want token, session or legacy)", s)
	}
}

// Method is the seed's name for the way a request was authorised.
type Method string

// The seed's three auth methods.
const (
	MethodToken        Method = "token"
	MethodSessionMatch Method = "session_match"
	MethodLegacy       Method = "legacy"
)

// Decision is an authorised request.
type Decision struct {
	Method Method
	// PatientGUID is the authorised GUID: the token's for MethodToken, the
	// request's otherwise.
	PatientGUID string
	// Payload is the verified token (MethodToken only).
	Payload *Payload
}

var guidRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// IsGUID reports whether s is a well-formed GUID (8-4-4-4-12 hex digits).
func IsGUID(s string) bool { return guidRE.MatchString(s) }

// Decide authorises a booking for requestGUID under mode.
//
// token is the request's bookingAuthToken after the seed's auto-injection
// from the session cache (§4.4); sessionGUID is the patientGUID of the
// cached session the caller found (by patientGUID, then uui), or "".
//
//   - A token present is always validated, in every mode; an invalid token
//     is refused even where a token-less request would pass.
//   - No token: ModeToken refuses (BOOKING_AUTH_MISSING); ModeSession passes
//     when sessionGUID equals requestGUID (case-insensitively, both
//     non-empty); ModeLegacy also passes any well-formed requestGUID.
//
// The refusal is an *Error with the seed's code. An unknown mode is
// treated as ModeToken (fail closed).
func (s *Signer) Decide(mode Mode, token, requestGUID, sessionGUID string) (Decision, error) {
	if token != "" {
		p, err := s.Validate(token, requestGUID)
		if err != nil {
			return Decision{}, err
		}
		return Decision{Method: MethodToken, PatientGUID: p.PatientGUID, Payload: &p}, nil
	}
	req := strings.TrimSpace(requestGUID)
	if mode == ModeSession || mode == ModeLegacy {
		if req != "" && strings.EqualFold(req, strings.TrimSpace(sessionGUID)) {
			return Decision{Method: MethodSessionMatch, PatientGUID: req}, nil
		}
	}
	if mode == ModeLegacy && IsGUID(req) {
		return Decision{Method: MethodLegacy, PatientGUID: req}, nil
	}
	return Decision{}, fail(CodeMissing, fmt.Sprintf("no bookingAuthToken (mode %s)", modeName(mode)))
}

func modeName(m Mode) string {
	switch m {
	case ModeToken, ModeSession, ModeLegacy:
		return string(m)
	}
	return "unknown, treated as token"
}
