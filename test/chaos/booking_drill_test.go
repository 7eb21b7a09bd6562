//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
)

// Budgets of the booking drill: the settings' defaults, read from the
// packages that own them.
// BOOKING_SYNC_BUDGET is how long createAppt may take before it answers;
// the other booking endpoints have no setting of their own (yet): a caller
// on the phone waits for them as for createAppt, so they get the same
// budget. The queue API answers within QUEUE_REQUEST_TIMEOUT and /readyz
// within 1 s. Each is allowed budgetSlack more.
const (
	bookingSyncBudget   = booking.DefaultSyncBudget      // BOOKING_SYNC_BUDGET
	queueRequestTimeout = taskhttp.DefaultRequestTimeout // QUEUE_REQUEST_TIMEOUT
	readyzBudget        = time.Second
	budgetSlack         = 500 * time.Millisecond
)

const bookingBase = "/chord/ortho-prd"

// bookingCase is one request sent while Redis is paused, with its budget
// and the check of its answer (docs/reference/README.md, principles: reservations fail open, auth
// and signatures fail closed).
type bookingCase struct {
	name   string
	budget time.Duration
	send   func() answer
	check  func(a answer) string // "" when right
}

// TestDrillBookingRedisPaused: with Redis stopped (SIGSTOP), every booking
// endpoint, the signed queue API and /readyz answer within their budget
// (+0.5 s), concurrently. createAppt with a valid token books or answers a
// seed error but never SLOT_RESERVED (the reservation check fails open);
// without a token or with a forged one it is refused (auth fails closed);
// a signed queue request is 503 (the replay check fails closed); /readyz
// is 503 with reason codes only.
func TestDrillBookingRedisPaused(t *testing.T) {
	srv := rediscluster.StartServer(t)
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{"LOG_LEVEL": "info"}))
	c := newClient(p.Base, drillPause(t)+30*time.Second, nil)

	// Before the pause: a patient with its token, and slots with tokens.
	var patient contracts.PatientCreatedResponse
	mustBooking(t, c, "createPatient", map[string]any{"patientFirstName": "Ann", "patientLastName": "Drill",
		"phoneNumber": "4125550100", "birthDate": "01/02/1985", "uui": "drill-call-1"}, &patient)
	var slots contracts.GetApptSlotsResponse
	mustBooking(t, c, "getApptSlots", map[string]any{"uui": "drill-call-1", "sessionId": "drill-call-1"}, &slots)
	if !patient.Success || patient.BookingAuthToken == "" || len(slots.Slots) < 4 {
		t.Fatalf("setup: patient %+v, %d slots", patient, len(slots.Slots))
	}

	cases := bookingCases(c, patient, slots.Slots)
	// Redis must stay down past the longest budget, or a late answer would
	// only show the pause's length.
	pauseFor := max(drillPause(t), bookingSyncBudget+5*time.Second)
	resume := srv.Pause()
	began := time.Now()
	answers := make([]answer, len(cases))
	var wg sync.WaitGroup
	for i, bc := range cases {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = bc.send() }()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select { // keep Redis paused until every answer is in, at most pauseFor
	case <-finished:
	case <-time.After(pauseFor):
	}
	resume()
	<-finished
	held := time.Since(began)

	over, wrong := 0, 0
	var worst time.Duration
	for i, bc := range cases {
		a := answers[i]
		worst = max(worst, a.Took)
		verdict := "ok"
		if a.Took > bc.budget+budgetSlack {
			over++
			verdict = fmt.Sprintf("OVER BUDGET %s", bc.budget+budgetSlack)
			t.Errorf("%s: answered after %s, budget %s + %s: %s", bc.name, a.Took.Round(time.Millisecond), bc.budget, budgetSlack, a)
		}
		if why := bc.check(a); why != "" {
			wrong++
			verdict += "; WRONG: " + why
			t.Errorf("%s: %s: %s", bc.name, why, a)
		}
		t.Logf("%-32s %4d in %8s (budget %s) %s", bc.name, a.Status, a.Took.Round(time.Millisecond), bc.budget, verdict)
	}
	failOpen := len(p.LogLines("fail open"))
	summary(t, "booking-redis-paused", "injected: Redis SIGSTOP for %s (held until every answer was in, at most %s) | %d concurrent requests: over budget %d, wrong answer %d, slowest %s | fail-open log lines %d",
		held.Round(time.Millisecond), pauseFor, len(cases), over, wrong, ms(worst), failOpen)
	if up := waitReady(t, p, http.StatusOK, 30*time.Second); up > 0 {
		t.Logf("ready again %s after SIGCONT", up.Round(time.Millisecond))
	}
}

// bookingCases are the requests of the booking drill.
func bookingCases(c *client, patient contracts.PatientCreatedResponse, slots []contracts.ApptSlot) []bookingCase {
	post := func(endpoint string, body any) func() answer {
		raw, _ := json.Marshal(body)
		return func() answer { return c.send("POST", bookingBase+"/"+endpoint, raw, nil, false) }
	}
	appt := func(token string, s contracts.ApptSlot, uui string) map[string]any {
		m := map[string]any{"patientGUID": patient.PatientGUID, "bookingToken": s.BookingToken, "childName": "Tom",
			"note": "Child: Tom | DOB: 01/15/2015", "uui": uui, "sessionId": uui}
		if token != "" {
			m["bookingAuthToken"] = token
		}
		return m
	}
	forged := patient.BookingAuthToken[:len(patient.BookingAuthToken)-4] + "AAAA"
	return []bookingCase{
		{"createAppt valid token", bookingSyncBudget, post("createAppt", appt(patient.BookingAuthToken, slots[0], "drill-call-1")), reservationFailsOpen},
		{"createAppt no token (session)", bookingSyncBudget, post("createAppt", appt("", slots[1], "drill-call-9")), authRefused(contracts.BookingAuthMissing)},
		{"createAppt forged token", bookingSyncBudget, post("createAppt", appt(forged, slots[2], "drill-call-1")), authRefused(contracts.BookingAuthSignatureInvalid)},
		{"createPatient", bookingSyncBudget, post("createPatient", map[string]any{"patientFirstName": "Bea", "patientLastName": "Drill",
			"phoneNumber": "4125550101", "birthDate": "03/04/1986", "uui": "drill-call-2"}), seedAnswer},
		{"getApptSlots", bookingSyncBudget, post("getApptSlots", map[string]any{"uui": "drill-call-3", "sessionId": "drill-call-3"}), seedAnswer},
		{"getGroupedApptSlots", bookingSyncBudget, post("getGroupedApptSlots", map[string]any{"numberOfPatients": 2, "timeWindowMinutes": 40,
			"uui": "drill-call-4", "sessionId": "drill-call-4"}), seedAnswer},
		{"queue-status", bookingSyncBudget, func() answer { // the whole queue: the monitoring credentials read Redis
			return c.send("GET", bookingBase+"/queue-status?page=1&pageSize=10", nil, monitorAuth(drillMonitorUser, drillMonitorPass), false)
		}, seedAnswer},
		{"queue-status by sessionId", bookingSyncBudget, func() answer {
			return c.send("GET", bookingBase+"/queue-status?sessionId=drill-call-1", nil, nil, false)
		}, seedAnswer},
		{"signed GET /queue/stats", queueRequestTimeout, func() answer { return c.signed("GET", "/queue/stats", nil) }, closed503},
		{"/readyz", readyzBudget, func() answer { return c.send("GET", "/readyz", nil, nil, false) }, readyz503},
		{"/healthz", readyzBudget, func() answer { return c.send("GET", "/healthz", nil, nil, false) }, status(http.StatusOK)},
	}
}

// mustBooking posts a booking endpoint with Redis up and decodes its answer.
func mustBooking(t *testing.T, c *client, endpoint string, body, out any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	a := c.send("POST", bookingBase+"/"+endpoint, raw, nil, false)
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, out) != nil {
		t.Fatalf("%s: %s", endpoint, a)
	}
}

// debugOf is an answer's _debug.error_type and success.
func debugOf(a answer) (errType string, success bool, ok bool) {
	var v struct {
		Success bool `json:"success"`
		Debug   struct {
			ErrorType string `json:"error_type"`
		} `json:"_debug"`
	}
	if json.Unmarshal(a.Body, &v) != nil {
		return "", false, false
	}
	return v.Debug.ErrorType, v.Success, true
}

// seedAnswer: the Node-RED endpoints answer 200 JSON for every outcome.
func seedAnswer(a answer) string {
	if a.Err != nil || a.Status != http.StatusOK {
		return "want the seed's 200 answer"
	}
	if _, _, ok := debugOf(a); !ok {
		return "answer is not JSON"
	}
	return leak(a)
}

// reservationFailsOpen: the slot hold cannot be checked, so it must not be
// refused as held (SLOT_RESERVED); any other seed answer is right.
func reservationFailsOpen(a answer) string {
	if why := seedAnswer(a); why != "" {
		return why
	}
	et, _, _ := debugOf(a)
	if et == contracts.BookingErrSlotReserved || strings.HasPrefix(et, "BOOKING_AUTH") {
		return "refused as " + et + ": the reservation check must fail open and a valid token needs no Redis"
	}
	return ""
}

// authRefused: auth fails closed — refused with code, never booked.
func authRefused(code string) func(answer) string {
	return func(a answer) string {
		if why := seedAnswer(a); why != "" {
			return why
		}
		et, success, _ := debugOf(a)
		if success || et != code {
			return fmt.Sprintf("want a refusal %s (auth fails closed), got success=%v error_type=%q", code, success, et)
		}
		return ""
	}
}

// closed503: a signed request cannot be checked for replay: 503.
func closed503(a answer) string {
	if a.Status != http.StatusServiceUnavailable {
		return "want 503 (the signature's replay check fails closed)"
	}
	return leak(a)
}

func readyz503(a answer) string {
	if a.Status != http.StatusServiceUnavailable {
		return "want 503 not ready"
	}
	return leak(a)
}

func status(want int) func(answer) string {
	return func(a answer) string {
		if a.Status != want {
			return fmt.Sprintf("want %d", want)
		}
		return ""
	}
}

// leak reports internal text in an answer.
func leak(a answer) string {
	for kind, re := range internalText {
		if re.Match(a.Body) {
			return "internal text (" + kind + ") in the answer"
		}
	}
	return ""
}
