package cloud9

// The bytes under the XML: gzip, byte order marks and the charsets Cloud9
// answers in (through golang.org/x/text, so windows-1252 is not read as
// latin-1).

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf16"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/transform"
)

// newDecoder undoes gzip and byte order marks, reads a body that declares
// no encoding in charset (the HTTP header's; "" is UTF-8), and returns a
// decoder.
func newDecoder(body []byte, charset string) (*xml.Decoder, error) {
	data, bom, err := plainBody(body)
	if err != nil {
		return nil, err
	}
	if charset != "" && !bom && !declaresEncoding(data) {
		if enc, err := encodingOf(charset); err == nil && enc != nil {
			if utf, err := enc.NewDecoder().Bytes(data); err == nil {
				data = utf
			}
		}
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = charsetReader
	d.Entity = xml.HTMLEntity // an answer labelled text/html may carry &nbsp;
	return d, nil
}

// plainBody gunzips (by magic bytes, at most twice: some proxies compress an
// already compressed answer), then converts UTF-16 to UTF-8 and drops a BOM;
// it reports whether there was one.
func plainBody(body []byte) ([]byte, bool, error) {
	for range 2 {
		if len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
			break
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, false, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxResponseBytes+1))
		if err != nil {
			return nil, false, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
		}
		if len(out) > MaxResponseBytes {
			return nil, false, fmt.Errorf("%w: answer over %d bytes", ErrMalformed, MaxResponseBytes)
		}
		body = out
	}
	switch {
	case bytes.HasPrefix(body, []byte{0xef, 0xbb, 0xbf}):
		return body[3:], true, nil
	case bytes.HasPrefix(body, []byte{0xff, 0xfe}):
		return fromUTF16(body[2:], false), true, nil
	case bytes.HasPrefix(body, []byte{0xfe, 0xff}):
		return fromUTF16(body[2:], true), true, nil
	}
	return body, false, nil
}

func fromUTF16(b []byte, bigEndian bool) []byte {
	u := make([]uint16, len(b)/2)
	for i := range u {
		if bigEndian {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	var out bytes.Buffer
	for _, r := range utf16.Decode(u) {
		out.WriteRune(r)
	}
	return out.Bytes()
}

// charsetReader decodes the body from the charset its XML declaration names
// (encoding/xml calls it for anything but UTF-8). Labels are looked up in the
// WHATWG table browsers use (htmlindex), where latin1, iso-8859-1, ascii and
// cp1252 all mean windows-1252 — what a .NET server labelled so really sends,
// with ’ “ ” € in 0x80–0x9F — and then in the IANA registry (ianaindex) for
// names WHATWG lacks. UTF-8 and UTF-16 labels read the bytes as they are:
// either a UTF-16 body had a BOM and was converted already, or the
// declaration is the common .NET mislabel of a UTF-8 body.
func charsetReader(label string, input io.Reader) (io.Reader, error) {
	enc, err := encodingOf(label)
	if err != nil {
		return nil, err
	}
	if enc == nil {
		return input, nil
	}
	return transform.NewReader(input, enc.NewDecoder()), nil
}

// headerCharset is the charset parameter of a Content-Type, or "".
func headerCharset(contentType string) string {
	if contentType == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return params["charset"]
}

// declaresEncoding reports whether data opens with an XML declaration that
// names an encoding.
func declaresEncoding(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	if !bytes.HasPrefix(data, []byte("<?xml")) {
		return false
	}
	decl, _, ok := bytes.Cut(data, []byte("?>"))
	return ok && bytes.Contains(decl, []byte("encoding"))
}

// labelAliases are spellings .NET and hand-written servers use that neither
// index knows.
var labelAliases = map[string]string{"latin-1": "latin1", "utf16": "utf-16", "cp-1252": "cp1252"}

// encodingOf resolves a charset label; nil means the bytes are read as UTF-8.
func encodingOf(label string) (encoding.Encoding, error) {
	l := strings.ToLower(strings.TrimSpace(label))
	if alias, ok := labelAliases[l]; ok {
		l = alias
	}
	enc, err := htmlindex.Get(l)
	if err != nil {
		enc, err = ianaindex.IANA.Encoding(l)
		if err == nil && enc == nil { // registered, but x/text has no decoder
			err = errors.New("no decoder")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: unsupported charset %q: %w", ErrMalformed, label, err)
	}
	if name, nerr := htmlindex.Name(enc); nerr == nil && (name == "utf-8" || strings.HasPrefix(name, "utf-16")) {
		return nil, nil
	}
	return enc, nil
}
