package authtoken

import "errors"

// Code is one of the seed's BOOKING_AUTH_* failure codes; the booking
// endpoints answer it as _debug.error_type.
type Code string

// The failure codes, in the order Validate checks them.
const (
	CodeMissing          Code = "BOOKING_AUTH_MISSING"
	CodeMalformed        Code = "BOOKING_AUTH_MALFORMED"
	CodeSignatureInvalid Code = "BOOKING_AUTH_SIGNATURE_INVALID"
	CodeExpired          Code = "BOOKING_AUTH_EXPIRED"
	CodeGUIDMismatch     Code = "BOOKING_AUTH_GUID_MISMATCH"
)

// Error is a failed check. It never carries the secret or the expected
// signature. errors.Is(err, ErrExpired) and the like compare codes.
type Error struct {
	Code Code
	// Reason says which part of the check failed, for logs ("no '.'",
	// "payload is not JSON", …).
	Reason string
	// TokenPatientGUID is the GUID the token was issued for; set only once
	// the signature has been verified (CodeExpired, CodeGUIDMismatch), so it
	// can be trusted, e.g. as the seed's correct_patientGUID hint.
	TokenPatientGUID string
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return "authtoken: " + string(e.Code)
	}
	return "authtoken: " + string(e.Code) + ": " + e.Reason
}

// Is matches any *Error with the same Code, so the sentinels below work with
// errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrMissing          = &Error{Code: CodeMissing}
	ErrMalformed        = &Error{Code: CodeMalformed}
	ErrSignatureInvalid = &Error{Code: CodeSignatureInvalid}
	ErrExpired          = &Error{Code: CodeExpired}
	ErrGUIDMismatch     = &Error{Code: CodeGUIDMismatch}
)

// CodeOf returns the failure code carried by err, or "" when err is nil or
// not an authtoken failure.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func fail(code Code, reason string) *Error { return &Error{Code: code, Reason: reason} }
