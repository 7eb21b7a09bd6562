package contracts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

// guidanceSpec is what one golden must carry.
type guidanceSpec struct {
	// variant is the original's answer shape ("createAppt#0", an index into
	// nodered-shapes.json); "" when the original was not seen to give one.
	variant string
	// prohibited is the original's prohibited_responses for the variant;
	// nil: the golden is not an answer with guidance (a 400 envelope).
	prohibited []string
	// neverDo, chain, keywords: the original's lists, where it has them.
	neverDo, chain, keywords []string
	// guidance is the path of the answer's guidance ("llm_guidance", or ""
	// for a golden that is the guidance itself).
	guidance string
}

var (
	base      = contracts.BaseProhibited()
	exception = contracts.TransferProhibited()
	slotsXfer = contracts.SlotsTransferProhibited()

	bookedNeverDo = []string{"Ask for re-confirmation", "Say 'Let me verify'", "Delay the confirmation"}
	bookedChain   = []string{"1. Confirm booking with enthusiasm", "2. State child name, day, date, time, location",
		"3. Ask 'Would you like the address?'", "4. Mention legal guardian requirement", "5. Ask 'Anything else?'"}
	bookedKeywords = []string{"scheduled", "booked", "confirmed", "all set"}
	queuedNeverDo  = []string{"Mention rate limit", "Mention system issue", "Say booking failed", "Transfer to agent"}
	queuedChain    = []string{"1. Inform caller their request is being processed",
		"2. Reassure them confirmation will come shortly", "3. Ask if there's anything else you can help with",
		"4. End call gracefully"}
)

func booked(variant string) guidanceSpec {
	return guidanceSpec{variant: variant, prohibited: base, neverDo: bookedNeverDo, chain: bookedChain, keywords: bookedKeywords}
}

func queued() guidanceSpec {
	return guidanceSpec{prohibited: base, neverDo: queuedNeverDo, chain: queuedChain}
}

const (
	ca = "POST /chord/ortho-prd/createAppt#"
	gs = "POST /chord/ortho-prd/getApptSlots#"
	bc = "POST /chord/ortho-prd/bookConsultation#"
)

// guidanceSpecs names every answer golden of the three endpoints.
var guidanceSpecs = map[string]guidanceSpec{
	// createAppt, built by the contracts
	"booking_appt_booked":                              booked(ca + "0"),
	"booking_appt_duplicate_slot":                      {variant: ca + "1", prohibited: base},
	"booking_appt_auth_BOOKING_AUTH_SIGNATURE_INVALID": {variant: ca + "3", prohibited: base},
	"booking_appt_auth_BOOKING_AUTH_EXPIRED":           {variant: ca + "3", prohibited: base},
	"booking_appt_auth_BOOKING_AUTH_MALFORMED":         {variant: ca + "4", prohibited: base},
	"booking_appt_auth_BOOKING_AUTH_GUID_MISMATCH":     {variant: ca + "5", prohibited: base},
	"booking_appt_auth_BOOKING_AUTH_MISSING":           {variant: ca + "6", prohibited: base},
	"booking_appt_failed_PATIENT_NOT_FOUND":            {variant: ca + "7", prohibited: base},
	"booking_appt_validation_missing":                  {prohibited: base},
	"booking_appt_validation_invalid":                  {prohibited: base},
	"booking_appt_validation_malformed":                {prohibited: base},
	"booking_appt_batch":                               {variant: ca + "10", prohibited: base},
	"booking_appt_failed_CLOUD9_ERROR":                 {variant: ca + "12", prohibited: base},
	"booking_appt_failed_SLOT_NOT_AVAILABLE":           {variant: ca + "12", prohibited: base},
	"booking_appt_failed_TIMEOUT":                      {prohibited: exception},
	"booking_appt_queued":                              queued(),
	"booking_appt_slot_reserved":                       {prohibited: base},
	// createAppt, served
	"booking_http_create_appt_booked":                    booked(ca + "0"),
	"booking_http_create_appt_numeric_uui":               booked(ca + "0"),
	"booking_http_create_appt_booked_after_retry":        booked(ca + "0"),
	"booking_http_create_appt_booked_note_failed":        booked(ca + "0"),
	"booking_http_create_appt_auth_signature_invalid":    {variant: ca + "3", prohibited: base},
	"booking_http_create_appt_auth_expired":              {variant: ca + "3", prohibited: base},
	"booking_http_create_appt_auth_malformed":            {variant: ca + "4", prohibited: base},
	"booking_http_create_appt_auth_guid_mismatch":        {variant: ca + "5", prohibited: base},
	"booking_http_create_appt_auth_missing":              {variant: ca + "6", prohibited: base},
	"booking_http_create_appt_patient_not_found":         {variant: ca + "7", prohibited: base},
	"booking_http_create_appt_validation_missing":        {variant: ca + "8", prohibited: base},
	"booking_http_create_appt_validation_invalid":        {prohibited: base},
	"booking_http_create_appt_validation_malformed_json": {prohibited: base},
	"booking_http_create_appt_validation_wrong_type":     {prohibited: base},
	"booking_http_create_appt_validation_empty":          {prohibited: base},
	"booking_http_create_appt_validation_too_large":      {prohibited: base},
	"booking_http_create_appt_batch":                     {variant: ca + "10", prohibited: base},
	"booking_http_create_appt_slot_not_available":        {variant: ca + "12", prohibited: base},
	"booking_http_create_appt_cloud9_error":              {variant: ca + "12", prohibited: base},
	"booking_http_create_appt_timeout_not_queued":        {prohibited: exception},
	"booking_http_create_appt_queued":                    queued(),
	"booking_http_create_appt_queued_uncertain":          queued(),
	"booking_http_create_appt_slot_reserved":             {prohibited: base},
	// getApptSlots
	"booking_slots_ok":                        {variant: gs + "0", prohibited: base},
	"booking_slots_none":                      {variant: gs + "1", prohibited: slotsXfer},
	"booking_http_get_appt_slots":             {variant: gs + "0", prohibited: base},
	"booking_http_get_appt_slots_none":        {variant: gs + "1", prohibited: slotsXfer},
	"booking_http_get_appt_slots_wrong_types": {variant: gs + "0", prohibited: base},
	"booking_http_get_appt_slots_bad_json":    {},
	// bookConsultation
	"booking_http_consult_booked":                      {variant: bc + "0", prohibited: base},
	"booking_http_consult_repeat":                      {variant: bc + "0", prohibited: base},
	"booking_http_consult_children_queued":             {prohibited: base},
	"booking_http_consult_parent_queued":               {prohibited: base},
	"booking_http_consult_partial":                     {prohibited: base},
	"booking_http_consult_none_booked":                 {prohibited: base},
	"booking_http_consult_validation_bad_dob":          {prohibited: base},
	"booking_http_consult_validation_malformed_json":   {prohibited: base},
	"booking_http_consult_validation_missing_fields":   {prohibited: base},
	"booking_http_consult_validation_slot_named_twice": {prohibited: base},
	"booking_http_consult_validation_unknown_guid":     {prohibited: base},
	"booking_http_consult_validation_wrong_type":       {prohibited: base},
}

// inScope are the goldens of the three endpoints' answers: each must be in
// guidanceSpecs, so a new variant cannot go unchecked.
func inScope(name string) bool {
	for _, p := range []string{"booking_appt_", "booking_http_create_appt_", "booking_slots_", "booking_http_get_appt_slots",
		"booking_http_consult_"} {
		if strings.HasPrefix(name, p) {
			return name != "booking_slots_request"
		}
	}
	return false
}

// spoken are the keys whose text the assistant says.
var spoken = map[string]bool{"voice_response": true, "voice_response_template": true, "do_say": true, "message_to_caller": true}

// walk calls f with every key path (a.b, a[]) and value of v.
func walk(v any, path string, f func(path, key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			f(p, k, c)
			walk(c, p, f)
		}
	case []any:
		for _, c := range x {
			f(path+"[]", "", c)
			walk(c, path+"[]", f)
		}
	}
}

func strs(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func at(m map[string]any, path string) (any, bool) {
	if path == "" {
		return m, true
	}
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = o[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// prohibitedSaid lists the phrases of prohibited that a spoken text of v
// contains (case-insensitive).
func prohibitedSaid(v any, prohibited []string) []string {
	var out []string
	walk(v, "", func(path, key string, val any) {
		s, ok := val.(string)
		if !ok || !spoken[key] {
			return
		}
		for _, p := range prohibited {
			if strings.Contains(strings.ToLower(s), strings.ToLower(p)) {
				out = append(out, fmt.Sprintf("%s says %q: %q", path, p, s))
			}
		}
	})
	return out
}

type shapeVariant struct {
	Paths map[string]string `json:"paths"`
}

// What the caller hears, held to the original (issue 36,
// docs/reference/nodered-guidance.md): every answer variant flowgate can
// produce of createAppt, getApptSlots and bookConsultation — each golden in
// contracts/testdata — carries the base {timestamp, prohibited_responses}
// with exactly the original's list for that variant, never says a phrase it
// prohibits, and has every key path of the original's variant
// (nodered-shapes.json) where the original was seen to give one.
func TestEveryAnswerHasTheOriginalsGuidance(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(contractstest.Dir(), "nodered-shapes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var shapes map[string][]shapeVariant
	if err := json.Unmarshal(b, &shapes); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(contractstest.Dir(), "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		spec, listed := guidanceSpecs[name]
		if inScope(name) && !listed {
			t.Errorf("%s: an answer of createAppt, getApptSlots or bookConsultation without a guidanceSpec", name)
			continue
		}
		seen[name] = listed
		// Every golden (any endpoint): no spoken text says a phrase its
		// own answer prohibits.
		var lists []string
		walk(v, "", func(_, key string, val any) {
			if key == "prohibited_responses" {
				l, _ := strs(val)
				lists = append(lists, l...)
			}
		})
		for _, p := range prohibitedSaid(v, lists) {
			t.Errorf("%s: %s", name, p)
		}
		if !listed || spec.prohibited == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: not an object", name)
			continue
		}
		gpath := "llm_guidance"
		if spec.guidance != "" {
			gpath = spec.guidance
		}
		gv, ok := at(m, gpath)
		g, _ := gv.(map[string]any)
		if !ok || g == nil {
			t.Errorf("%s: no %s", name, gpath)
			continue
		}
		if _, ok := g["timestamp"].(string); !ok {
			t.Errorf("%s: %s.timestamp missing", name, gpath)
		}
		check := func(key string, want []string) {
			if want == nil {
				return
			}
			got, ok := strs(g[key])
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s.%s = %v, the original's: %v", name, gpath, key, g[key], want)
			}
		}
		check("prohibited_responses", spec.prohibited)
		check("never_do", spec.neverDo)
		check("chain_of_action", spec.chain)
		check("required_keywords", spec.keywords)
		// The expected list itself is never said (a golden whose list is
		// wrong must not hide a forbidden word).
		for _, p := range prohibitedSaid(v, spec.prohibited) {
			t.Errorf("%s: %s", name, p)
		}
		if results, ok := m["results"].([]any); ok {
			for i, r := range results {
				if _, ok := r.(map[string]any)["attempts"]; !ok {
					t.Errorf("%s: results[%d] has no attempts", name, i)
				}
			}
		}
		if spec.variant == "" {
			continue
		}
		ep, idx, _ := strings.Cut(spec.variant, "#")
		var i int
		if _, err := fmt.Sscan(idx, &i); err != nil || i >= len(shapes[ep]) {
			t.Errorf("%s: no variant %s in nodered-shapes.json", name, spec.variant)
			continue
		}
		got := map[string]bool{}
		walk(v, "", func(path, _ string, _ any) { got[path] = true })
		var missing []string
		for p := range shapes[ep][i].Paths {
			if !got[p] {
				missing = append(missing, p)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s lacks keys of the original's %s: %s", name, spec.variant, strings.Join(missing, ", "))
		}
	}
	for name := range guidanceSpecs {
		if _, ok := seen[name]; !ok {
			t.Errorf("guidanceSpecs names %s, which is not a golden", name)
		}
	}
}

// The checker itself: a forbidden word in a voice text is found whatever
// its case, in nested guidance too.
func TestProhibitedSaidFindsForbiddenWords(t *testing.T) {
	v := map[string]any{"llm_guidance": map[string]any{"voice_response": "I'm SORRY, that time is no longer available."},
		"children": []any{map[string]any{"llm_guidance": map[string]any{"voice_response": "No Problem."}}}}
	got := prohibitedSaid(v, base)
	if len(got) != 2 {
		t.Fatalf("want 2 findings, got %v", got)
	}
}

// The original's classifier names Cloud9's messages; flowgate's finer class
// stays beside it.
func TestOriginalErrorType(t *testing.T) {
	for msg, want := range map[string]string{
		"Too many requests within the timeframe for procedure SetAppointment":                        "RATE_LIMIT",
		"Error: Patient GUID specified does not exist.":                                              "PATIENT_NOT_FOUND",
		"Error: The time slot is not available.":                                                     "SLOT_NOT_AVAILABLE",
		"Error: This appointment cannot be scheduled in the specified time slot.":                    "CLOUD9_ERROR",
		"Error: Schedule View/Column GUID specified does not exist.":                                 "CLOUD9_ERROR",
		"Error: Appointment Type GUID specified does not exist or does not allow online scheduling.": "CLOUD9_ERROR",
		"Schedule view is invalid":                                                                   "INVALID_SCHEDULE_VIEW",
		"Schedule column not found":                                                                  "INVALID_SCHEDULE_COLUMN",
		"Appointment type invalid":                                                                   "INVALID_APPT_TYPE",
		"User is not authorized":                                                                     "AUTHORIZATION_ERROR",
		"An unknown error occurred.":                                                                 "CLOUD9_ERROR",
		"Procedure validation failure":                                                               "UNKNOWN",
	} {
		if got := contracts.OriginalErrorType(msg); got != want {
			t.Errorf("%q: %s, the original's %s", msg, got, want)
		}
	}
}

// The children[] voice: all booked, some queued, some failed.
func TestBatchVoice(t *testing.T) {
	ok := func(name, start string) contracts.ApptBatchChild {
		return contracts.ApptBatchChild{ChildName: name, Success: true, StartTime: start}
	}
	q := func(name string) contracts.ApptBatchChild {
		return contracts.ApptBatchChild{ChildName: name, Queued: true}
	}
	bad := func(name string) contracts.ApptBatchChild {
		return contracts.ApptBatchChild{ChildName: name, Message: "x"}
	}
	for _, c := range []struct {
		children []contracts.ApptBatchChild
		want     string
	}{
		{[]contracts.ApptBatchChild{ok("Ann Lee", "12/4/2026 11:45:00 AM"), ok("Ben Lee", "12/4/2026 12:25:00 PM")},
			"All appointments are confirmed! Ann on Friday 12/4/2026 at 11:45:00 AM. And Ben on Friday 12/4/2026 at 12:25:00 PM"},
		{[]contracts.ApptBatchChild{ok("Ann", "12/4/2026 11:45:00 AM"), q("Ben"), q("Cal")},
			"I was able to book 1 appointment. 2 appointments are being processed and you will receive confirmation shortly."},
		{[]contracts.ApptBatchChild{q("Ben")},
			"1 appointment is being processed and you will receive confirmation shortly."},
		{[]contracts.ApptBatchChild{ok("Ann", "12/4/2026 11:45:00 AM"), bad("Ben")},
			"Ann on Friday 12/4/2026 at 11:45:00 AM is confirmed. Ben could not be scheduled. Let me find a different appointment time for Ben."},
		{[]contracts.ApptBatchChild{bad("Ben")},
			"Ben could not be scheduled. Let me find a different appointment time for Ben."},
	} {
		r := contracts.NewApptBatch(c.children, time.Time{})
		if r.LLMGuidance.VoiceResponse != c.want {
			t.Errorf("voice %q\nwant  %q", r.LLMGuidance.VoiceResponse, c.want)
		}
		if said := prohibitedSaid(map[string]any{"voice_response": r.LLMGuidance.VoiceResponse}, base); len(said) > 0 {
			t.Errorf("%v", said)
		}
	}
}

// bookConsultation's template keeps the original's [time] placeholders.
func TestConsultTemplates(t *testing.T) {
	child := func(name string, ok, queued bool) contracts.ConsultChildResult {
		return contracts.ConsultChildResult{FirstName: name, Success: ok, Queued: queued}
	}
	for _, c := range []struct {
		st       contracts.ConsultStatus
		children []contracts.ConsultChildResult
		want     string
	}{
		{contracts.ConsultAllBooked, []contracts.ConsultChildResult{child("Ann", true, false)}, "Your appointment is confirmed! Ann at [time]."},
		{contracts.ConsultAllBooked, []contracts.ConsultChildResult{child("Ann", true, false), child("Ben", true, false)},
			"Both appointments are confirmed! Ann at [time] and Ben at [time]."},
		{contracts.ConsultAllBooked, []contracts.ConsultChildResult{child("Ann", true, false), child("Ben", true, false), child("Cal", true, false)},
			"All appointments are confirmed! Ann at [time], Ben at [time] and Cal at [time]."},
		{contracts.ConsultQueued, []contracts.ConsultChildResult{child("Ann", false, true)}, contracts.QueuedVoice},
		{contracts.ConsultPartial, []contracts.ConsultChildResult{child("Ann", true, false), child("Ben", false, false)},
			"Ann is confirmed. Ben could not be scheduled. Let me find a different appointment time for Ben."},
		{contracts.ConsultFailed, []contracts.ConsultChildResult{child("Ann", false, false)}, contracts.TransferVoice},
	} {
		g := contracts.ConsultGuidance(c.st, c.children, false, false, "op-consult-1", time.Time{})
		if g.VoiceResponseTemplate != c.want {
			t.Errorf("%d: template %q\nwant %q", c.st, g.VoiceResponseTemplate, c.want)
		}
		if !reflect.DeepEqual(g.ProhibitedResponses, base) || g.Timestamp == "" {
			t.Errorf("%d: base {timestamp, prohibited_responses}: %+v", c.st, g)
		}
	}
}
