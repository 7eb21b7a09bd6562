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
