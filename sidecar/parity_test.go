package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/redistest"
)

const parityBase = "/chord/ortho-prd"

// deliberate are the original's variants flowgate does not produce, with
// the docs/differences.md row that explains each ("endpoint#index" as in the shapes file).
var deliberate = map[string]string{
	"POST /chord/ortho-prd/createPatient#5": "README: malformed JSON answers 200 in the endpoint's shape, not a 500 without JSON",
	"POST /chord/ortho-prd/createAppt#9":    "README: malformed JSON answers 200 in the endpoint's shape, not a 500 without JSON",
}

// parityEnv is one flowgate process (Main) on a real Redis, its Cloud9 the
// simulator sim, and the auth secret to sign tokens the way it does.
type parityEnv struct {
	sim    *cloud9sim.Sim
	base   string
	signer *authtoken.Signer
	m      *Main
	db     *redistest.DB
}

func newParityEnv(t *testing.T, simCfg cloud9sim.Config, env map[string]string) *parityEnv {
	t.Helper()
	return newParityEnvAt(t, simCfg, env, nil)
}

// newParityEnvAt is newParityEnv with flowgate's clock now (nil: the real
// one); give the simulator the same (simCfg.Now).
func newParityEnvAt(t *testing.T, simCfg cloud9sim.Config, env map[string]string, now func() time.Time) *parityEnv {
	t.Helper()
	simCfg.Seed = 1
	if simCfg.WriteLimit == (cloud9sim.Rate{}) {
		simCfg.WriteLimit = cloud9sim.Unlimited
	}
	sim := cloud9sim.New(simCfg)
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	db := redistest.New(t)
	e := redisEnv(db)
	delete(e, "CLOUD9_SIMULATOR") // the simulator over HTTP, as a real Cloud9
	for k, v := range map[string]string{
		"CLOUD9_ENDPOINT": url, "CLOUD9_CLIENT_ID": "sandbox", "CLOUD9_USERNAME": "sandbox", "CLOUD9_PASSWORD": "sandbox",
		"CLOUD9_VENDOR_USERNAME": "flowgate", "CLOUD9_PROVIDER_GUID": cloud9sim.DefaultOrthodontistGUID,
		"CLOUD9_WRITE_LIMIT": "1000/s", "CLOUD9_LIMIT_MARGIN": "1ms", "BOOKING_SYNC_RETRY_DELAY": "10ms",
		"BOOKING_SYNC_BUDGET": "2s", "SLOT_CACHE_READ_LIMIT": "1000/s",
		"SLOT_SEARCH_RETRY_DELAY": "10ms", // the original's 4 × 2 tries without its 35 s
	} {
		e[k] = v
	}
	for k, v := range env {
		e[k] = v
	}
	m, base := startMainAt(t, e, slog.New(slog.NewTextHandler(io.Discard, nil)), now)
	signer, err := authtoken.New(authtoken.Config{Secret: []byte(e["BOOKING_AUTH_SECRET"])})
	require.NoError(t, err)
	return &parityEnv{sim: sim, base: base + parityBase, signer: signer, m: m, db: db}
}

// call sends body (a value marshalled to JSON, or raw []byte) and answers
// the status and body.
func (p *parityEnv) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, p.base+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func (p *parityEnv) post(t *testing.T, path string, body any) (int, []byte) {
	t.Helper()
	return p.call(t, http.MethodPost, path, body)
}

// obj decodes a JSON object answer.
func obj(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	return m
}

func simDay(sim *cloud9sim.Sim, days int) string {
	d := sim.Now().AddDate(0, 0, days)
	for d.Weekday() == time.Sunday || d.Weekday() == time.Saturday {
		d = d.AddDate(0, 0, 1)
	}
	return d.Format("01/02/2006")
}

// produced is one answer flowgate gave, meant as the original's variant
// key ("endpoint#index").
type produced struct {
	name    string
	variant string
	status  int
	body    []byte
}

// checkParity compares each answer with its variant and fails on every
// variant of the five endpoints neither produced nor listed in deliberate.
func checkParity(t *testing.T, answers []produced) {
	t.Helper()
	shapes := loadShapes(t)
	seen := map[string]bool{}
	for _, a := range answers {
		endpoint, idx := splitVariant(t, a.variant)
		variants := shapes[endpoint]
		require.Less(t, idx, len(variants), a.variant)
		orig := variants[idx]
		seen[a.variant] = true
		_, isDeliberate := deliberate[a.variant]
		require.False(t, isDeliberate, "%s (%s) is produced but listed as a deliberate difference", a.name, a.variant)
		problems := shapeProblems(orig, a.body)
		if a.status != orig.Status {
			problems = append(problems, fmt.Sprintf("status %d, original %d", a.status, orig.Status))
		}
		if len(problems) > 0 {
			t.Errorf("%s (%s) differs from the original:\n%s\nbody: %s", a.name, a.variant, strings.Join(problems, "\n"), a.body)
		}
	}
	for _, endpoint := range parityEndpoints {
		for i := range shapes[endpoint] {
			key := variantKey(endpoint, i)
			if !seen[key] {
				_, ok := deliberate[key]
				require.True(t, ok, "variant %s of the original is neither produced by this test nor listed as deliberate", key)
			}
		}
	}
}

var parityEndpoints = []string{
	"POST " + parityBase + "/createPatient", "POST " + parityBase + "/getApptSlots",
	"POST " + parityBase + "/getGroupedApptSlots", "POST " + parityBase + "/createAppt",
	"GET " + parityBase + "/queue-status",
}

func variantKey(endpoint string, i int) string { return endpoint + "#" + strconv.Itoa(i) }

func splitVariant(t *testing.T, key string) (string, int) {
	t.Helper()
	at := strings.LastIndexByte(key, '#')
	require.Positive(t, at, key)
	var idx int
	require.NoError(t, json.Unmarshal([]byte(key[at+1:]), &idx))
	return key[:at], idx
}

// TestNodeRedShapeParity: contract parity with the original Node-RED flow.
// Every answer variant of the five endpoints flowgate serves
// (createPatient, createAppt, getApptSlots, getGroupedApptSlots,
// queue-status) is produced through the real binary's wiring against the
// Cloud9 simulator (its faults and limits) and must carry every key path of
// the original's variant with the same JSON type. Extra keys are allowed
// (principle 1 of docs/reference/README.md). A variant of the original
// flowgate deliberately answers otherwise is in `deliberate`, naming the
// row of docs/differences.md ("Differences from the Node-RED flow") that
// says why; the test fails if flowgate starts producing one of them
// unnoticed or if a variant of the original is neither driven nor listed.
//
// It drives every variant through one flowgate on the simulator (plus one
// whose simulator refuses every write, for the queued answers) and compares
// the answers with the original's shapes.
func TestNodeRedShapeParity(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	var answers []produced
	add := func(name, variant string, status int, body []byte) {
		answers = append(answers, produced{name: name, variant: variant, status: status, body: body})
	}
	const cp, slots, grouped, appt = "POST " + parityBase + "/createPatient", "POST " + parityBase + "/getApptSlots",
		"POST " + parityBase + "/getGroupedApptSlots", "POST " + parityBase + "/createAppt"

	parent := map[string]any{"patientFirstName": "Mary", "patientLastName": "Smith", "phoneNumber": "412-555-0100",
		"uui": "call-parity-1", "sessionId": "flowise-parity-1"}
	st, body := p.post(t, "/createPatient", parent)
	add("parent created", cp+"#0", st, body)
	created := obj(t, body)
	parentGUID, token := created["patientGUID"].(string), created["bookingAuthToken"].(string)
	st, body = p.post(t, "/createPatient", parent)
	add("parent cached", cp+"#1", st, body)
	require.Equal(t, true, obj(t, body)["_cached"])
	child := map[string]any{"patientFirstName": "Johnny", "patientLastName": "Smith", "isChild": true,
		"parentPatientGUID": parentGUID, "familyId": created["familyId"], "birthDate": "01/15/2015", "uui": "call-parity-1"}
	st, body = p.post(t, "/createPatient", child)
	add("child created", cp+"#2", st, body)

	day := simDay(p.sim, 2)
	st, body = p.post(t, "/getApptSlots", map[string]any{"startDate": day, "endDate": simDay(p.sim, 4), "sessionId": "s-1"})
	add("slots offered", slots+"#0", st, body)
	offered := obj(t, body)["slots"].([]any)
	require.NotEmpty(t, offered)
	st, body = p.post(t, "/getApptSlots", map[string]any{"startDate": simDay(p.sim, 400), "endDate": simDay(p.sim, 402)})
	add("no slots", slots+"#1", st, body)

	warmTiers(t, p) // the tiers, as the refresh job keeps them (parity_cache_test.go)
	st, body = p.post(t, "/getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "startDate": day, "endDate": simDay(p.sim, 4)})
	add("grouped with endDate", grouped+"#0", st, body)
	st, body = p.post(t, "/getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "startDate": day})
	add("grouped without endDate", grouped+"#1", st, body)
	st, body = p.post(t, "/getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "startDate": simDay(p.sim, 400), "endDate": simDay(p.sim, 402)})
	add("grouped none", grouped+"#2", st, body)

	answers = append(answers, apptVariants(t, p, parentGUID, token, offered)...)

	st, body = p.call(t, http.MethodGet, "/queue-status", nil)
	add("queue status", "GET "+parityBase+"/queue-status#0", st, body)

	// Cloud9 refuses the patient (a name longer than its 50 characters).
	long := strings.Repeat("x", 60)
	st, body = p.post(t, "/createPatient", map[string]any{"patientFirstName": long, "patientLastName": "Fail", "uui": "call-parity-2"})
	add("parent create failed", cp+"#4", st, body)
	st, body = p.post(t, "/createPatient", map[string]any{"patientFirstName": long, "patientLastName": "Fail", "isChild": true,
		"parentPatientGUID": parentGUID, "uui": "call-parity-2"})
	add("child create failed", cp+"#3", st, body)

	q := newParityEnv(t, cloud9sim.Config{Limits: map[string]cloud9sim.Rate{"SetPatient": {N: 0, Per: time.Hour}}}, nil)
	st, body = q.post(t, "/createPatient", parent)
	add("parent queued", cp+"#6", st, body)
	// check_status_endpoint names an endpoint flowgate serves, and it lists
	// the queued operation.
	queued := obj(t, body)
	endpoint := queued["llm_guidance"].(map[string]any)["check_status_endpoint"].(string)
	require.Equal(t, parityBase+"/checkOperationStatus", endpoint)
	st, status := q.call(t, http.MethodGet, "/checkOperationStatus?operationId="+queued["operationId"].(string), nil)
	require.Equal(t, http.StatusOK, st)
	require.Contains(t, string(status), queued["operationId"].(string))
	checkQueuedOperation(t, status)
	checkParity(t, answers)
}

// TestIndividualModelMatchesOriginal: with BOOKING_PATIENT_MODEL=individual
// createPatient answers exactly the original's variants (nodered-shapes.json):
// every key path of the original with its type, no other key, the values
// that tell the variants apart, and the original's model name — parent
// created, cached, child created and queued (the simulator admits two
// SetPatient an hour: the third patient is queued).
func TestIndividualModelMatchesOriginal(t *testing.T) {
	const cp = "POST " + parityBase + "/createPatient"
	p := newParityEnv(t, cloud9sim.Config{Limits: map[string]cloud9sim.Rate{"SetPatient": {N: 2, Per: time.Hour}}},
		map[string]string{"BOOKING_PATIENT_MODEL": "individual"})
	shapes := loadShapes(t)[cp]
	exact := func(name string, variant int, st int, body []byte) map[string]any {
		t.Helper()
		orig := shapes[variant]
		require.Equal(t, orig.Status, st, "%s: %s", name, body)
		problems := append(shapeProblems(orig, body), extraPaths(orig, body)...)
		m := obj(t, body)
		for path, want := range orig.Discriminators {
			if got := valueAt(m, path); got != want {
				problems = append(problems, fmt.Sprintf("%s: %v, original %v", path, got, want))
			}
		}
		require.Empty(t, problems, "%s (%s#%d) is not the original's answer; body: %s", name, cp, variant, body)
		return m
	}
	model := func(m map[string]any) any { return valueAt(m, "llm_guidance.model") }

	parent := map[string]any{"patientFirstName": "Mary", "patientLastName": "Smith", "phoneNumber": "412-555-0100",
		"uui": "call-individual-1"}
	st, body := p.post(t, "/createPatient", parent)
	created := exact("parent created", 0, st, body)
	require.Equal(t, "INDIVIDUAL_PATIENT_PER_PERSON", model(created))
	require.Equal(t, "create_child_patient_for_each_child", valueAt(created, "llm_guidance.next_action"))
	st, body = p.post(t, "/createPatient", parent)
	require.Equal(t, "INDIVIDUAL_PATIENT_PER_PERSON", model(exact("parent cached", 1, st, body)))
	st, body = p.post(t, "/createPatient", map[string]any{"patientFirstName": "Johnny", "patientLastName": "Smith",
		"isChild": true, "parentPatientGUID": created["patientGUID"], "familyId": created["familyId"],
		"birthDate": "01/15/2015", "uui": "call-individual-1"})
	child := exact("child created", 2, st, body)
	require.Equal(t, "INDIVIDUAL_PATIENT_PER_PERSON", model(child))
	require.Equal(t, "book_appointment_for_this_child", valueAt(child, "llm_guidance.next_action"))
	require.Equal(t, child["patientGUID"], valueAt(child, "llm_guidance.MUST_INCLUDE_IN_BOOK_CHILD.patientGUID"),
		"a child is booked with its own GUID")
	st, body = p.post(t, "/createPatient", map[string]any{"patientFirstName": "Ann", "patientLastName": "Lee",
		"phoneNumber": "412-555-0199", "uui": "call-individual-2"})
	exact("parent queued", 6, st, body)
}

// extraPaths lists each key path of body the original's variant does not
// have.
func extraPaths(orig shapeVariant, body []byte) []string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}
	}
	got := map[string]map[string]bool{}
	keyPaths(v, "", got)
	var extra []string
	for p := range got {
		if _, ok := orig.Paths[p]; !ok {
			extra = append(extra, p+": not in the original")
		}
	}
	sort.Strings(extra)
	return extra
}

// valueAt is the value at a dotted key path of m (nil when absent).
func valueAt(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// apptVariants are createAppt's answers: booked with and without a note,
// the four auth refusals, patient not found, validation, children[] and
// a Cloud9 error.
func apptVariants(t *testing.T, p *parityEnv, patient, token string, offered []any) []produced {
	t.Helper()
	const appt = "POST " + parityBase + "/createAppt"
	var out []produced
	add := func(name string, variants []int, st int, body []byte) {
		for _, v := range variants {
			out = append(out, produced{name: name, variant: variantKey(appt, v), status: st, body: body})
		}
	}
	slot := func(i int) map[string]any {
		s := offered[i].(map[string]any)
		return map[string]any{"patientGUID": patient, "bookingAuthToken": token, "startTime": s["startTime"],
			"scheduleViewGUID": s["scheduleViewGUID"], "scheduleColumnGUID": s["scheduleColumnGUID"],
			"appointmentTypeGUID": s["appointmentTypeGUID"], "minutes": 45, "uui": "call-parity-1"}
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	st, body := p.post(t, "/createAppt", with(slot(0), "note", "Child: Johnny Smith | DOB: 01/15/2015", "childName", "Johnny Smith"))
	add("booked with note", []int{0}, st, body)
	require.Equal(t, true, obj(t, body)["success"], "%s", body)
	st, body = p.post(t, "/createAppt", with(slot(1), "childName", "Jane Smith"))
	add("booked without note", []int{2}, st, body)
	// A sibling on a slot already booked in this call (the same child
	// again is answered idempotently: docs/differences.md).
	st, body = p.post(t, "/createAppt", with(slot(0), "childName", "Jill Smith"))
	add("sibling on the same slot", []int{1}, st, body)

	forged := token[:len(token)-2] + map[bool]string{true: "AA", false: "BB"}[strings.HasSuffix(token, "AA")]
	st, body = p.post(t, "/createAppt", with(slot(2), "bookingAuthToken", forged))
	add("auth signature invalid", []int{3}, st, body)
	st, body = p.post(t, "/createAppt", with(slot(2), "bookingAuthToken", "no-dot-here"))
	add("auth malformed", []int{4}, st, body)
	other, _, err := p.signer.Issue("call-parity-1", "1bdbf4a4-36c4-4b54-8cd3-111111111111")
	require.NoError(t, err)
	st, body = p.post(t, "/createAppt", with(slot(2), "bookingAuthToken", other))
	add("auth guid mismatch", []int{5}, st, body)
	ghost := "2bdbf4a4-36c4-4b54-8cd3-222222222222"
	// No token and no session of this patient (the parent's own session
	// would authorize it in BOOKING_AUTH_MODE=session).
	st, body = p.post(t, "/createAppt", with(slot(2), "patientGUID", ghost, "bookingAuthToken", nil, "uui", nil))
	add("auth missing", []int{6}, st, body)

	ghostToken, _, err := p.signer.Issue("call-parity-9", ghost)
	require.NoError(t, err)
	st, body = p.post(t, "/createAppt", with(slot(3), "patientGUID", ghost, "bookingAuthToken", ghostToken, "uui", "call-parity-9"))
	add("patient not found", []int{7}, st, body)

	st, body = p.post(t, "/createAppt", map[string]any{"patientGUID": patient, "bookingAuthToken": token})
	add("validation", []int{8}, st, body)

	c1, c2 := offered[4].(map[string]any), offered[5].(map[string]any)
	st, body = p.post(t, "/createAppt", map[string]any{"patientGUID": patient, "bookingAuthToken": token, "uui": "call-parity-1",
		"children": []any{
			map[string]any{"childName": "Jim Smith", "startTime": c1["startTime"], "scheduleViewGUID": c1["scheduleViewGUID"], "scheduleColumnGUID": c1["scheduleColumnGUID"]},
			map[string]any{"childName": "Joe Smith", "startTime": c2["startTime"], "scheduleViewGUID": c2["scheduleViewGUID"], "scheduleColumnGUID": c2["scheduleColumnGUID"]},
		}})
	add("children[]", []int{10}, st, body)

	// Cloud9 refuses the booking for a reason flowgate has no class for
	// (an appointment type not bookable online).
	st, body = p.post(t, "/createAppt", with(slot(6), "appointmentTypeGUID", cloud9sim.AdjustmentTypeGUID))
	// The original answers a Cloud9 error with and without Cloud9's message
	// (11, 12); flowgate always passes the message, which fits both.
	add("cloud9 error", []int{11, 12}, st, body)
	require.Equal(t, "transfer_to_agent", obj(t, body)["llm_guidance"].(map[string]any)["action_required"], "%s", body)
	require.NotEqual(t, true, obj(t, body)["queued"], "a definite refusal is answered in the call: %s", body)
	// The original's classifier names Cloud9's "Appointment Type GUID
	// specified does not exist…" CLOUD9_ERROR; flowgate's finer class
	// stays beside it.
	require.Equal(t, "CLOUD9_ERROR", obj(t, body)["_debug"].(map[string]any)["error_type"], "%s", body)
	require.Equal(t, "INVALID_APPT_TYPE", obj(t, body)["_debug"].(map[string]any)["flowgate_error_type"], "%s", body)

	// A slot no one offered (after hours): the original sent it to Cloud9,
	// whose refusal its classifier named CLOUD9_ERROR, with a transfer;
	// flowgate refuses a raw slot it does not offer before Cloud9 is asked
	// (a raw booking overlapping a held slot was a double booking,
	// docs/booking.md "Raw slot fields"), in the same shape, under its own
	// name SLOT_NOT_AVAILABLE, with the slot guidance (docs/differences.md).
	late := with(slot(7), "childName", "Jed Smith")
	late["startTime"] = strings.Fields(late["startTime"].(string))[0] + " 11:00 PM"
	st, body = p.post(t, "/createAppt", late)
	add("slot cannot be scheduled", []int{11, 12}, st, body)
	require.Equal(t, "SLOT_NOT_AVAILABLE", obj(t, body)["_debug"].(map[string]any)["error_type"], "%s", body)
	require.Equal(t, "offer_alternative_slot", obj(t, body)["llm_guidance"].(map[string]any)["action_required"], "%s", body)
	return out
}

// With Cloud9 failing every call (the simulator's error rate 100 %) and
// nothing cached, getGroupedApptSlots answers 500 with the transfer
// guidance in the body, as the original (nodered-endpoints §1.5 "500":
// groups [], error true, the transfer llm_guidance) — never a bare 500.
func TestGroupedSlotsCloud9FailingAnswers500WithGuidance(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	p.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1})
	st, body := p.post(t, "/getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "startDate": simDay(p.sim, 3)})
	require.Equal(t, http.StatusInternalServerError, st, "%s", body)
	var r struct {
		Groups        []any `json:"groups"`
		TotalGroups   *int  `json:"totalGroups"`
		Error         bool  `json:"error"`
		CacheDecision struct {
			Checked        bool   `json:"checked"`
			FallbackReason string `json:"fallbackReason"`
		} `json:"_cacheDecision"`
		LLMGuidance struct {
			ActionRequired      string   `json:"action_required"`
			NextState           string   `json:"next_state"`
			TransferReason      string   `json:"transfer_reason"`
			VoiceResponse       string   `json:"voice_response"`
			Timestamp           string   `json:"timestamp"`
			ProhibitedResponses []string `json:"prohibited_responses"`
		} `json:"llm_guidance"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	require.NotNil(t, r.Groups, "groups: [] (not null)")
	require.Empty(t, r.Groups)
	require.NotNil(t, r.TotalGroups)
	require.Zero(t, *r.TotalGroups)
	require.True(t, r.Error)
	require.True(t, r.CacheDecision.Checked)
	require.Equal(t, "api_error", r.CacheDecision.FallbackReason)
	require.Equal(t, "transfer_to_agent", r.LLMGuidance.ActionRequired)
	require.Equal(t, "TRANSFER", r.LLMGuidance.NextState)
	require.Equal(t, "api_error", r.LLMGuidance.TransferReason)
	require.Equal(t, contracts.TransferNowVoice, r.LLMGuidance.VoiceResponse)
	require.Equal(t, contracts.SlotsTransferProhibited(), r.LLMGuidance.ProhibitedResponses)
	require.NotEmpty(t, r.LLMGuidance.Timestamp)
	require.Positive(t, p.sim.Calls("GetOnlineReservations"), "Cloud9 was asked")
}

// CLOUD9_SLOT_COLUMNS: by default only CLOUD9_SCHEDULE_COLUMN_GUID's slots
// are offered (the original's filter, docs/reference/nodered-endpoints.md §1.4), `all` offers every
// chair, a list those chairs; a createAppt naming a configured chair is
// booked in it, one naming another chair on the default chair.
func TestSlotColumnsOffered(t *testing.T) {
	columns := func(p *parityEnv) (map[string]int, []any) {
		st, body := p.post(t, "/getApptSlots", map[string]any{"startDate": simDay(p.sim, 2), "endDate": simDay(p.sim, 3)})
		require.Equal(t, http.StatusOK, st)
		list := obj(t, body)["slots"].([]any)
		seen := map[string]int{}
		for _, s := range list {
			seen[strings.ToLower(s.(map[string]any)["scheduleColumnGUID"].(string))]++
		}
		return seen, list
	}
	def := newParityEnv(t, cloud9sim.Config{}, nil)
	got, _ := columns(def)
	require.Equal(t, []string{cloud9sim.Chair8GUID}, keys(got), "default: the schedule column only")
	all := newParityEnv(t, cloud9sim.Config{}, map[string]string{"CLOUD9_SLOT_COLUMNS": "all"})
	gotAll, allSlots := columns(all)
	require.Len(t, gotAll, 4, "all: every chair")
	require.Equal(t, got[cloud9sim.Chair8GUID]*4, len(allSlots))
	two := newParityEnv(t, cloud9sim.Config{}, map[string]string{"CLOUD9_SLOT_COLUMNS": cloud9sim.Chair9GUID + ", " + cloud9sim.Chair10GUID})
	gotTwo, _ := columns(two)
	require.ElementsMatch(t, []string{cloud9sim.Chair9GUID, cloud9sim.Chair10GUID}, keys(gotTwo))

	slotOf := func(chair string) map[string]any {
		for _, s := range allSlots {
			if m := s.(map[string]any); strings.EqualFold(m["scheduleColumnGUID"].(string), chair) {
				return m
			}
		}
		t.Fatalf("no slot of chair %s", chair)
		return nil
	}
	book := func(p *parityEnv, slot map[string]any, column, uui string) string {
		st, body := p.post(t, "/createPatient", map[string]any{"patientFirstName": "Ann", "patientLastName": "Lee", "uui": uui})
		require.Equal(t, http.StatusOK, st)
		pat := obj(t, body)
		st, body = p.post(t, "/createAppt", map[string]any{"patientGUID": pat["patientGUID"], "bookingAuthToken": pat["bookingAuthToken"],
			"startTime": slot["startTime"], "scheduleViewGUID": slot["scheduleViewGUID"], "scheduleColumnGUID": column, "uui": uui})
		require.Equal(t, http.StatusOK, st)
		require.Equal(t, true, obj(t, body)["success"], "%s", body)
		appts := p.sim.Appointments()
		require.Len(t, appts, 1)
		return appts[0].ScheduleColumnGUID
	}
	// A configured chair is honoured: chair 9 is booked where every chair
	// is the practice's.
	require.True(t, strings.EqualFold(cloud9sim.Chair9GUID, book(all, slotOf(cloud9sim.Chair9GUID), cloud9sim.Chair9GUID, "call-cols")))
	// A chair that is not configured falls back to the default chair, as
	// the original booked Chair 8 whatever was sent (issue 43.6).
	require.True(t, strings.EqualFold(cloud9sim.Chair8GUID, book(def, slotOf(cloud9sim.Chair8GUID), cloud9sim.Chair9GUID, "call-cols-8")))
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestParitySettingsValidated(t *testing.T) {
	for k, v := range map[string]string{"CLOUD9_SLOT_COLUMNS": "chair-8", "BOOKING_PATIENT_MODEL": "family"} {
		_, err := LoadConfig(envOf(map[string]string{k: v}))
		require.Error(t, err, k)
		require.Contains(t, err.Error(), k)
	}
	cfg, err := LoadConfig(envOf(map[string]string{}))
	require.NoError(t, err)
	require.Equal(t, []string{cfg.Booking.ScheduleColumn}, cfg.Booking.offeredColumns())
	require.Equal(t, "parent", cfg.Booking.PatientModel)
	cfg, err = LoadConfig(envOf(map[string]string{"CLOUD9_SLOT_COLUMNS": "ALL", "BOOKING_PATIENT_MODEL": "individual"}))
	require.NoError(t, err)
	require.Nil(t, cfg.Booking.offeredColumns())
	require.Equal(t, "individual", cfg.Booking.PatientModel)
}
