package shadow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxPaths bounds the differing key paths (and fields) one comparison keeps.
const MaxPaths = 8

// Answer is one side's HTTP answer to the same request.
type Answer struct {
	Status  int
	Body    []byte
	Latency time.Duration
}

// FieldDiff is a caller-relevant field whose class differs. Original and
// Flowgate are classes or short hashes (FieldClasses), never the value.
type FieldDiff struct {
	Field    string `json:"field"`
	Original string `json:"original"`
	Flowgate string `json:"flowgate"`
}

// Result is one comparison. Missing and TypeMismatches hold at most
// MaxPaths key paths each (MissingCount and TypeCount count them all).
type Result struct {
	Endpoint       string      `json:"-"`
	At             time.Time   `json:"at"`
	Identical      bool        `json:"identical"`
	Superset       bool        `json:"superset"`
	MissingCount   int         `json:"missing_count"`
	TypeCount      int         `json:"type_count"`
	Missing        []string    `json:"missing,omitempty"`
	TypeMismatches []string    `json:"types,omitempty"`
	Fields         []FieldDiff `json:"fields,omitempty"`
	OriginalStatus int         `json:"o_status"`
	FlowgateStatus int         `json:"f_status"`
	OriginalMS     float64     `json:"o_ms"`
	FlowgateMS     float64     `json:"f_ms"`
}

// Compare compares flowgate's answer with the original's to the same
// request: identical (same status, same JSON, or same bytes when not
// JSON), superset (every key path of the original's answer is in
// flowgate's with the same JSON type), the paths missing or of another
// type, and the caller-relevant fields whose classes differ. The paths of
// the elements of an array that is empty in flowgate's answer are not
// missing ones: how many elements a list has is a value.
func Compare(endpoint string, at time.Time, original, flowgate Answer) Result {
	r := Result{Endpoint: endpoint, At: at, OriginalStatus: original.Status, FlowgateStatus: flowgate.Status,
		OriginalMS: ms(original.Latency), FlowgateMS: ms(flowgate.Latency)}
	ov, oJSON := decode(original.Body)
	fv, fJSON := decode(flowgate.Body)
	switch {
	case oJSON && fJSON:
		r.Identical = original.Status == flowgate.Status && reflect.DeepEqual(ov, fv)
	default:
		r.Identical = original.Status == flowgate.Status && bytes.Equal(original.Body, flowgate.Body)
	}
	op, fp := Paths(ov, oJSON), Paths(fv, fJSON)
	for _, p := range sortedKeys(op) {
		ft, ok := fp[p]
		switch {
		case !ok && inEmptyArray(p, fp):
			// The original's array has elements where flowgate's is empty
			// (a queue the dry side never fills, a slot list read a moment
			// later): a value difference, shown by the fields, not a gap.
		case !ok:
			r.MissingCount++
			if len(r.Missing) < MaxPaths {
				r.Missing = append(r.Missing, p)
			}
		case ft != op[p]:
			r.TypeCount++
			if len(r.TypeMismatches) < MaxPaths {
				r.TypeMismatches = append(r.TypeMismatches, p+": "+op[p]+" → "+ft)
			}
		}
	}
	r.Superset = r.MissingCount == 0 && r.TypeCount == 0
	oc, fc := FieldClasses(original.Status, ov), FieldClasses(flowgate.Status, fv)
	for _, f := range fieldOrder {
		o, okO := oc[f]
		g, okF := fc[f]
		if !okO && !okF {
			continue
		}
		if o != g && len(r.Fields) < MaxPaths {
			r.Fields = append(r.Fields, FieldDiff{Field: f, Original: orAbsent(o, okO), Flowgate: orAbsent(g, okF)})
		}
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func orAbsent(s string, ok bool) string {
	if !ok {
		return "absent"
	}
	return s
}

func decode(b []byte) (any, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// Paths is every key path of v with its JSON type (object, array, string,
// number, boolean, null); the root is "$", array elements are "[]" (the
// elements' paths merged). A body that is not JSON is {"$": "text"}.
func Paths(v any, isJSON bool) map[string]string {
	out := map[string]string{}
	if !isJSON {
		out["$"] = "text"
		return out
	}
	walk("$", v, out)
	return out
}

func walk(path string, v any, out map[string]string) {
	t := jsonType(v)
	if prev, ok := out[path]; ok && prev != t {
		// Array elements of mixed types: keep the first, as the original's
		// reference shapes do (its shape file records one element).
		return
	}
	out[path] = t
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walk(path+"."+k, e, out)
		}
	case []any:
		for _, e := range x {
			walk(path+"[]", e, out)
		}
	}
}

// inEmptyArray reports whether path p lies inside an array that is empty
// in paths: some prefix q of p, followed by "[]", is an array there with
// no element path q+"[]".
func inEmptyArray(p string, paths map[string]string) bool {
	for i := strings.Index(p, "[]"); i >= 0; {
		q := p[:i]
		if paths[q] == "array" {
			if _, elems := paths[q+"[]"]; !elems {
				return true
			}
		}
		j := strings.Index(p[i+2:], "[]")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The caller-relevant fields, in the order they are reported.
const (
	FieldStatus         = "status"
	FieldSuccess        = "success"
	FieldSlots          = "slots"
	FieldPatientFound   = "patient_found"
	FieldActionRequired = "action_required"
	FieldVoiceResponse  = "voice_response"
)

var fieldOrder = []string{FieldStatus, FieldSuccess, FieldSlots, FieldPatientFound, FieldActionRequired, FieldVoiceResponse}

var enumLike = regexp.MustCompile(`^[A-Za-z_]{1,40}$`)

// FieldClasses classifies the fields a caller acts on, without patient
// data: the HTTP status; success; the slots offered as their count and a
// hash of their start times and chairs; whether a patient was found or
// made; llm_guidance.action_required (an enum of the seed's, else a hash);
// and llm_guidance.voice_response's class (VoiceClass). A field the body
// lacks is absent from the map.
func FieldClasses(status int, v any) map[string]string {
	out := map[string]string{FieldStatus: strconv.Itoa(status)}
	m, _ := v.(map[string]any)
	if m == nil {
		return out
	}
	if s, ok := m["success"]; ok {
		out[FieldSuccess] = fmt.Sprint(s)
	}
	if s, ok := m["slots"].([]any); ok {
		out[FieldSlots] = slotClass(s)
	}
	if found, ok := patientFound(m); ok {
		out[FieldPatientFound] = strconv.FormatBool(found)
	}
	if g, ok := m["llm_guidance"].(map[string]any); ok {
		if a, ok := g["action_required"].(string); ok {
			if enumLike.MatchString(a) {
				out[FieldActionRequired] = a
			} else {
				out[FieldActionRequired] = "h:" + shortHash(a)
			}
		}
		if vr, ok := g["voice_response"].(string); ok {
			out[FieldVoiceResponse] = VoiceClass(vr)
		}
	}
	return out
}

func slotClass(slots []any) string {
	keys := make([]string, 0, len(slots))
	for _, s := range slots {
		o, _ := s.(map[string]any)
		keys = append(keys, fmt.Sprint(o["startTime"], "|", o["scheduleColumnGUID"]))
	}
	sort.Strings(keys)
	return fmt.Sprintf("n=%d h=%s", len(slots), shortHash(strings.Join(keys, ",")))
}

func patientFound(m map[string]any) (found, ok bool) {
	if g, has := m["patientGUID"]; has {
		s, _ := g.(string)
		return s != "", true
	}
	if p, has := m["patient"]; has {
		return p != nil, true
	}
	if ps, has := m["patients"]; has {
		a, _ := ps.([]any)
		return len(a) > 0, true
	}
	return false, false
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// voiceClasses are checked in order; the first whose words occur names
// the class of a voice_response.
var voiceClasses = []struct {
	class string
	words []string
}{
	{"transfer", []string{"connect you", "transfer", "specialist who can"}},
	{"booked", []string{"booked", "scheduled", "confirmed", "all set"}},
	{"wait", []string{"one moment", "moment while", "processing", "few minutes"}},
	{"offer", []string{"available", "opening", "i have", "times"}},
	{"ask", []string{"could you", "can you", "please", "what is", "?"}},
	{"apology", []string{"sorry", "unfortunately", "unable"}},
}

// VoiceClass is the class of a voice_response text: transfer, booked,
// wait, offer, ask, apology, empty or other. Names, dates and times in
// the text do not change it.
func VoiceClass(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" {
		return "empty"
	}
	for _, c := range voiceClasses {
		for _, w := range c.words {
			if strings.Contains(t, w) {
				return c.class
			}
		}
	}
	return "other"
}
