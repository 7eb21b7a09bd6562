package slots

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxTokenLen bounds what DecodeToken reads; a real token is about 250
// characters.
const MaxTokenLen = 2048

// TokenSlot is the content of a bookingToken, keys in this order.
type TokenSlot struct {
	StartTime           string `json:"startTime"`
	ScheduleViewGUID    string `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID"`
	Minutes             int    `json:"minutes"`
}

// ID is SlotID of the token's slot.
func (t TokenSlot) ID() (string, error) {
	return SlotID(t.ScheduleViewGUID, t.ScheduleColumnGUID, t.StartTime)
}

// EncodeToken is the bookingToken of s: standard base64 of the TokenSlot
// JSON (compact, no HTML escaping, like JSON.stringify).
func EncodeToken(s Slot) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s.TokenSlot()) // strings and an int: cannot fail
	return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// TokenReason says why a bookingToken is malformed.
type TokenReason string

// The reasons.
const (
	ReasonEmpty        TokenReason = "empty"
	ReasonTooLong      TokenReason = "too_long"
	ReasonBase64       TokenReason = "bad_base64"
	ReasonJSON         TokenReason = "bad_json"
	ReasonMissingField TokenReason = "missing_field"
	ReasonWrongType    TokenReason = "wrong_type"
	ReasonInvalidValue TokenReason = "invalid_value"
)

// ErrMalformedToken matches every *TokenError.
var ErrMalformedToken = errors.New("slots: malformed bookingToken")

// TokenError is a bookingToken DecodeToken refused.
type TokenError struct {
	Reason TokenReason
	Field  string // the JSON key at fault, for field reasons
	Err    error  // the decoder's error, if any
}

func (e *TokenError) Error() string {
	msg := "slots: malformed bookingToken: " + string(e.Reason)
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrMalformedToken) true.
func (e *TokenError) Is(target error) bool { return target == ErrMalformedToken }

func (e *TokenError) Unwrap() error { return e.Err }

var guidRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// tokenFields maps each TokenSlot key to the old design's short key.
var tokenFields = []struct{ long, short string }{
	{"startTime", "st"},
	{"scheduleViewGUID", "sv"},
	{"scheduleColumnGUID", "sc"},
	{"appointmentTypeGUID", "at"},
	{"minutes", "mn"},
}

// DecodeToken reads a bookingToken. startTime (a Cloud9 date-time),
// scheduleViewGUID and scheduleColumnGUID (GUIDs) are required;
// appointmentTypeGUID (a GUID) and minutes (an integer 0..1440, or a
// string of digits as Cloud9 writes it) are optional and zero when absent
// or unknown. Unknown
// keys are ignored. It does not tell whether the slot is still open: see
// Cache.Find.
func DecodeToken(token string) (TokenSlot, error) {
	vals, err := tokenValues(token)
	if err != nil {
		return TokenSlot{}, err
	}
	var ts TokenSlot
	for _, f := range []struct {
		name     string
		dst      *string
		required bool
		check    func(string) error
	}{
		{"startTime", &ts.StartTime, true, func(s string) error { _, err := ParseTime(s); return err }},
		{"scheduleViewGUID", &ts.ScheduleViewGUID, true, checkGUID},
		{"scheduleColumnGUID", &ts.ScheduleColumnGUID, true, checkGUID},
		{"appointmentTypeGUID", &ts.AppointmentTypeGUID, false, checkGUID},
	} {
		if err := tokenString(vals, f.name, f.dst, f.required, f.check); err != nil {
			return TokenSlot{}, err
		}
	}
	if v, ok := vals["minutes"]; ok {
		m, err := decodeMinutes(v)
		if err != nil {
			return TokenSlot{}, err
		}
		ts.Minutes = m
	}
	return ts, nil
}

// tokenValues decodes a token's base64 JSON object into its fields by
// long name (short names accepted; null is absent).
func tokenValues(token string) (map[string]json.RawMessage, error) {
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return nil, &TokenError{Reason: ReasonEmpty}
	case len(token) > MaxTokenLen:
		return nil, &TokenError{Reason: ReasonTooLong}
	}
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		var err2 error
		if raw, err2 = base64.RawStdEncoding.DecodeString(token); err2 != nil {
			return nil, &TokenError{Reason: ReasonBase64, Err: err}
		}
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil {
		return nil, &TokenError{Reason: ReasonJSON, Err: err}
	}
	if obj == nil {
		return nil, &TokenError{Reason: ReasonJSON, Err: errors.New("not a JSON object")}
	}
	if dec.More() {
		return nil, &TokenError{Reason: ReasonJSON, Err: errors.New("data after the JSON object")}
	}
	vals := make(map[string]json.RawMessage, len(tokenFields))
	for _, f := range tokenFields {
		v, ok := obj[f.long]
		if !ok {
			v, ok = obj[f.short]
		}
		if ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			vals[f.long] = v
		}
	}
	return vals, nil
}

// tokenString reads the string field name into dst and checks it.
func tokenString(vals map[string]json.RawMessage, name string, dst *string, required bool, check func(string) error) error {
	v, ok := vals[name]
	if !ok {
		if required {
			return &TokenError{Reason: ReasonMissingField, Field: name}
		}
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return &TokenError{Reason: ReasonWrongType, Field: name, Err: errors.New("want a string")}
	}
	*dst = strings.TrimSpace(*dst)
	switch {
	case *dst == "" && required:
		return &TokenError{Reason: ReasonMissingField, Field: name}
	case *dst == "":
		return nil
	}
	if err := check(*dst); err != nil {
		return &TokenError{Reason: ReasonInvalidValue, Field: name, Err: err}
	}
	return nil
}

func checkGUID(s string) error {
	if !guidRE.MatchString(s) {
		return errors.New("not a GUID")
	}
	return nil
}

// decodeMinutes takes 45 or "45"; 0..1440, 0 meaning unknown (EncodeToken
// writes 0 for a slot without Minutes).
func decodeMinutes(v json.RawMessage) (int, error) {
	var n json.Number
	var s string
	switch {
	case json.Unmarshal(v, &s) == nil:
		n = json.Number(strings.TrimSpace(s))
	default:
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) != nil {
			return 0, &TokenError{Reason: ReasonWrongType, Field: "minutes", Err: errors.New("want a number")}
		}
		num, ok := x.(json.Number)
		if !ok {
			return 0, &TokenError{Reason: ReasonWrongType, Field: "minutes", Err: errors.New("want a number")}
		}
		n = num
	}
	m, err := strconv.Atoi(n.String())
	if err != nil || m < 0 || m > 24*60 {
		return 0, &TokenError{Reason: ReasonInvalidValue, Field: "minutes", Err: fmt.Errorf("%q is not a whole number of minutes 0..1440", n.String())}
	}
	return m, nil
}
