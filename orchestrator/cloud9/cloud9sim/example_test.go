package cloud9sim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// A simulator on a free port, a patient, the first open slot, a booking,
// and the same slot booked again.
func Example() {
	monday7am := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	sim := cloud9sim.New(cloud9sim.Config{
		Now:      func() time.Time { return monday7am },
		TimeZone: time.UTC,
		Seed:     1,
	})
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer func() { _ = stop(context.Background()) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	call := func(proc, params string) string {
		body := `<GetDataRequest xmlns="http://schemas.practica.ws/cloud9/partners/">` +
			`<ClientID>c15aa02a-adc1-40ae-a2b5-d2e39173ae56</ClientID><UserName>u</UserName><Password>p</Password>` +
			`<Procedure>` + proc + `</Procedure><Parameters>` + params + `</Parameters></GetDataRequest>`
		resp, err := client.Post(url, "application/xml", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return string(raw)
	}
	between := func(s, open, close string) string {
		_, after, _ := strings.Cut(s, open)
		v, _, _ := strings.Cut(after, close)
		return v
	}

	added := between(call("SetPatient", `<patientFirstName>Ann</patientFirstName><patientLastName>Lee</patientLastName>`+
		`<providerGUID>`+cloud9sim.DefaultOrthodontistGUID+`</providerGUID><locationGUID>`+cloud9sim.DefaultLocationGUID+`</locationGUID>`+
		`<VendorUserName>flowgate</VendorUserName>`), "<Result>", "</Result>")
	fmt.Println(added)
	patient := strings.TrimPrefix(added, "Patient Added: ")

	slots := call("GetOnlineReservations", `<startDate>11/23/2026</startDate><endDate>11/23/2026</endDate><morning>1</morning><afternoon>0</afternoon>`)
	start := between(slots, "<StartTime>", "</StartTime>")
	fmt.Println("first slot:", start, between(slots, "<ScheduleColumnDescription>", "</ScheduleColumnDescription>"))

	book := `<PatientGUID>` + patient + `</PatientGUID><StartTime>` + start + `</StartTime>` +
		`<ScheduleViewGUID>` + cloud9sim.DefaultScheduleViewGUID + `</ScheduleViewGUID>` +
		`<ScheduleColumnGUID>` + cloud9sim.Chair8GUID + `</ScheduleColumnGUID>` +
		`<AppointmentTypeGUID>` + cloud9sim.DefaultAppointmentTypeGUID + `</AppointmentTypeGUID>` +
		`<Minutes>45</Minutes><VendorUserName>flowgate</VendorUserName>`
	fmt.Println(between(call("SetAppointment", book), "<Result>", "</Result>"))
	fmt.Println(call("SetAppointment", book))
	// Output:
	// Patient Added: 874BB8EC-31E0-452E-95FB-30C6EBC24F84
	// first slot: 11/23/2026 8:00:00 AM Chair 8
	// Appointment GUID Added: 22e563df-3c5c-4600-ad34-397099f98e92
	// <?xml version="1.0" encoding="utf-8"?><GetDataResponse xmlns="http://schemas.practica.ws/cloud9/partners/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><ResponseStatus>Success</ResponseStatus><Records><Record><Result>Error: This appointment cannot be scheduled in the specified time slot.</Result></Record></Records></GetDataResponse>
}
