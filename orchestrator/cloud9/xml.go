package cloud9

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The envelope's namespaces.
const (
	Namespace    = "http://schemas.practica.ws/cloud9/partners/"
	XSINamespace = "http://www.w3.org/2001/XMLSchema-instance"
)

// StatusSuccess and StatusError are the two ResponseStatus values Cloud9
// answers with.
const (
	StatusSuccess = "Success"
	StatusError   = "Error"
)

// MaxResponseBytes bounds an answer, before and after gunzip. A 28-week
// GetOnlineReservations over many chairs is a few MB.
const MaxResponseBytes = 64 << 20

// ErrMalformed is wrapped by DecodeResponse and DecodeRequest when the body is
// not the envelope.
var ErrMalformed = errors.New("cloud9: malformed envelope")

// Param is one request parameter. Name is sent exactly as given (Cloud9's
// names are case-sensitive: patGUID, patguid and PatientGUID are all real);
// Nil sends <Name xsi:nil="true"/>.
type Param struct {
	Name  string
	Value string
	Nil   bool
}

// P is a string parameter.
func P(name, value string) Param { return Param{Name: name, Value: value} }

// NilParam is a null parameter.
func NilParam(name string) Param { return Param{Name: name, Nil: true} }

// BitParam is a bit parameter: Cloud9 takes 1/0 in requests.
func BitParam(name string, b bool) Param {
	if b {
		return P(name, "1")
	}
	return P(name, "0")
}

// BoolParam is a .NET boolean parameter: "True" or "False".
func BoolParam(name string, b bool) Param {
	if b {
		return P(name, "True")
	}
	return P(name, "False")
}

// IntParam is an integer parameter.
func IntParam(name string, n int) Param { return P(name, strconv.Itoa(n)) }

// TimeParam is a datetime parameter in Cloud9's M/D/YYYY h:mm:ss AM form.
func TimeParam(name string, t time.Time) Param { return P(name, FormatTime(t)) }

// Request is one GetDataRequest.
type Request struct {
	ClientID  string
	UserName  string
	Password  string
	Procedure string
	Params    []Param
}

// String keeps the password out of %v.
func (r Request) String() string {
	return fmt.Sprintf("cloud9.Request{Procedure:%s UserName:%s Password:[redacted] Params:%d}", r.Procedure, r.UserName, len(r.Params))
}

// GoString keeps the password out of %#v.
func (r Request) GoString() string { return r.String() }

// LogValue keeps the password out of logs.
func (r Request) LogValue() slog.Value {
	return slog.GroupValue(slog.String("procedure", r.Procedure), slog.String("user", r.UserName),
		slog.Int("params", len(r.Params)))
}

// Response is one decoded GetDataResponse.
type Response struct {
	Status       string // ResponseStatus: "Success" or "Error"
	ErrorCode    int    // -1 when absent
	ErrorMessage string
	Records      []Record
}

// Success reports whether ResponseStatus is Success. A Success answer may
// still carry a business-rule failure in Result (see Client.Call).
func (r *Response) Success() bool { return strings.EqualFold(r.Status, StatusSuccess) }

// Result is the first record's Result field: the answer of every write
// procedure. Empty when there is none.
func (r *Response) Result() string {
	if len(r.Records) == 0 {
		return ""
	}
	return r.Records[0].Get("Result")
}

// Field is one element of a Record, in the order Cloud9 sent it.
type Field struct {
	Name  string
	Value string // trimmed character data
	Nil   bool   // xsi:nil="true"
}

// Record is one <Record>: its fields in order.
type Record []Field

// Lookup returns the value of the field called name: the exact spelling
// first, then any spelling that differs only in case.
func (r Record) Lookup(name string) (string, bool) {
	for _, f := range r {
		if f.Name == name {
			return f.Value, true
		}
	}
	for _, f := range r {
		if strings.EqualFold(f.Name, name) {
			return f.Value, true
		}
	}
	return "", false
}

// Get is Lookup without the flag.
func (r Record) Get(name string) string {
	v, _ := r.Lookup(name)
	return v
}

// Map is the record as a map (a later duplicate name wins).
func (r Record) Map() map[string]string {
	m := make(map[string]string, len(r))
	for _, f := range r {
		m[f.Name] = f.Value
	}
	return m
}

// xmlDecl starts every request.
const xmlDecl = `<?xml version="1.0" encoding="utf-8"?>`

// EncodeRequest renders r as the GetDataRequest envelope. Values are escaped
// by encoding/xml (characters XML cannot carry become U+FFFD). A parameter
// name that is not a plain XML name is an error, never sent.
func EncodeRequest(r Request) ([]byte, error) {
	if !isXMLName(r.Procedure) {
		return nil, fmt.Errorf("cloud9: invalid procedure name %q", r.Procedure)
	}
	for _, p := range r.Params {
		if !isXMLName(p.Name) {
			return nil, fmt.Errorf("cloud9: %s: invalid parameter name %q", r.Procedure, p.Name)
		}
	}
	var buf bytes.Buffer
	buf.Grow(512 + 64*len(r.Params))
	buf.WriteString(xmlDecl)
	e := xml.NewEncoder(&buf)
	root := start("GetDataRequest",
		xml.Attr{Name: xml.Name{Local: "xmlns"}, Value: Namespace},
		xml.Attr{Name: xml.Name{Local: "xmlns:xsi"}, Value: XSINamespace})
	tokens := []xml.Token{root}
	tokens = appendLeaf(tokens, "ClientID", r.ClientID, false)
	tokens = appendLeaf(tokens, "UserName", r.UserName, false)
	tokens = appendLeaf(tokens, "Password", r.Password, false)
	tokens = appendLeaf(tokens, "Procedure", r.Procedure, false)
	tokens = append(tokens, start("Parameters"))
	for _, p := range r.Params {
		tokens = appendLeaf(tokens, p.Name, p.Value, p.Nil)
	}
	tokens = append(tokens, end("Parameters"), root.End())
	for _, t := range tokens {
		if err := e.EncodeToken(t); err != nil {
			return nil, fmt.Errorf("cloud9: encode %s: %w", r.Procedure, err)
		}
	}
	if err := e.Flush(); err != nil {
		return nil, fmt.Errorf("cloud9: encode %s: %w", r.Procedure, err)
	}
	return buf.Bytes(), nil
}

// EncodeResponse renders r as a GetDataResponse, for tests and tools.
// ErrorCode < 0 is left out.
func EncodeResponse(r *Response) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xmlDecl)
	e := xml.NewEncoder(&buf)
	root := start("GetDataResponse",
		xml.Attr{Name: xml.Name{Local: "xmlns"}, Value: Namespace},
		xml.Attr{Name: xml.Name{Local: "xmlns:xsi"}, Value: XSINamespace})
	tokens := []xml.Token{root}
	tokens = appendLeaf(tokens, "ResponseStatus", r.Status, false)
	if r.ErrorCode >= 0 {
		tokens = appendLeaf(tokens, "ErrorCode", strconv.Itoa(r.ErrorCode), false)
	}
	if r.ErrorMessage != "" {
		tokens = appendLeaf(tokens, "ErrorMessage", r.ErrorMessage, false)
	}
	tokens = append(tokens, start("Records"))
	for _, rec := range r.Records {
		tokens = append(tokens, start("Record"))
		for _, f := range rec {
			if !isXMLName(f.Name) {
				return nil, fmt.Errorf("cloud9: invalid field name %q", f.Name)
			}
			tokens = appendLeaf(tokens, f.Name, f.Value, f.Nil)
		}
		tokens = append(tokens, end("Record"))
	}
	tokens = append(tokens, end("Records"), root.End())
	for _, t := range tokens {
		if err := e.EncodeToken(t); err != nil {
			return nil, fmt.Errorf("cloud9: encode response: %w", err)
		}
	}
	if err := e.Flush(); err != nil {
		return nil, fmt.Errorf("cloud9: encode response: %w", err)
	}
	return buf.Bytes(), nil
}

func start(name string, attrs ...xml.Attr) xml.StartElement {
	return xml.StartElement{Name: xml.Name{Local: name}, Attr: attrs}
}

func end(name string) xml.EndElement { return xml.EndElement{Name: xml.Name{Local: name}} }

func appendLeaf(tokens []xml.Token, name, value string, isNil bool) []xml.Token {
	if isNil {
		return append(tokens, start(name, xml.Attr{Name: xml.Name{Local: "xsi:nil"}, Value: "true"}), end(name))
	}
	tokens = append(tokens, start(name))
	if value != "" {
		tokens = append(tokens, xml.CharData(value))
	}
	return append(tokens, end(name))
}

// isXMLName reports whether s is a plain (unprefixed) XML element name.
func isXMLName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || unicode.IsLetter(c):
		case i > 0 && (c == '-' || c == '.' || unicode.IsDigit(c)):
		default:
			return false
		}
	}
	return true
}

// DecodeResponse decodes a GetDataResponse by content: gzip is recognised by
// its magic bytes whatever the headers said, a UTF-8 or UTF-16 byte order
// mark is honoured, and the namespace is not required. Unknown elements are
// ignored.
func DecodeResponse(body []byte) (*Response, error) {
	return DecodeResponseLabelled(body, "")
}

// DecodeResponseLabelled is DecodeResponse for an answer whose HTTP
// Content-Type (contentType, may be empty) names a charset: a body with
// neither a byte order mark nor an encoding declaration of its own is read
// in that charset. A label x/text does not know is ignored (the header is
// advisory; the body's own marks decide first).
func DecodeResponseLabelled(body []byte, contentType string) (*Response, error) {
	d, err := newDecoder(body, headerCharset(contentType))
	if err != nil {
		return nil, err
	}
	if _, err := rootElement(d, "GetDataResponse"); err != nil {
		return nil, err
	}
	r := &Response{ErrorCode: -1}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.EndElement: // of the root
			return r, nil
		case xml.StartElement:
			if err := r.decodeElement(d, t.Name.Local); err != nil {
				return nil, err
			}
		}
	}
}

// decodeElement reads one child of <GetDataResponse>, just started.
func (r *Response) decodeElement(d *xml.Decoder, name string) error {
	var dst *string
	switch name {
	case "ResponseStatus":
		dst = &r.Status
	case "ErrorMessage":
		dst = &r.ErrorMessage
	case "ErrorCode":
		v, err := text(d)
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(v); err == nil {
			r.ErrorCode = n
		}
		return nil
	case "Records":
		recs, err := records(d)
		if err != nil {
			return err
		}
		r.Records = append(r.Records, recs...)
		return nil
	default:
		if err := d.Skip(); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil
	}
	v, err := text(d)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// DecodeRequest decodes a GetDataRequest, for tests, tools and servers.
// A missing <Parameters> gives no parameters.
func DecodeRequest(body []byte) (*Request, error) {
	d, err := newDecoder(body, "")
	if err != nil {
		return nil, err
	}
	if _, err := rootElement(d, "GetDataRequest"); err != nil {
		return nil, err
	}
	r := &Request{}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return r, nil
		case xml.StartElement:
			var dst *string
			switch t.Name.Local {
			case "ClientID":
				dst = &r.ClientID
			case "UserName":
				dst = &r.UserName
			case "Password":
				dst = &r.Password
			case "Procedure":
				dst = &r.Procedure
			case "Parameters":
				fields, err := fields(d)
				if err != nil {
					return nil, err
				}
				for _, f := range fields {
					r.Params = append(r.Params, Param(f))
				}
				continue
			default:
				if err := d.Skip(); err != nil {
					return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
				}
				continue
			}
			v, err := text(d)
			if err != nil {
				return nil, err
			}
			*dst = v
		}
	}
}

// rootElement reads up to the first start element and checks its name.
func rootElement(d *xml.Decoder, want string) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return xml.StartElement{}, fmt.Errorf("%w: no <%s>", ErrMalformed, want)
			}
			return xml.StartElement{}, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != want {
				return se, fmt.Errorf("%w: root <%s>, want <%s>", ErrMalformed, se.Name.Local, want)
			}
			return se, nil
		}
	}
}

// text returns the trimmed character data up to the end of the element
// just started, nested elements included.
func text(d *xml.Decoder) (string, error) {
	var sb strings.Builder
	depth := 1
	for depth > 0 {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			sb.Write(t)
		}
	}
	return strings.TrimSpace(sb.String()), nil
}

// records reads the children of <Records>, each a record.
func records(d *xml.Decoder) ([]Record, error) {
	var out []Record
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch tok.(type) {
		case xml.EndElement:
			return out, nil
		case xml.StartElement:
			f, err := fields(d)
			if err != nil {
				return nil, err
			}
			out = append(out, Record(f))
		}
	}
}

// fields reads the children of the element just started as fields.
func fields(d *xml.Decoder) ([]Field, error) {
	var out []Field
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return out, nil
		case xml.StartElement:
			v, err := text(d)
			if err != nil {
				return nil, err
			}
			out = append(out, Field{Name: t.Name.Local, Value: v, Nil: isNil(t)})
		}
	}
}

func isNil(se xml.StartElement) bool {
	for _, a := range se.Attr {
		if a.Name.Local == "nil" && (a.Value == "true" || a.Value == "1") {
			return true
		}
	}
	return false
}
