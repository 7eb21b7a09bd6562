package cloud9sim_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/test/clocktest"
)

// BenchmarkOnlineReservations measures the handler answering four weeks
// and the whole 90-day horizon of slots (4 chairs).
func BenchmarkOnlineReservations(b *testing.B) {
	for _, c := range []struct{ name, end string }{{"4weeks", "12/20/2026"}, {"90days", "3/1/2027"}} {
		b.Run(c.name, func(b *testing.B) {
			clk := clocktest.New(t0)
			h := cloud9sim.New(cloud9sim.Config{Now: clk.Now, TimeZone: est}).Handler()
			body := requestXML("GetOnlineReservations", "startDate", "11/23/2026", "endDate", c.end)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/GetData.ashx", strings.NewReader(body)))
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

// BenchmarkSetAppointment measures a booking that is refused as taken
// (the state does not grow) after the checks a real one passes.
func BenchmarkSetAppointment(b *testing.B) {
	clk := clocktest.New(t0)
	sim := cloud9sim.New(cloud9sim.Config{Now: clk.Now, TimeZone: est, WriteLimit: cloud9sim.Unlimited})
	h := sim.Handler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(requestXML("SetPatient",
		"patientFirstName", "A", "patientLastName", "B", "providerGUID", cloud9sim.DefaultOrthodontistGUID,
		"locationGUID", cloud9sim.DefaultLocationGUID, "VendorUserName", "x"))))
	p := sim.Patients()[0].GUID
	body := requestXML("SetAppointment", "PatientGUID", p, "StartTime", "11/24/2026 8:00:00 AM",
		"ScheduleViewGUID", cloud9sim.DefaultScheduleViewGUID, "ScheduleColumnGUID", cloud9sim.Chair8GUID,
		"AppointmentTypeGUID", cloud9sim.DefaultAppointmentTypeGUID, "Minutes", "45", "VendorUserName", "x")
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	}
}
