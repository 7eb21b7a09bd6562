//go:build chaos

package chaos

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// The monitoring credentials of flowgateEnv.
const (
	drillMonitorUser = "drill"
	drillMonitorPass = "drill-monitoring-password"
)

// monitorAuth is the Authorization header of user / pass.
func monitorAuth(user, pass string) http.Header {
	return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}}
}

// drillCall is one caller's call: its identifiers, who it books, and the
// operations it got queued.
type drillCall struct {
	session, uui       string
	parentFirst, last  string
	child, consultKid  string
	phone, patientGUID string
	ops                []string
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// probe is one anonymous attempt at another caller's operations.
type qsProbe struct {
	what   string // the kind of attempt, for the breakdown
	method string
	path   string
	header http.Header
}

// TestDrillSecurityQueueStatus: bookings of several calls are queued on the
// binary (createPatient, createAppt and bookConsultation, each with its
// call's sessionId and uui, behind a Cloud9 write limit of one an hour);
// then a client without the monitoring credentials, which knows its own
// call and operations, the id format and every victim's creation
// millisecond, patient GUID and phone, tries to read the other calls'
// operations every way it can: the plain listing with any paging or flag,
// forged, wrong and foreign credentials and proxy headers, path and method
// variants, operationId guesses (right millisecond, random tails of both
// lengths, wildcards, prefixes, case), sessionId / uui guesses (common
// values, flowgate's made-up holders, GUIDs, phones, names, its own with
// variations), repeated parameters, and the operation status endpoints.
// An attempt is accepted when its answer names an operation that is not
// the attacker's, counts more than the attacker's own, or carries any
// victim's id, name, session, uui, phone or GUID. The operator's
// credentials, and the attacker's own keys, must still work.
func TestDrillSecurityQueueStatus(t *testing.T) {
	d := startQueueStatusDrill(t)
	d.attackerCall(t)
	d.victimCalls(t)
	d.operatorSeesAll(t)
	d.ownKeysWork(t)
	d.leakCheckNotVacuous(t)
	d.probeEveryWay(t)
}

// qsDrillVictims is how many calls TestDrillSecurityQueueStatus queues
// besides the attacker's.
const qsDrillVictims = 4

// queueStatusDrill is TestDrillSecurityQueueStatus' fixture: flowgate on
// its own Redis, one client, and the calls the steps queue.
type queueStatusDrill struct {
	c     *client
	att   *drillCall // the attacker's own call
	token string     // the attacker's bookingAuthToken
	slots []contracts.ApptSlot
	vs    []*drillCall // the victims' calls

	// What the attacker must never see: every victim's operation ids, names,
	// call identifiers, phone and patient GUID.
	secrets   []string
	victimOps map[string]bool
	own       map[string]bool // the attacker's own operations
	operator  answer          // the operator's listing of every operation
}

func startQueueStatusDrill(t *testing.T) *queueStatusDrill {
	t.Helper()
	srv := rediscluster.StartServer(t)
	// One Cloud9 write per procedure an hour: after the attacker's first
	// writes every booking is queued at once, and stays queued.
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{"CLOUD9_WRITE_LIMIT": "1/1h", "BOOKING_AUTH_MODE": "legacy"}))
	return &queueStatusDrill{c: newClient(p.Base, 30*time.Second, nil)}
}

func (d *queueStatusDrill) post(endpoint string, body any) answer {
	raw, _ := json.Marshal(body)
	return d.c.send("POST", bookingBase+"/"+endpoint, raw, nil, false)
}

// appt is call's createAppt of child in slot s for patient guid.
func (d *queueStatusDrill) appt(call *drillCall, guid, token, child string, s contracts.ApptSlot) answer {
	body := map[string]any{"patientGUID": guid, "bookingToken": s.BookingToken, "childName": child,
		"uui": call.uui, "sessionId": call.session}
	if token != "" {
		body["bookingAuthToken"] = token
	}
	return d.post("createAppt", body)
}

// queuedID is the operation id of a queued answer; anything else fails t.
func queuedID(t *testing.T, what string, a answer) string {
	t.Helper()
	var v struct {
		Queued      bool   `json:"queued"`
		OperationID string `json:"operationId"`
		Parent      struct {
			Queued      bool   `json:"queued"`
			OperationID string `json:"operationId"`
		} `json:"parent"`
	}
	if a.Err != nil || json.Unmarshal(a.Body, &v) != nil {
		t.Fatalf("setup: %s: %s", what, a)
	}
	switch {
	case v.Queued && v.OperationID != "":
		return v.OperationID
	case v.Parent.Queued && v.Parent.OperationID != "":
		return v.Parent.OperationID
	}
	t.Fatalf("setup: %s was not queued: %s", what, a)
	return ""
}

// attackerCall: the attacker's own call, a patient and a booking made (the
// hour's writes), then a booking queued — its own operation.
func (d *queueStatusDrill) attackerCall(t *testing.T) {
	att := &drillCall{session: "att-" + randHex(8), uui: "att-uui-" + randHex(8), parentFirst: "Mallory", last: "Attacker",
		child: "Eve Attacker", phone: "4125559000"}
	var slots contracts.GetApptSlotsResponse
	mustBooking(t, d.c, "getApptSlots", map[string]any{"sessionId": att.session, "uui": att.uui}, &slots)
	if len(slots.Slots) < 2*qsDrillVictims+2 {
		t.Fatalf("setup: %d slots, want %d", len(slots.Slots), 2*qsDrillVictims+2)
	}
	var pat contracts.PatientCreatedResponse
	mustBooking(t, d.c, "createPatient", map[string]any{"patientFirstName": att.parentFirst, "patientLastName": att.last,
		"phoneNumber": att.phone, "birthDate": "01/02/1985", "uui": att.uui, "sessionId": att.session}, &pat)
	if !pat.Success || pat.PatientGUID == "" {
		t.Fatalf("setup: the attacker's patient: %+v", pat)
	}
	att.patientGUID = pat.PatientGUID
	if a := d.appt(att, att.patientGUID, pat.BookingAuthToken, att.child, slots.Slots[0]); a.Status != http.StatusOK {
		t.Fatalf("setup: the attacker's first booking: %s", a)
	}
	att.ops = append(att.ops, queuedID(t, "the attacker's queued booking",
		d.appt(att, att.patientGUID, pat.BookingAuthToken, att.child, slots.Slots[1])))
	d.att, d.token, d.slots = att, pat.BookingAuthToken, slots.Slots
	d.own = map[string]bool{}
	for _, id := range att.ops {
		d.own[id] = true
	}
}

// victimCalls: each victim's call queues a patient, a booking and a
// consultation.
func (d *queueStatusDrill) victimCalls(t *testing.T) {
	slots := d.slots
	for i := 0; i < qsDrillVictims; i++ {
		v := &drillCall{session: uuid.NewString(), uui: "uui-" + randHex(12), parentFirst: fmt.Sprintf("Vera%c", 'A'+i),
			last: fmt.Sprintf("Victim%c", 'A'+i), child: fmt.Sprintf("Tommy%c Victim", 'A'+i),
			consultKid: fmt.Sprintf("Lucy%c", 'A'+i), phone: fmt.Sprintf("41255501%02d", i), patientGUID: uuid.NewString()}
		v.ops = append(v.ops, queuedID(t, "a victim's createPatient", d.post("createPatient", map[string]any{
			"patientFirstName": v.parentFirst, "patientLastName": v.last, "phoneNumber": v.phone, "birthDate": "03/04/1986",
			"uui": v.uui, "sessionId": v.session})))
		v.ops = append(v.ops, queuedID(t, "a victim's createAppt", d.appt(v, v.patientGUID, "", v.child, slots[2+2*i])))
		s := slots[3+2*i]
		v.ops = append(v.ops, queuedID(t, "a victim's bookConsultation", d.post("bookConsultation", map[string]any{
			"parentFirstName": v.parentFirst, "parentLastName": v.last, "parentPhone": v.phone, "sessionId": v.session, "uui": v.uui,
			"children": []any{map[string]any{"firstName": v.consultKid, "lastName": v.last, "dob": "05/06/2015",
				"startTime": s.StartTime, "scheduleViewGUID": s.ScheduleViewGUID, "scheduleColumnGUID": s.ScheduleColumnGUID,
				"appointmentTypeGUID": s.AppointmentTypeGUID}}})))
		d.vs = append(d.vs, v)
	}
	d.victimOps = map[string]bool{}
	for _, v := range d.vs {
		for _, id := range v.ops {
			d.victimOps[id] = true
			d.secrets = append(d.secrets, id)
		}
		d.secrets = append(d.secrets, v.session, v.uui, v.parentFirst, v.last, v.child, v.consultKid, v.phone, v.patientGUID)
	}
}

// qs is GET queue-status with query and header h; anything but a 200 with
// a queue-status body fails t.
func (d *queueStatusDrill) qs(t *testing.T, query string, h http.Header) (answer, contracts.QueueStatusResponse) {
	t.Helper()
	a := d.c.send("GET", bookingBase+"/queue-status"+query, nil, h, false)
	var st contracts.QueueStatusResponse
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &st) != nil {
		t.Fatalf("queue-status%s: %s", query, a)
	}
	return a, st
}

// operatorSeesAll: the data is there: the operator sees every victim's
// operation, names included.
func (d *queueStatusDrill) operatorSeesAll(t *testing.T) {
	a, all := d.qs(t, "?pageSize=500", monitorAuth(drillMonitorUser, drillMonitorPass))
	if all.Scope != contracts.QueueScopeAll {
		t.Fatalf("the operator's view: %s", a)
	}
	listed := map[string]bool{}
	for _, op := range all.Operations {
		listed[op.ID] = true
	}
	for id := range d.victimOps {
		if !listed[id] {
			t.Fatalf("the operator does not see victim operation %s: %s", id, clip(a.Body, 2000))
		}
	}
	for _, v := range d.vs {
		if !strings.Contains(string(a.Body), v.child) || !strings.Contains(string(a.Body), v.parentFirst) {
			t.Fatalf("the operator does not see %s's names: %s", v.session, clip(a.Body, 2000))
		}
	}
	d.operator = a
}

// ownKeysWork: the attacker's own keys work: its operation, without names.
func (d *queueStatusDrill) ownKeysWork(t *testing.T) {
	att := d.att
	for _, q := range []string{"?operationId=" + att.ops[0], "?sessionId=" + att.session, "?uui=" + att.uui,
		"?sessionId=" + att.session + "&uui=" + att.uui} {
		a, st := d.qs(t, q, nil)
		if len(st.Operations) != 1 || st.Operations[0].ID != att.ops[0] || st.Total != 1 || st.Operations[0].ChildName != "" {
			t.Fatalf("the caller's own lookup %s: %s", q, a)
		}
	}
}

// leakCheckNotVacuous: the leak check rejects the operator's own answer.
func (d *queueStatusDrill) leakCheckNotVacuous(t *testing.T) {
	if leaked(d.operator, qsProbe{path: bookingBase + "/queue-status?pageSize=500"}, d.secrets, d.victimOps, d.own) == "" {
		t.Fatalf("the leak check accepts the operator's listing: %s", clip(d.operator.Body, 500))
	}
}

// probeEveryWay sends every probe of securityProbes anonymously; none may
// show anything of another call, nor answer 5xx.
func (d *queueStatusDrill) probeEveryWay(t *testing.T) {
	probes := securityProbes(d.att, d.vs)
	accepted, byKind, statuses := 0, map[string][2]int{}, map[int]int{}
	for _, pr := range probes {
		a := d.c.send(pr.method, pr.path, nil, pr.header, false)
		statuses[a.Status]++
		why := leaked(a, pr, d.secrets, d.victimOps, d.own)
		k := byKind[pr.what]
		k[0]++
		if why != "" {
			accepted++
			k[1]++
			t.Errorf("ACCEPTED %s: %s: %s", pr.what, why, a)
		}
		byKind[pr.what] = k
		if a.Status >= 500 || a.Status == 0 {
			t.Errorf("%s: %s", pr.what, a)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("%-44s attempts %4d accepted %d", k, byKind[k][0], byKind[k][1])
	}
	t.Logf("victims: %d calls, %d operations (createPatient, createAppt, bookConsultation each); answers %s",
		len(d.vs), len(d.victimOps), statusLine(statuses))
	summary(t, "security queue-status", "attempts=%d accepted=%d", len(probes), accepted)
}

// leaked says why answer a to pr shows the attacker something of another
// call ("" when it does not).
func leaked(a answer, pr qsProbe, secrets []string, victimOps, own map[string]bool) string {
	if a.Err != nil {
		return ""
	}
	sent, _ := url.PathUnescape(pr.path)
	body := string(a.Body)
	for _, s := range secrets {
		if strings.Contains(body, s) && !strings.Contains(sent, s) { // an echo of the attacker's own guess is not a leak
			return "the answer carries " + s
		}
	}
	var st struct {
		Total      *int `json:"total"`
		Operations []struct {
			ID string `json:"id"`
		} `json:"operations"`
		Found     bool `json:"found"`
		Operation *struct {
			ID string `json:"id"`
		} `json:"operation"`
	}
	if json.Unmarshal(a.Body, &st) != nil {
		return ""
	}
	mine := 0
	for _, op := range st.Operations {
		if !own[op.ID] {
			return "lists operation " + op.ID
		}
		mine++
	}
	if st.Total != nil && *st.Total > mine && *st.Total > len(own) {
		return fmt.Sprintf("counts %d operations, %d of them the attacker's", *st.Total, mine)
	}
	if st.Found && st.Operation != nil && !own[st.Operation.ID] {
		return "finds operation " + st.Operation.ID
	}
	return ""
}

// securityProbes are the anonymous attempts (see TestDrillSecurityQueueStatus).
func securityProbes(att *drillCall, vs []*drillCall) []qsProbe {
	const qsPath = bookingBase + "/queue-status"
	var out []qsProbe
	add := func(what, method, path string, h http.Header) {
		out = append(out, qsProbe{what: what, method: method, path: path, header: h})
	}
	get := func(what, query string) { add(what, "GET", qsPath+query, nil) }
	esc := url.QueryEscape

	// 1. The listing, any paging, any flag.
	for _, q := range []string{"", "?", "?page=1", "?page=2", "?page=1&pageSize=500", "?pageSize=1", "?cursor=1", "?cursor=2",
		"?page=1&pageSize=500&cursor=1", "?all=true", "?scope=all", "?operator=true", "?Operator=true", "?admin=1", "?debug=1",
		"?monitoring=1", "?full=1", "?names=1", "?include=names", "?storageType=redis", "?status=pending", "?status=failed"} {
		get("listing, paging and flags", q)
	}
	// 2. The listing with credentials that are not the monitoring ones,
	// and the headers a proxy might trust.
	basic := func(s string) http.Header {
		return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(s))}}
	}
	for _, h := range []http.Header{
		monitorAuth(drillMonitorUser, "wrong"), monitorAuth(drillMonitorUser, ""), monitorAuth("", drillMonitorPass),
		monitorAuth("admin", drillMonitorPass), monitorAuth(drillMonitorUser, drillMonitorPass+" "), monitorAuth(strings.ToUpper(drillMonitorUser), drillMonitorPass),
		monitorAuth(drillMonitorUser, strings.ToUpper(drillMonitorPass)), monitorAuth(drillMonitorUser+":"+drillMonitorPass, ""),
		basic(drillMonitorUser), basic(drillMonitorPass), basic(":"), basic(""),
		{"Authorization": {"Basic %%%not-base64"}}, {"Authorization": {"Basic"}}, {"Authorization": {"Bearer " + drillMonitorPass}},
		{"Authorization": {"Bearer " + bearerToken}}, {"Authorization": {"Bearer " + hmacSecret}}, {"Authorization": {"Digest username=\"drill\""}},
		{"Authorization": {drillMonitorUser + ":" + drillMonitorPass}},
		{"X-Forwarded-For": {"127.0.0.1"}}, {"X-Real-Ip": {"127.0.0.1"}}, {"X-Flowgate-Via": {"node-red"}},
		{"X-Forwarded-User": {drillMonitorUser}}, {"X-Remote-User": {drillMonitorUser}}, {"X-Auth-Request-User": {drillMonitorUser}},
		{"Cookie": {"session=" + drillMonitorPass}}, {"X-Forwarded-Host": {"localhost"}, "X-Forwarded-Proto": {"https"}},
	} {
		add("listing with foreign credentials/headers", "GET", qsPath+"?pageSize=500", h)
	}
	// 3. Path and method variants of the listing.
	for _, path := range []string{qsPath + "/", "/" + qsPath, bookingBase + "/Queue-Status", bookingBase + "/QUEUE-STATUS",
		bookingBase + "/./queue-status", bookingBase + "/x/../queue-status", bookingBase + "/queue-status%2F", bookingBase + "%2Fqueue-status",
		bookingBase + "/queue-status;all", bookingBase + "/queue-status.json", "/chord//ortho-prd/queue-status", "/queue-status"} {
		add("listing by path variants", "GET", path+"?pageSize=500", nil)
	}
	for _, m := range []string{"HEAD", "POST", "PUT", "OPTIONS", "PATCH", "DELETE"} {
		add("listing by other methods", m, qsPath+"?pageSize=500", nil)
	}
	// 4. operationId guesses: the victims' exact milliseconds with random
	// tails of the new and the original length, and shapes a lookup might
	// take for a pattern.
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	tail := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return string(b)
	}
	var guesses []string
	for _, v := range vs {
		for _, id := range v.ops {
			cut := strings.LastIndexByte(id, '-')
			head := id[:cut+1] // op[-pat|-consult]-<ms>-
			for range 25 {
				guesses = append(guesses, head+tail(booking.OperationIDRandom))
			}
			for range 10 {
				guesses = append(guesses, head+tail(6))
			}
			guesses = append(guesses, head, head+"*", head+"%", head+".*", head+"_", id[:len(id)-1], strings.ToUpper(id),
				id[:cut], head+tail(booking.OperationIDRandom)+"-appt1", "note-"+head+tail(booking.OperationIDRandom))
		}
	}
	guesses = append(guesses, "*", "%", "op-*", "op-%", ".*", "op-.*", "op-", "op", "1", "0", "null", "undefined", "true",
		"' OR '1'='1", "\" OR 1=1 --", "../", "..%2F", "op-1%00", "asynq:{critical}:t:*", att.ops[0]+"*", att.ops[0]+",*",
		strings.Repeat("a", 128), "op-1705764600000-abc123")
	for _, g := range guesses {
		get("operationId guesses", "?operationId="+esc(g))
		add("checkOperationStatus guesses", "GET", bookingBase+"/checkOperationStatus?operationId="+esc(g), nil)
		add("operations/{id} guesses", "GET", bookingBase+"/operations/"+url.PathEscape(g), nil)
	}
	// 5. sessionId / uui guesses: common values, flowgate's made-up holders
	// (patient:<guid>, consult:<phone>), what the attacker knows of the
	// victims (GUIDs, phones, names), and its own keys varied.
	keys := []string{"*", "%", ".*", "null", "undefined", "0", "1", "-1", "true", "[]", "{}", "session", "sessionId", "uui",
		"default", "test", "call", "call-1", "call-0", "s", "s-1", "anonymous", "admin", "drill", "drill-call-1", " ",
		strings.ToUpper(att.session), strings.TrimSuffix(att.session, att.session[len(att.session)-1:]), att.session + " x",
		att.session + "*", att.session + "%", "\u00a0" + att.session, att.session + "\u200b", att.uui + "," + att.session}
	for n := 0; n < 40; n++ {
		keys = append(keys, fmt.Sprintf("call-%d", n), fmt.Sprintf("session-%d", n))
	}
	for _, v := range vs {
		digits := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, v.phone)
		keys = append(keys, "patient:"+v.patientGUID, "patient:"+strings.ToLower(v.patientGUID), "consult:"+digits, v.patientGUID,
			v.phone, v.parentFirst+" "+v.last, v.child, uuid.NewString(), "uui-"+tail(24))
	}
	keys = append(keys, "patient:"+att.patientGUID, "consult:"+att.phone)
	for _, k := range keys {
		get("sessionId guesses", "?sessionId="+esc(k))
		get("uui guesses", "?uui="+esc(k))
		get("sessionId+uui guesses", "?sessionId="+esc(k)+"&uui="+esc(k))
	}
	// 6. The attacker's own keys beside guesses: repeated parameters, its
	// session with a guessed operation, its operation with a guessed
	// session, and the whole set at once.
	for i, k := range keys {
		get("repeated or mixed parameters", "?sessionId="+esc(att.session)+"&sessionId="+esc(k))
		get("repeated or mixed parameters", "?sessionId="+esc(k)+"&sessionId="+esc(att.session))
		get("repeated or mixed parameters", "?uui="+esc(att.uui)+"&uui="+esc(k))
		get("repeated or mixed parameters", "?operationId="+esc(att.ops[0])+"&sessionId="+esc(k))
		if i < len(guesses) {
			get("repeated or mixed parameters", "?sessionId="+esc(att.session)+"&operationId="+esc(guesses[i]))
			get("repeated or mixed parameters", "?operationId="+esc(att.ops[0])+"&operationId="+esc(guesses[i]))
		}
	}
	get("repeated or mixed parameters", "?sessionId="+esc(att.session)+"&pageSize=500&page=1&all=true&scope=all")
	get("repeated or mixed parameters", "?operationId="+esc(att.ops[0])+"&Authorization=Basic%20"+esc(base64.StdEncoding.EncodeToString([]byte(drillMonitorUser+":"+drillMonitorPass))))
	return out
}
