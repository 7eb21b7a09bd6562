package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

// bookingPost posts JSON to a booking endpoint and decodes the answer.
func bookingPost(t *testing.T, url string, body any, out any) time.Duration {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("POST %s: %d: %v", url, resp.StatusCode, err)
	}
	return took
}

// simURL is the embedded simulator's URL, from flowgate's start-up log.
func simURL(t *testing.T, p *proc) string {
	t.Helper()
	for _, line := range p.LogLines("CLOUD9 SANDBOX SIMULATOR") {
		var rec struct {
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.URL != "" {
			return rec.URL
		}
	}
	t.Fatal("no simulator URL in the logs")
	return ""
}

func percentile(d []time.Duration, p int) time.Duration {
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
	return d[len(d)*p/100]
}

// What flowgate adds to a booking when Cloud9 is not the bottleneck:
// createAppt through flowgate (session check, token check, reservation,
// limiter turn, SetAppointment, note, reservation confirm) against a bare
// SetAppointment to the same simulator, in the same run. Reproduce:
// go test -run TestLoadBookingOverhead -v ./test/
func TestLoadBookingOverhead(t *testing.T) {
	n := 200
	if raceEnabled {
		n = 40
	}
	db := redistest.New(t)
	p := startFlowgate(t, withSecrets(map[string]string{
		"REDIS_URL": db.URL(), "LOG_LEVEL": "warn",
		"CLOUD9_SIM_WRITE_LIMIT": "100000/s", "CLOUD9_WRITE_LIMIT": "100000/s", "CLOUD9_LIMIT_MARGIN": "0s",
	}))
	base := p.Base + "/chord/ortho-prd"
	var patient contracts.PatientCreatedResponse
	bookingPost(t, base+"/createPatient", map[string]any{"patientFirstName": "Load", "patientLastName": "Test",
		"phoneNumber": "4125550199", "birthDate": "01/02/1980", "uui": "load-1"}, &patient)
	if !patient.Success || patient.PatientGUID == "" {
		t.Fatalf("createPatient: %+v", patient)
	}
	// One search spans 31 days; how many slots it finds depends on the
	// day the test runs (weekends, the month's end: 300 on 2026-11-29), so
	// later windows are searched until there are 2n.
	var slots contracts.GetApptSlotsResponse
	seen := map[string]bool{}
	from := time.Now().AddDate(0, 0, 1)
	for w := 0; len(slots.Slots) < 2*n && w < 6; w++ {
		var page contracts.GetApptSlotsResponse
		bookingPost(t, base+"/getApptSlots", map[string]any{"sessionId": "load-1",
			"startDate": from.AddDate(0, 0, 31*w).Format("01/02/2006")}, &page)
		for _, s := range page.Slots {
			if k := s.StartTime + s.ScheduleColumnGUID; !seen[k] {
				seen[k] = true
				slots.Slots = append(slots.Slots, s)
			}
		}
	}
	if len(slots.Slots) < 2*n {
		t.Fatalf("only %d slots in six windows", len(slots.Slots))
	}

	// Baseline: SetAppointment straight to the simulator with flowgate's client.
	c9, err := cloud9.New(cloud9.Config{Endpoint: simURL(t, p), ClientID: "x", Username: "x", Password: "x", VendorUsername: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	defer c9.Close()
	direct := make([]time.Duration, 0, n)
	for _, s := range slots.Slots[n : 2*n] {
		start := time.Now()
		if _, _, err := c9.SetAppointment(context.Background(), cloud9.AppointmentInput{PatientGUID: patient.PatientGUID,
			StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
			AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: 45}); err != nil {
			t.Fatalf("direct SetAppointment: %v", err)
		}
		direct = append(direct, time.Since(start))
	}

	through := make([]time.Duration, 0, n)
	for i, s := range slots.Slots[:n] {
		var ans contracts.ApptBookedResponse
		took := bookingPost(t, base+"/createAppt", map[string]any{"patientGUID": patient.PatientGUID,
			"bookingAuthToken": patient.BookingAuthToken, "bookingToken": s.BookingToken,
			"childName": fmt.Sprintf("Child %d", i), "uui": "load-1", "sessionId": "load-1"}, &ans)
		if !ans.Success {
			t.Fatalf("createAppt %d: %s", i, strings.TrimSpace(ans.Message))
		}
		through = append(through, took)
	}
	dp50, dp99 := percentile(direct, 50), percentile(direct, 99)
	fp50, fp99 := percentile(through, 50), percentile(through, 99)
	t.Logf("bare SetAppointment to the simulator: p50 %s, p99 %s (n=%d)", dp50, dp99, n)
	t.Logf("createAppt through flowgate:          p50 %s, p99 %s (n=%d)", fp50, fp99, n)
	t.Logf("flowgate adds p50 %s per booking (%.1f× the bare call)", fp50-dp50, float64(fp50)/float64(dp50))
}
