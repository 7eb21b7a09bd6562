package buffer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// errPayloadNotJSON is the encoding error of a payload that is not JSON.
var errPayloadNotJSON = errors.New("payload is not valid JSON")

// appendJSON appends env as JSON, byte for byte what json.Marshal(env)
// writes. It is the enqueue's hot path: no reflection for the usual
// message (no metadata, a compact payload without HTML characters).
func (env *envelope) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"messageId":`...)
	dst = appendString(dst, env.MessageID)
	dst = append(dst, `,"priority":`...)
	dst = strconv.AppendInt(dst, int64(env.Priority), 10)
	dst = append(dst, `,"payload":`...)
	var err error
	if dst, err = appendRaw(dst, env.Payload); err != nil {
		return nil, err
	}
	dst = append(dst, `,"metadata":`...)
	if isZeroMetadata(&env.Metadata) {
		dst = append(dst, "{}"...)
	} else {
		m, err := json.Marshal(env.Metadata)
		if err != nil {
			return nil, err
		}
		dst = append(dst, m...)
	}
	dst = append(dst, `,"maxRetries":`...)
	dst = strconv.AppendInt(dst, int64(env.MaxRetries), 10)
	if env.IdempotencyKey != "" {
		dst = append(dst, `,"idempotencyKey":`...)
		dst = appendString(dst, env.IdempotencyKey)
	}
	dst = append(dst, `,"createdAt":"`...)
	dst = env.CreatedAt.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	if env.Shard != 0 {
		dst = append(dst, `,"shard":`...)
		dst = strconv.AppendInt(dst, int64(env.Shard), 10)
	}
	return append(dst, '}'), nil
}

// isZeroMetadata reports metadata json.Marshal writes as {} (a Custom
// that is present but empty counts as absent, as with omitempty).
func isZeroMetadata(m *contracts.BufferMetadata) bool {
	return m.CorrelationID == "" && m.Source == "" && m.UserID == "" && m.CompanyID == "" && m.TraceID == "" && len(m.Custom) == 0
}

// appendRaw appends a raw JSON value as json.Marshal does (nil is null):
// a payload with whitespace or characters json.Marshal rewrites (HTML
// escaping of < > &, U+2028/U+2029) goes through json.Marshal; any other
// is validated and copied.
func appendRaw(dst, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	if bytes.ContainsAny(raw, " \t\r\n<>&\u2028\u2029") {
		m, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			return nil, errPayloadNotJSON
		}
		return append(dst, m...), nil
	}
	if !json.Valid(raw) {
		return nil, errPayloadNotJSON
	}
	return append(dst, raw...), nil
}

// appendString appends s as a JSON string: as is when it needs no
// escaping (the usual ids and keys), else through json.Marshal.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// decodeEnvelope decodes a task payload into env: what json.Unmarshal
// does, without reflection for what appendJSON writes for the usual
// message (fields in its order, metadata {}, ids and keys without
// escapes); anything else goes through json.Unmarshal. It is the
// processing's hot path (docs/performance.md, work buffer).
func decodeEnvelope(data []byte, env *envelope) error {
	if decodeEnvelopeFast(data, env) {
		return nil
	}
	*env = envelope{}
	return json.Unmarshal(data, env)
}

// envelopeReader reads the fields appendJSON writes, in order.
type envelopeReader struct {
	b  []byte
	ok bool
}

// lit consumes s.
func (r *envelopeReader) lit(s string) {
	if r.ok && bytes.HasPrefix(r.b, []byte(s)) {
		r.b = r.b[len(s):]
		return
	}
	r.ok = false
}

// has reports whether s comes next (and consumes it).
func (r *envelopeReader) has(s string) bool {
	if r.ok && bytes.HasPrefix(r.b, []byte(s)) {
		r.b = r.b[len(s):]
		return true
	}
	return false
}

// str consumes a JSON string without escapes, up to its closing quote.
func (r *envelopeReader) str() string {
	if !r.ok {
		return ""
	}
	for i := 0; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		case c < 0x20 || c > 0x7e || c == '\\':
			r.ok = false
			return ""
		}
	}
	r.ok = false
	return ""
}

// int consumes a JSON integer.
func (r *envelopeReader) int() int {
	if !r.ok {
		return 0
	}
	i := 0
	if i < len(r.b) && r.b[i] == '-' {
		i++
	}
	for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(string(r.b[:i]))
	if err != nil || (i > 1 && r.b[0] == '0') || (i > 2 && r.b[0] == '-' && r.b[1] == '0') {
		r.ok = false
		return 0
	}
	r.b = r.b[i:]
	return n
}

// raw consumes one JSON value without whitespace around it (objects,
// arrays and strings followed to their end; the value is then checked
// with json.Valid).
func (r *envelopeReader) raw() json.RawMessage {
	if !r.ok {
		return nil
	}
	depth, i := 0, 0
	for ; i < len(r.b); i++ {
		switch r.b[i] {
		case '"':
			for i++; i < len(r.b) && r.b[i] != '"'; i++ {
				if r.b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				goto end
			}
		}
		if depth < 0 {
			break
		}
	}
end:
	if depth != 0 || i == 0 || i > len(r.b) || isSpace(r.b[0]) || isSpace(r.b[i-1]) || !json.Valid(r.b[:i]) {
		r.ok = false
		return nil
	}
	v := json.RawMessage(bytes.Clone(r.b[:i]))
	r.b = r.b[i:]
	return v
}

// isSpace is JSON's whitespace (json.Unmarshal drops it around a value).
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func decodeEnvelopeFast(data []byte, env *envelope) bool {
	r := envelopeReader{b: data, ok: true}
	r.lit(`{"messageId":"`)
	id := r.str()
	r.lit(`,"priority":`)
	prio := r.int()
	r.lit(`,"payload":`)
	payload := r.raw()
	r.lit(`,"metadata":{},"maxRetries":`)
	retries := r.int()
	var key string
	if r.has(`,"idempotencyKey":"`) {
		key = r.str()
	}
	r.lit(`,"createdAt":"`)
	at := r.str()
	shard := 0
	if r.has(`,"shard":`) {
		shard = r.int()
	}
	r.lit(`}`)
	if !r.ok || len(r.b) != 0 {
		return false
	}
	var created time.Time
	if err := created.UnmarshalText([]byte(at)); err != nil {
		return false
	}
	*env = envelope{MessageID: id, Priority: contracts.BufferPriority(prio), Payload: payload, MaxRetries: retries,
		IdempotencyKey: key, CreatedAt: created, Shard: shard}
	return true
}
