package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

const consultEndpoint = "POST " + parityBase + "/bookConsultation"

var consultNorm = contractstest.Normalizer{Rules: []contractstest.Rule{
	{RE: regexp.MustCompile(`op-consult-\d+-[0-9a-z]{20}`), Name: "consultOp", Numbered: true},
	{RE: regexp.MustCompile(`op-\d+-[0-9a-z]{20}`), Name: "op", Numbered: true},
	{RE: contractstest.UUID, Name: "guid", Numbered: true},
	{RE: contractstest.Time, Name: "time"},
	{RE: regexp.MustCompile(`\d{1,2}/\d{1,2}/\d{4} \d{1,2}:\d{2}(:\d{2})? [AP]M`), Name: "start", Numbered: true},
}}

// consultGolden pins a consultation answer: elapsedMs zeroed, volatile
// values replaced.
func consultGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	if _, ok := m["elapsedMs"]; ok {
		m["elapsedMs"] = 0
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	contractstest.Golden(t, "booking_http_consult_"+name, consultNorm.Normalize(t, b))
}

// consultReq is a parent with the children on the given offered slots.
func consultReq(session string, slots []any, names ...string) map[string]any {
	var children []any
	for i, n := range names {
		s := slots[i].(map[string]any)
		children = append(children, map[string]any{"firstName": n, "lastName": "Lane", "dob": "03/0" + string(rune('1'+i)) + "/2015",
			"startTime": s["startTime"], "scheduleViewGUID": s["scheduleViewGUID"], "scheduleColumnGUID": s["scheduleColumnGUID"],
			"appointmentTypeGUID": s["appointmentTypeGUID"]})
	}
	return map[string]any{"parentFirstName": "Lois", "parentLastName": "Lane", "parentPhone": "412-555-0199",
		"parentEmail": "lois@example.com", "insuranceProvider": "Aetna", "insuranceMemberId": "M-1", "sessionId": session,
		"children": children}
}

func offeredSlots(t *testing.T, p *parityEnv, session string) []any {
	t.Helper()
	st, body := p.post(t, "/getApptSlots", map[string]any{"startDate": simDay(p.sim, 2), "endDate": simDay(p.sim, 4), "sessionId": session})
	require.Equal(t, http.StatusOK, st)
	offered := obj(t, body)["slots"].([]any)
	require.GreaterOrEqual(t, len(offered), 8)
	return offered
}

// TestBookConsultationShapes: bookConsultation's answers. Every variant —
// 200 all booked (the original's one observed shape, compared key path by
// key path), the repeat answered from the marks, 202 with the parent queued
// and with children queued, 207 partial, 500 nothing booked, and bad input
// — driven through the real wiring against the simulator, each pinned by a
// golden (contracts/testdata/booking_http_consult_*.golden; -update
// rewrites).
func TestBookConsultationShapes(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	offered := offeredSlots(t, p, "consult-1")
	var answers []produced

	// 200: parent and two children created, both booked.
	req := consultReq("consult-1", offered, "Ann", "Ben")
	st, body := p.post(t, "/bookConsultation", req)
	require.Equal(t, http.StatusOK, st, "%s", body)
	answers = append(answers, produced{name: "all booked", variant: consultEndpoint + "#0", status: st, body: body})
	consultGolden(t, "booked", body)
	require.Len(t, p.sim.Patients(), 3)
	require.Len(t, p.sim.Appointments(), 2)
	first := obj(t, body)

	// The same call again (a retried tool call): the same patients and
	// appointments, from the marks, nothing sent.
	calls := p.sim.Calls("SetPatient") + p.sim.Calls("SetAppointment")
	st, body = p.post(t, "/bookConsultation", req)
	require.Equal(t, http.StatusOK, st, "%s", body)
	answers = append(answers, produced{name: "repeat", variant: consultEndpoint + "#0", status: st, body: body})
	consultGolden(t, "repeat", body)
	again := obj(t, body)
	require.Equal(t, first["parent"].(map[string]any)["patientGUID"], again["parent"].(map[string]any)["patientGUID"])
	for i := range 2 {
		c0, c1 := first["children"].([]any)[i].(map[string]any), again["children"].([]any)[i].(map[string]any)
		require.Equal(t, c0["patientGUID"], c1["patientGUID"])
		require.Equal(t, c0["appointment"].(map[string]any)["appointmentGUID"], c1["appointment"].(map[string]any)["appointmentGUID"])
		require.Equal(t, true, c1["cached"])
	}
	require.Equal(t, calls, p.sim.Calls("SetPatient")+p.sim.Calls("SetAppointment"), "a repeat sent writes")
	require.Len(t, p.sim.Patients(), 3)
	require.Len(t, p.sim.Appointments(), 2)

	// 207: a second family; one child's slot is the first family's (held
	// and booked), the other is free.
	partial := consultReq("consult-2", []any{offered[0], offered[2]}, "Cal", "Dee")
	partial["parentFirstName"], partial["parentPhone"] = "Mia", "412-555-0177"
	st, body = p.post(t, "/bookConsultation", partial)
	require.Equal(t, http.StatusMultiStatus, st, "%s", body)
	consultGolden(t, "partial", body)
	require.Len(t, p.sim.Appointments(), 3)

	// 500: every child's slot is taken.
	none := consultReq("consult-3", []any{offered[1]}, "Eve")
	none["parentFirstName"], none["parentPhone"] = "Ned", "412-555-0166"
	st, body = p.post(t, "/bookConsultation", none)
	require.Equal(t, http.StatusInternalServerError, st, "%s", body)
	consultGolden(t, "none_booked", body)
	require.Len(t, p.sim.Appointments(), 3)

	checkConsultBadInput(t, p, offered)
	checkConsultParity(t, answers)
}

// checkConsultParity compares the 200 answers with the original's only
// observed bookConsultation shape.
func checkConsultParity(t *testing.T, answers []produced) {
	t.Helper()
	shapes := loadShapes(t)
	require.Len(t, shapes[consultEndpoint], 1, "the original's bookConsultation variants changed: drive the new ones")
	for _, a := range answers {
		_, idx := splitVariant(t, a.variant)
		orig := shapes[consultEndpoint][idx]
		require.Equal(t, orig.Status, a.status, a.name)
		require.Empty(t, shapeProblems(orig, a.body), "%s differs from the original: %s", a.name, a.body)
	}
}

// Bad input answers 200 with the validation shape and changes nothing.
func checkConsultBadInput(t *testing.T, p *parityEnv, offered []any) {
	t.Helper()
	patients, appts := len(p.sim.Patients()), len(p.sim.Appointments())
	unknownView := consultReq("consult-bad", offered[4:], "Fay")
	unknownView["children"].([]any)[0].(map[string]any)["scheduleViewGUID"] = "99999999-9999-4999-8999-999999999999"
	twice := consultReq("consult-bad", []any{offered[4], offered[4]}, "Gus", "Hal")
	for name, body := range map[string]any{
		"malformed_json":   []byte(`{"parentFirstName":`),
		"wrong_type":       []byte(`{"parentFirstName":"A","parentLastName":"B","parentPhone":"1","children":"two"}`),
		"missing_fields":   map[string]any{"parentFirstName": "A", "children": []any{map[string]any{"firstName": "C"}}},
		"bad_dob":          map[string]any{"parentFirstName": "A", "parentLastName": "B", "parentPhone": "1", "children": []any{map[string]any{"firstName": "C", "lastName": "B", "dob": "2015-13-45", "startTime": "x"}}},
		"unknown_guid":     unknownView,
		"slot_named_twice": twice,
	} {
		st, raw := p.post(t, "/bookConsultation", body)
		require.Equal(t, http.StatusOK, st, "%s: %s", name, raw)
		m := obj(t, raw)
		require.Equal(t, false, m["success"], name)
		require.Equal(t, "VALIDATION_ERROR", m["_debug"].(map[string]any)["error_type"], name)
		consultGolden(t, "validation_"+name, raw)
	}
	require.Len(t, p.sim.Patients(), patients, "bad input created a patient")
	require.Len(t, p.sim.Appointments(), appts, "bad input booked")
}

// 202: the parent's creation queued (Cloud9 refuses every SetPatient with
// "too many requests"), and the children queued behind a parent created
// now (flowgate's limiter: one SetPatient per 10 s, 2 s sync budget).
func TestBookConsultationQueuedShapes(t *testing.T) {
	q := newParityEnv(t, cloud9sim.Config{Limits: map[string]cloud9sim.Rate{"SetPatient": {N: 0, Per: time.Hour}}}, nil)
	offered := offeredSlots(t, q, "consult-q")
	st, body := q.post(t, "/bookConsultation", consultReq("consult-q", offered, "Ike", "Jo"))
	require.Equal(t, http.StatusAccepted, st, "%s", body)
	consultGolden(t, "parent_queued", body)
	m := obj(t, body)
	require.Equal(t, true, m["parent"].(map[string]any)["queued"])
	require.Equal(t, "parent_creation_queued", m["llm_guidance"].(map[string]any)["error_type"])
	require.Empty(t, q.sim.Patients())
	// The call follows its queued consultation in queue-status by its
	// sessionId or the operationId, without names.
	opID := m["parent"].(map[string]any)["operationId"].(string)
	for _, query := range []string{"sessionId=consult-q", "operationId=" + opID} {
		st, body = q.call(t, http.MethodGet, "/queue-status?"+query, nil)
		require.Equal(t, http.StatusOK, st, "%s", body)
		var qs contracts.QueueStatusResponse
		require.NoError(t, json.Unmarshal(body, &qs), "%s", body)
		require.Len(t, qs.Operations, 1, "%s: %s", query, body)
		require.Equal(t, opID, qs.Operations[0].ID)
		require.NotContains(t, string(body), "Lois", "no names without the monitoring credentials")
	}

	// BOOKING_INCALL_WAIT at the sync budget: the next turn (10 s) is not
	// waited for in the call, so the children are queued (the shape).
	s := newParityEnv(t, cloud9sim.Config{}, map[string]string{"CLOUD9_WRITE_LIMIT": "1/10s", "BOOKING_INCALL_WAIT": "10s"})
	offered = offeredSlots(t, s, "consult-s")
	st, body = s.post(t, "/bookConsultation", consultReq("consult-s", offered, "Kim", "Lou"))
	require.Equal(t, http.StatusAccepted, st, "%s", body)
	consultGolden(t, "children_queued", body)
	m = obj(t, body)
	require.Equal(t, true, m["parent"].(map[string]any)["created"])
	require.Equal(t, true, m["anyQueued"])
	for _, c := range m["children"].([]any) {
		require.Equal(t, true, c.(map[string]any)["queued"])
		require.Regexp(t, `^op-consult-\d+-[0-9a-z]{20}-appt\d$`, c.(map[string]any)["appointment"].(map[string]any)["operationId"])
	}
	require.Len(t, s.sim.Patients(), 1)
}

// Five identical bookConsultation calls at once (a voice platform retrying
// a slow tool call): whichever way each is answered (booked, or queued
// behind the attempt holding the patient's lease), Cloud9 ends with one
// parent, one patient per child and one appointment per child.
func TestBookConsultationConcurrentRepeats(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, map[string]string{"BOOKING_BACKOFF_BASE": "100ms", "BOOKING_BACKOFF_MAX": "500ms",
		"BOOKING_UNCERTAIN_GRACE": "200ms"})
	offered := offeredSlots(t, p, "consult-race")
	req := consultReq("consult-race", offered, "Ola", "Pia", "Quin")
	statuses := make([]int, 5)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body := p.post(t, "/bookConsultation", req)
			require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, st, "%s", body)
			statuses[i] = st
			t.Logf("%d elapsedMs %v", st, obj(t, body)["elapsedMs"])
		}()
	}
	wg.Wait()
	t.Logf("statuses %v", statuses)
	require.Eventually(t, func() bool { return len(p.sim.Appointments()) == 3 }, 60*time.Second, 50*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // the queued repeats finish from the marks
	require.Len(t, p.sim.Patients(), 4, "a patient was created twice")
	require.Len(t, p.sim.Appointments(), 3, "an appointment was booked twice")
	require.Equal(t, 3, p.sim.Calls("SetAppointment"))
	require.Equal(t, 4, p.sim.Calls("SetPatient"))
	st, body := p.post(t, "/bookConsultation", req)
	require.Equal(t, http.StatusOK, st, "%s", body)
}
