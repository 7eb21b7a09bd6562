package tasks

import (
	"bytes"
	"encoding/json"
	"slices"
)

// canonical is the canonical form of compact, valid JSON: what
// encoding/json's Marshal writes for the value Decode (with UseNumber)
// reads from it — object keys sorted bytewise and each kept once (the
// last), strings escaped as Marshal escapes them (HTML characters
// included), numbers spelled as given. It is what jsonValue fingerprints.
// It walks the bytes once instead of building the value: on an ACK's
// experityActions a fifth of the allocations (canonicalDecoded, the
// definition, is the oracle FuzzCanonicalMatchesDecodeMarshal holds it
// to). A string with an escape, a control or non-ASCII byte or an HTML
// character is re-encoded by encoding/json itself; anything unexpected
// falls back to canonicalDecoded.
func canonical(compact []byte) ([]byte, error) {
	c := canonWalker{src: compact}
	out, i, ok := c.value(make([]byte, 0, len(compact)), 0)
	if ok && i == len(compact) {
		return out, nil
	}
	return canonicalDecoded(compact)
}

// canonicalDecoded is canonical's definition: Decode with UseNumber, then
// Marshal.
func canonicalDecoded(compact []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(compact))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

type canonWalker struct{ src []byte }

// member is one key of an object: its decoded key (for the order) and
// its canonical "key":value.
type member struct{ key, enc []byte }

// value appends the canonical form of the value at src[i:] to dst and
// returns dst and the index after the value; ok is false on anything a
// compact, valid JSON text does not hold.
func (c *canonWalker) value(dst []byte, i int) ([]byte, int, bool) {
	if i >= len(c.src) {
		return dst, i, false
	}
	switch b := c.src[i]; {
	case b == '{':
		return c.object(dst, i)
	case b == '[':
		return c.array(dst, i)
	case b == '"':
		_, enc, next, ok := c.str(i)
		return append(dst, enc...), next, ok
	case b == 't':
		return c.literal(dst, i, "true")
	case b == 'f':
		return c.literal(dst, i, "false")
	case b == 'n':
		return c.literal(dst, i, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		j := i + 1
		for j < len(c.src) && bytes.IndexByte([]byte("0123456789+-.eE"), c.src[j]) >= 0 {
			j++
		}
		return append(dst, c.src[i:j]...), j, true
	}
	return dst, i, false
}

func (c *canonWalker) literal(dst []byte, i int, lit string) ([]byte, int, bool) {
	if !bytes.HasPrefix(c.src[i:], []byte(lit)) {
		return dst, i, false
	}
	return append(dst, lit...), i + len(lit), true
}

func (c *canonWalker) array(dst []byte, i int) ([]byte, int, bool) {
	dst = append(dst, '[')
	i++
	if i < len(c.src) && c.src[i] == ']' {
		return append(dst, ']'), i + 1, true
	}
	for {
		var ok bool
		if dst, i, ok = c.value(dst, i); !ok || i >= len(c.src) {
			return dst, i, false
		}
		switch c.src[i] {
		case ',':
			dst = append(dst, ',')
			i++
		case ']':
			return append(dst, ']'), i + 1, true
		default:
			return dst, i, false
		}
	}
}

func (c *canonWalker) object(dst []byte, i int) ([]byte, int, bool) {
	i++
	if i < len(c.src) && c.src[i] == '}' {
		return append(dst, "{}"...), i + 1, true
	}
	var ms []member
	for {
		key, enc, next, ok := c.str(i)
		if !ok || next >= len(c.src) || c.src[next] != ':' {
			return dst, i, false
		}
		m := member{key: key, enc: append(append(make([]byte, 0, len(enc)+16), enc...), ':')}
		if m.enc, i, ok = c.value(m.enc, next+1); !ok || i >= len(c.src) {
			return dst, i, false
		}
		ms = append(ms, m)
		if c.src[i] == '}' {
			i++
			break
		}
		if c.src[i] != ',' {
			return dst, i, false
		}
		i++
	}
	// Sorted by key, the last of equal keys kept (Decode into a map
	// replaces an earlier value of the same key).
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	first := true
	for k, m := range ms {
		if k+1 < len(ms) && bytes.Equal(ms[k+1].key, m.key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, m.enc...)
	}
	return append(dst, '}'), i, true
}

// str reads the string at src[i] (its opening quote): its decoded bytes
// and its canonical encoding. A string of printable ASCII without a
// backslash or an HTML character is both its own bytes and its own
// encoding; any other is decoded and encoded by encoding/json.
func (c *canonWalker) str(i int) (dec, enc []byte, next int, ok bool) {
	if i >= len(c.src) || c.src[i] != '"' {
		return nil, nil, i, false
	}
	plain := true
	j := i + 1
	for ; j < len(c.src) && c.src[j] != '"'; j++ {
		switch b := c.src[j]; {
		case b == '\\':
			plain = false
			j++ // the escaped byte: never the closing quote
		case b < 0x20 || b >= 0x7f || b == '<' || b == '>' || b == '&':
			plain = false
		}
	}
	if j >= len(c.src) {
		return nil, nil, i, false
	}
	raw := c.src[i : j+1]
	if plain {
		return raw[1 : len(raw)-1], raw, j + 1, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, nil, i, false
	}
	e, err := json.Marshal(s)
	if err != nil {
		return nil, nil, i, false
	}
	return []byte(s), e, j + 1, true
}
