package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// c9Reference is docs/reference/cloud9-requests.json: what the original
// sends Cloud9 per caller operation.
type c9Reference struct {
	Formats    map[string]string `json:"formats"`
	Operations map[string]struct {
		Order      string                       `json:"order"`
		Procedures map[string]map[string]string `json:"procedures"`
	} `json:"operations"`
}

// c9Allowed is one row of docs/differences.md's "What Cloud9 receives":
// flowgate sends, for operation, procedure (parameter "(procedure)"), a
// parameter the original did not send or in another format (Format, a
// name of the reference's formats or "any"), or its procedures in
// another order (parameter "(order)", Format the order's expression).
// Rows whose parameter is "(timing)" say how flowgate paces the same XML
// and are not matched here.
type c9Allowed struct{ Operation, Procedure, Parameter, Format string }

func loadC9Reference(t *testing.T) (c9Reference, map[[3]string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "reference", "cloud9-requests.json"))
	require.NoError(t, err)
	var ref c9Reference
	require.NoError(t, json.Unmarshal(raw, &ref))
	md, err := os.ReadFile(filepath.Join("..", "docs", "differences.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(md), "\n## What Cloud9 receives\n")
	require.True(t, ok, "docs/differences.md has no section 'What Cloud9 receives'")
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	allowed := map[[3]string]string{}
	cell := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
	for _, line := range strings.Split(section, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 7 || strings.HasPrefix(strings.TrimSpace(cols[1]), "---") || strings.TrimSpace(cols[1]) == "operation" {
			continue
		}
		a := c9Allowed{Operation: cell(cols[1]), Procedure: cell(cols[2]), Parameter: cell(cols[3]), Format: cell(cols[4])}
		_, known := ref.Operations[a.Operation]
		require.True(t, known, "differences.md names operation %q, which the reference does not", a.Operation)
		allowed[[3]string{a.Operation, a.Procedure, a.Parameter}] = a.Format
	}
	return ref, allowed
}

// TestCloud9RequestsMatchOriginal captures flowgate's Cloud9 XML for every
// caller operation at the simulator and holds it against the original's
// (docs/reference/cloud9-requests.json): a procedure, a parameter, a value
// format or an order the original never sent fails unless
// docs/differences.md lists it with its reason.
func TestCloud9RequestsMatchOriginal(t *testing.T) {
	ref, allowed := loadC9Reference(t)
	formats := map[string]*regexp.Regexp{"any": regexp.MustCompile(`(?s).*`)}
	for name, expr := range ref.Formats {
		formats[name] = regexp.MustCompile(expr)
	}
	p := newParityEnv(t, cloud9sim.Config{RecordRequests: true}, nil)
	seen := map[string]bool{}
	var problems []string
	check := func(op string, run func()) {
		t.Helper()
		opRef, ok := ref.Operations[op]
		require.True(t, ok, "no reference for %s", op)
		seen[op] = true
		p.sim.TakeRequests()
		run()
		// What the operation set off in the background (a slot cache
		// refresh) is its own: wait until Cloud9 hears nothing more.
		reqs := quietRequests(p.sim)
		if !regexp.MustCompile(opRef.Order).MatchString("") {
			require.NotEmpty(t, reqs, "%s sent Cloud9 nothing", op)
		}
		var names []string
		for _, r := range reqs {
			names = append(names, r.Procedure)
			params, ok := opRef.Procedures[r.Procedure]
			if !ok {
				if _, ok := allowed[[3]string{op, r.Procedure, "(procedure)"}]; !ok {
					problems = append(problems, fmt.Sprintf("%s: %s, which the original never sent", op, r.Procedure))
					continue
				}
			}
			for _, prm := range r.Params {
				format, known := params[prm.Name]
				if alt, ok := allowed[[3]string{op, r.Procedure, prm.Name}]; ok {
					format, known = alt, true
				}
				switch re := formats[format]; {
				case !known:
					problems = append(problems, fmt.Sprintf("%s: %s.%s=%q, a parameter the original never sent", op, r.Procedure, prm.Name, prm.Value))
				case re == nil:
					problems = append(problems, fmt.Sprintf("%s: %s.%s: unknown format %q", op, r.Procedure, prm.Name, format))
				case prm.Nil || !re.MatchString(prm.Value):
					problems = append(problems, fmt.Sprintf("%s: %s.%s=%q (nil %v) is not %s", op, r.Procedure, prm.Name, prm.Value, prm.Nil, format))
				}
			}
		}
		order := opRef.Order
		if alt, ok := allowed[[3]string{op, "*", "(order)"}]; ok {
			order = alt
		}
		if seq := strings.Join(names, " "); !regexp.MustCompile(order).MatchString(seq) {
			problems = append(problems, fmt.Sprintf("%s: the procedures %q, not the original's order %s", op, seq, order))
		}
		for _, r := range reqs {
			t.Logf("%s: %s %v", op, r.Procedure, r.Params)
		}
	}
	driveCallerOperations(t, p, check)
	for op := range ref.Operations {
		require.True(t, seen[op], "operation %s of the reference was not captured", op)
	}
	require.Empty(t, problems, "Cloud9 receives what the original never sent; fix it or list it in docs/differences.md (What Cloud9 receives):\n%s", strings.Join(problems, "\n"))
}

// quietRequests takes the recorded requests once none has come for
// 300 ms (at most 15 s).
func quietRequests(sim *cloud9sim.Sim) []cloud9sim.Request {
	deadline := time.Now().Add(15 * time.Second)
	n := -1
	for time.Now().Before(deadline) {
		if m := len(sim.Requests()); m != n {
			n = m
			time.Sleep(300 * time.Millisecond)
			continue
		}
		break
	}
	return sim.TakeRequests()
}

// driveCallerOperations runs every caller operation once, on the happy
// path, each inside check.
func driveCallerOperations(t *testing.T, p *parityEnv, check func(op string, run func())) {
	t.Helper()
	post := func(path string, body any, want ...int) map[string]any {
		t.Helper()
		st, out := p.post(t, path, body)
		if len(want) == 0 {
			want = []int{http.StatusOK}
		}
		require.Contains(t, want, st, "%s: %s", path, out)
		return obj(t, out)
	}
	var parent map[string]any
	check("createPatient", func() {
		parent = post("/createPatient", map[string]any{"patientFirstName": "Mary", "patientLastName": "Smith",
			"phoneNumber": "412-555-0100", "emailAddress": "mary@example.com", "birthDate": "04/02/1985", "gender": "F",
			"uui": "call-c9-1", "sessionId": "flowise-c9-1"})
	})
	guid, token := parent["patientGUID"].(string), parent["bookingAuthToken"].(string)
	var offered []any
	check("getApptSlots", func() {
		offered = post("/getApptSlots", map[string]any{"startDate": simDay(p.sim, 2), "endDate": simDay(p.sim, 4)})["slots"].([]any)
	})
	require.GreaterOrEqual(t, len(offered), 4)
	check("getGroupedApptSlots", func() { // beyond the cache's tiers: Cloud9 is asked
		post("/getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "startDate": simDay(p.sim, 50)})
	})
	check("cacheRefresh", func() {
		require.Eventually(t, func() bool { // 409 while a background refresh runs
			st, _ := opsCall(t, p, http.MethodPost, parityBase+"/cache/refresh", "", "", "")
			return st == http.StatusOK || st == http.StatusAccepted
		}, 30*time.Second, 200*time.Millisecond)
	})
	var appt string
	check("createAppt", func() {
		s := offered[0].(map[string]any)
		out := post("/createAppt", map[string]any{"patientGUID": guid, "bookingAuthToken": token, "startTime": s["startTime"],
			"scheduleViewGUID": s["scheduleViewGUID"], "scheduleColumnGUID": s["scheduleColumnGUID"],
			"appointmentTypeGUID": s["appointmentTypeGUID"], "minutes": 45, "uui": "call-c9-1",
			"note": "Child: Johnny Smith | DOB: 01/15/2015", "childName": "Johnny Smith"})
		require.Equal(t, true, out["success"], "%v", out)
		appt = out["appointmentGUID"].(string)
	})
	check("bookConsultation", func() {
		post("/bookConsultation", consultReq("consult-c9-1", offered[2:], "Ann", "Ben"))
	})
	check("confirmAppt", func() { post("/confirmAppt", map[string]any{"appointmentId": appt}) })
	check("getPatient", func() { post("/getPatient", map[string]any{"patientGUID": guid}) })
	check("getPatientAppts", func() { post("/getPatientAppts", map[string]any{"patientGUID": guid}) })
	check("getPatientByFilter/phone", func() {
		require.EqualValues(t, 1, post("/getPatientByFilter", map[string]any{"phoneNumber": "412-555-0100"})["count"])
	})
	check("getPatientByFilter/name", func() { post("/getPatientByFilter", map[string]any{"filter": "Smith, Mary"}) })
	check("getLocation", func() { post("/getLocation", map[string]any{}) })
	check("editInsurance", func() {
		post("/editInsurance", map[string]any{"patientGUID": guid, "insuranceProvider": "Aetna", "insuranceGroupId": "G-1",
			"insuranceMemberId": "M-1"})
	})
	check("cancelAppt", func() { post("/cancelAppt", map[string]any{"appointmentGUID": appt}) })
}
