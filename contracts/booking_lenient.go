package contracts

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Lenient request fields (issue: dead air on wrong types). The original
// flow read the IVA's fields with JavaScript: a text field sent as a
// number (sessionId 12345, uui 98765, phoneNumber 4125550100) was used as
// its text, and an optional field it could not use (startDate 20270101,
// numberOfPatients "two") fell back to its default. flowgate's requests
// do the same before decoding: a number in a text field becomes its text
// (integers without exponent or decimals), and an optional field of a
// type its default would replace is dropped and named in the request's
// Ignored list (the handlers log it at debug). Required fields keep the
// strict decoding: a wrong type there is the endpoint's validation answer.
//
// fieldKind is what an optional top-level field may hold.
type fieldKind int

const (
	// kindText: a string; a number becomes its text; anything else is
	// dropped.
	kindText fieldKind = iota
	// kindString: a string only (dates, GUIDs, names): anything else is
	// dropped.
	kindString
	// kindInt: a FlexInt (a number or a numeric string); anything else is
	// dropped.
	kindInt
	// kindList: a StringList (a string or an array of strings); anything
	// else is dropped.
	kindList
	// kindBool: a FlexBool; anything else is dropped (false, as the
	// original's `x === true || x === "true"`).
	kindBool
)

// lenientDecode decodes b into v (a pointer to the request's plain twin,
// which has no UnmarshalJSON) after normalizing the fields of spec, and
// returns the names of the fields it dropped, sorted. A body that is not
// an object is decoded as it is (its error is the strict one).
func lenientDecode(b []byte, v any, spec map[string]fieldKind) ([]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, json.Unmarshal(b, v)
	}
	var ignored []string
	changed := false
	for key, raw := range m {
		kind, ok := specFor(spec, key)
		if !ok {
			continue
		}
		norm, keep := normalizeField(raw, kind)
		switch {
		case !keep:
			delete(m, key)
			ignored = append(ignored, key)
			changed = true
		case norm != nil:
			m[key] = norm
			changed = true
		}
	}
	if changed {
		var err error
		if b, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	sort.Strings(ignored)
	return ignored, json.Unmarshal(b, v)
}

// bodyField names a whole body that is not a JSON object in Ignored.
const bodyField = "(body)"

// isObject reports whether b is a JSON object (or null, which the slot
// lists take as no body).
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || bytes.Equal(b, []byte("null")))
}

// objectOrEmpty is b, or {} when b is another JSON value: the slot lists
// answer such a body with every default, as the original read no field of
// it (an array, a string, a number).
func objectOrEmpty(b []byte) []byte {
	if isObject(b) {
		return b
	}
	return []byte("{}")
}

// specFor finds key's kind; keys match case-insensitively, as
// encoding/json matches them to fields.
func specFor(spec map[string]fieldKind, key string) (fieldKind, bool) {
	if k, ok := spec[key]; ok {
		return k, true
	}
	for name, k := range spec {
		if strings.EqualFold(name, key) {
			return k, true
		}
	}
	return 0, false
}

// normalizeField returns the field's replacement (nil: keep raw as it is)
// and whether to keep it at all.
func normalizeField(raw json.RawMessage, kind fieldKind) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, true
	}
	var probe any
	switch kind {
	case kindText:
		if raw[0] == '"' {
			return nil, true
		}
		if text, ok := NumberText(raw); ok {
			q, _ := json.Marshal(text)
			return q, true
		}
		return nil, false
	case kindString:
		return nil, raw[0] == '"'
	case kindInt:
		probe = new(FlexInt)
	case kindList:
		probe = new(StringList)
	case kindBool:
		probe = new(FlexBool)
	}
	return nil, json.Unmarshal(raw, probe) == nil
}

// maxNumberExponent bounds the exponent NumberText expands: an id is never
// longer, and a huge exponent must not allocate a huge integer.
const maxNumberExponent = 64

// NumberText is a JSON number's text as the original's JavaScript would
// write the id it names: an integer without exponent or decimals
// (4125550100, 4.1255501e9 and 4125550100.0 are all "4125550100"), any
// other number as it was sent. ok is false when raw is not a JSON number.
func NumberText(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	s := n.String()
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > maxNumberExponent || exp < -maxNumberExponent {
			return s, true
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() {
		return s, true
	}
	return r.Num().String(), true
}

// The lenient fields of each IVA request (see lenientDecode).
var (
	apptSlotsFields = map[string]fieldKind{"startDate": kindString, "endDate": kindString,
		"scheduleViewGUIDs": kindList, "uui": kindText, "sessionId": kindText}
	groupedSlotsFields = map[string]fieldKind{"numberOfPatients": kindInt, "timeWindowMinutes": kindInt,
		"startDate": kindString, "endDate": kindString, "scheduleViewGUIDs": kindList, "uui": kindText, "sessionId": kindText}
	createPatientFields = map[string]fieldKind{"phoneNumber": kindText, "uui": kindText, "sessionId": kindText,
		"msgid": kindText, "familyId": kindText, "isChild": kindBool, "providerGUID": kindString, "locationGUID": kindString,
		"birthdayDateTime": kindString, "birthDate": kindString, "emailAddress": kindString, "gender": kindString}
	createApptFields   = map[string]fieldKind{"uui": kindText, "sessionId": kindText}
	consultationFields = map[string]fieldKind{"parentPhone": kindText, "uui": kindText, "sessionId": kindText,
		"parentEmail": kindString, "parentDOB": kindString, "insuranceProvider": kindText, "insuranceGroupId": kindText,
		"insuranceMemberId": kindText}
	patientFilterFields = map[string]fieldKind{"phoneNumber": kindText, "filter": kindText, "locationGUID": kindString}
	insuranceFields     = map[string]fieldKind{"insuranceProvider": kindText, "insuranceGroupId": kindText,
		"insuranceMemberId": kindText}
)

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *GetApptSlotsRequest) UnmarshalJSON(b []byte) error {
	type plain GetApptSlotsRequest
	var p plain
	ignored, err := lenientDecode(objectOrEmpty(b), &p, apptSlotsFields)
	if !isObject(b) {
		ignored = []string{bodyField}
	}
	*r = GetApptSlotsRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *GetGroupedApptSlotsRequest) UnmarshalJSON(b []byte) error {
	type plain GetGroupedApptSlotsRequest
	var p plain
	ignored, err := lenientDecode(objectOrEmpty(b), &p, groupedSlotsFields)
	if !isObject(b) {
		ignored = []string{bodyField}
	}
	*r = GetGroupedApptSlotsRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *CreatePatientRequest) UnmarshalJSON(b []byte) error {
	type plain CreatePatientRequest
	var p plain
	ignored, err := lenientDecode(b, &p, createPatientFields)
	*r = CreatePatientRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *CreateApptRequest) UnmarshalJSON(b []byte) error {
	type plain CreateApptRequest
	var p plain
	ignored, err := lenientDecode(b, &p, createApptFields)
	*r = CreateApptRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *BookConsultationRequest) UnmarshalJSON(b []byte) error {
	type plain BookConsultationRequest
	var p plain
	ignored, err := lenientDecode(b, &p, consultationFields)
	*r = BookConsultationRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *GetPatientByFilterRequest) UnmarshalJSON(b []byte) error {
	type plain GetPatientByFilterRequest
	var p plain
	ignored, err := lenientDecode(b, &p, patientFilterFields)
	*r = GetPatientByFilterRequest(p)
	r.Ignored = ignored
	return err
}

// UnmarshalJSON decodes leniently (lenientDecode).
func (r *EditInsuranceRequest) UnmarshalJSON(b []byte) error {
	type plain EditInsuranceRequest
	var p plain
	ignored, err := lenientDecode(b, &p, insuranceFields)
	*r = EditInsuranceRequest(p)
	r.Ignored = ignored
	return err
}

// IgnoredFields is Ignored (for handlers generic over the request type).
func (r *GetPatientByFilterRequest) IgnoredFields() []string { return r.Ignored }

// IgnoredFields is Ignored (for handlers generic over the request type).
func (r *EditInsuranceRequest) IgnoredFields() []string { return r.Ignored }
