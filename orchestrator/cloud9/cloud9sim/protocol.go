package cloud9sim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Namespace is the XML namespace of requests and answers.
const Namespace = "http://schemas.practica.ws/cloud9/partners/"

const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// Cloud9 error codes (reference "Error codes").
const (
	CodeUnknown          = 0
	CodeBadCredentials   = 1
	CodeMissingParameter = 2
	CodeInvalidValue     = 3
	CodeInvalidInput     = 4
	CodeInvalidGUID      = 5
	CodeTooManyRequests  = 8
	CodeNotAuthorized    = 10
	CodeValidation       = 16
)

// apiError is an answer with ResponseStatus Error.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("cloud9 error %d: %s", e.code, e.msg) }

func errUnknown() *apiError { return &apiError{CodeUnknown, "An unknown error occurred."} }
func errCredentials() *apiError {
	return &apiError{CodeBadCredentials, "Invalid client / username / password combination."}
}
func errRequired() *apiError {
	return &apiError{CodeMissingParameter, "A required parameter was not specified."}
}
func errValue(name string) *apiError {
	return &apiError{CodeInvalidValue, fmt.Sprintf("Invalid value for parameter: '%s'.", name)}
}
func errInput() *apiError { return &apiError{CodeInvalidInput, "Invalid request input."} }
func errGUID(name string) *apiError {
	return &apiError{CodeInvalidGUID, fmt.Sprintf("Invalid GUID format for parameter: '%s'", name)}
}
func errTooMany(proc string) *apiError {
	return &apiError{CodeTooManyRequests, "Too many requests within the timeframe for procedure " + proc}
}
func errNotAuthorized(proc string) *apiError {
	return &apiError{CodeNotAuthorized, fmt.Sprintf("Procedure '%s' is not authorized.", proc)}
}
func errValidation(detail string) *apiError {
	return &apiError{CodeValidation, "Procedure validation failure: " + detail}
}

// request is a decoded GetDataRequest.
type request struct {
	clientID, username, password, procedure string
	params                                  params
	order                                   []Param // every parameter as sent, in document order
}

// wireRequest is the XML shape; child element names match in any namespace.
type wireRequest struct {
	XMLName    xml.Name
	ClientID   string `xml:"ClientID"`
	UserName   string `xml:"UserName"`
	Password   string `xml:"Password"`
	Procedure  string `xml:"Procedure"`
	Parameters *struct {
		Items []wireParam `xml:",any"`
	} `xml:"Parameters"`
}

type wireParam struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Value   string     `xml:",chardata"`
}

// decodeRequest parses a body. The root must be GetDataRequest in the
// partners namespace; anything else is error 4.
func decodeRequest(body []byte) (*request, *apiError) {
	var w wireRequest
	if err := xml.Unmarshal(body, &w); err != nil {
		return nil, errInput()
	}
	if w.XMLName.Local != "GetDataRequest" || w.XMLName.Space != Namespace {
		return nil, errInput()
	}
	r := &request{
		clientID:  strings.TrimSpace(w.ClientID),
		username:  w.UserName,
		password:  w.Password,
		procedure: strings.TrimSpace(w.Procedure),
		params:    params{},
	}
	if w.Parameters != nil {
		for _, p := range w.Parameters.Items {
			name := p.XMLName.Local
			r.order = append(r.order, Param{Name: name, Value: p.Value, Nil: isNil(p.Attrs)})
			if _, dup := r.params[name]; dup {
				continue // the first one counts
			}
			r.params[name] = param{value: p.Value, null: isNil(p.Attrs)}
		}
	}
	return r, nil
}

func isNil(attrs []xml.Attr) bool {
	for _, a := range attrs {
		if a.Name.Local == "nil" && (a.Name.Space == xsiNamespace || a.Name.Space == "xsi") {
			return strings.TrimSpace(a.Value) == "true"
		}
	}
	return false
}

// field is one element of a Record, in order.
type field struct{ name, value string }

// record is one <Record>.
type record []field

// resultRecord is the one-record answer of a write procedure.
func resultRecord(text string) []record { return []record{{{"Result", text}}} }

// bit formats a bool as Cloud9 answers it.
func bit(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

const xmlHeader = `<?xml version="1.0" encoding="utf-8"?>`
const responseOpen = `<GetDataResponse xmlns="` + Namespace + `" xmlns:xsi="` + xsiNamespace + `">`

// encodeSuccess writes a Success answer; no records is <Records />.
func encodeSuccess(records []record) []byte {
	var b bytes.Buffer
	size := 256
	for _, r := range records {
		size += 17
		for _, f := range r {
			size += 2*len(f.name) + len(f.value) + 5
		}
	}
	b.Grow(size + size/16)
	b.WriteString(xmlHeader)
	b.WriteString(responseOpen)
	b.WriteString(`<ResponseStatus>Success</ResponseStatus>`)
	if len(records) == 0 {
		b.WriteString(`<Records />`)
	} else {
		b.WriteString(`<Records>`)
		for _, r := range records {
			b.WriteString(`<Record>`)
			for _, f := range r {
				// An empty value is an open and a close tag, as the real
				// service writes it, never a self-closing tag.
				b.WriteByte('<')
				b.WriteString(f.name)
				b.WriteByte('>')
				escape(&b, f.value)
				b.WriteString("</")
				b.WriteString(f.name)
				b.WriteByte('>')
			}
			b.WriteString(`</Record>`)
		}
		b.WriteString(`</Records>`)
	}
	b.WriteString(`</GetDataResponse>`)
	return b.Bytes()
}

// escape writes s as XML character data; most values need no escaping.
func escape(b *bytes.Buffer, s string) {
	if !strings.ContainsAny(s, "<>&'\"\r\n\t") && utf8.ValidString(s) {
		b.WriteString(s)
		return
	}
	_ = xml.EscapeText(b, []byte(s))
}

// encodeError writes an Error answer.
func encodeError(e *apiError) []byte {
	var b bytes.Buffer
	b.WriteString(xmlHeader)
	b.WriteString(responseOpen)
	b.WriteString(`<ResponseStatus>Error</ResponseStatus><ErrorCode>`)
	b.WriteString(strconv.Itoa(e.code))
	b.WriteString(`</ErrorCode><ErrorMessage>`)
	escape(&b, e.msg)
	b.WriteString(`</ErrorMessage></GetDataResponse>`)
	return b.Bytes()
}
