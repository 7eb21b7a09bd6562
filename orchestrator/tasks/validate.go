package tasks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/flowgate/flowgate/contracts"
)

func invalid(op, field, format string, args ...any) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeInvalid, Op: op, Message: fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field}}
}

// queueID checks a queue_id and returns its canonical (lowercase) form, so
// that "ABC…" and "abc…" name the same task.
func queueID(op, s string) (string, error) {
	if s == "" {
		return "", invalid(op, "queue_id", "queue_id is required")
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return "", invalid(op, "queue_id", "queue_id must be a UUID")
	}
	return u.String(), nil
}

// label checks an identifier such as encounter_id or worker_id: at most
// MaxIDBytes of printable UTF-8.
func label(op, field, s string, required bool) error {
	switch {
	case s == "" && required:
		return invalid(op, field, "%s is required", field)
	case len(s) > contracts.MaxIDBytes:
		return invalid(op, field, "%s is longer than %d bytes", field, contracts.MaxIDBytes)
	case !utf8.ValidString(s):
		return invalid(op, field, "%s must be UTF-8", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return invalid(op, field, "%s must not contain control characters", field)
		}
	}
	return nil
}

// message shortens an error message to MaxErrorMessageBytes (on a rune
// boundary): a worker's long stack trace must not cost it its FAIL.
func message(s string) string {
	if len(s) <= contracts.MaxErrorMessageBytes {
		return s
	}
	s = s[:contracts.MaxErrorMessageBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// jsonValue checks raw JSON and returns it compacted (key order and number
// spelling kept) with a fingerprint of its canonical form, so that the same
// value with other spacing or key order counts as the same. Absent gives
// ("", fingerprint of null).
func jsonValue(op, field string, raw json.RawMessage) (compact, fp string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", fingerprint([]byte("null")), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", "", invalid(op, field, "%s is not valid JSON", field)
	}
	canon, err := canonical(buf.Bytes())
	if err != nil {
		return "", "", invalid(op, field, "%s is not valid JSON", field)
	}
	return buf.String(), fingerprint(canon), nil
}

func fingerprint(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// splitParsedPayload takes a parsed_payload given to UpdateStatus apart
// into what the ledger stores separately: the base object, experityActions
// and the dlq flag.
type ppParts struct {
	base       string // JSON object without experityActions and dlq; "" = none
	hasActions bool
	actions    string
	actionsFP  string
	dlq        bool
}

func splitParsedPayload(op string, raw json.RawMessage) (ppParts, error) {
	var p ppParts
	trimmed := bytes.TrimSpace(raw)
	if bytes.Equal(trimmed, []byte("null")) {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil || m == nil {
		return p, invalid(op, "parsed_payload", "parsed_payload must be a JSON object or null")
	}
	if a, ok := m[keyExperityActions]; ok {
		compact, fp, err := jsonValue(op, "parsed_payload.experityActions", a)
		if err != nil {
			return p, err
		}
		if compact == "" {
			compact = "null"
		}
		p.hasActions, p.actions, p.actionsFP = true, compact, fp
		delete(m, keyExperityActions)
	}
	if d, ok := m[keyDLQ]; ok {
		var flag bool
		if err := json.Unmarshal(d, &flag); err != nil {
			return p, invalid(op, "parsed_payload.dlq", "parsed_payload.dlq must be a boolean")
		}
		p.dlq = flag
		delete(m, keyDLQ)
	}
	if len(m) > 0 {
		b, _ := json.Marshal(m)
		p.base = string(b)
	}
	return p, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
