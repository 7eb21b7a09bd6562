package cloud9sim_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func TestDropAfterCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	b.sim.SetFaults(cloud9sim.Faults{DropAfterCommit: map[string]int{"SetAppointment": 1}})

	body := requestXML("SetAppointment", "PatientGUID", p, "StartTime", "11/24/2026 8:00:00 AM",
		"ScheduleViewGUID", cloud9sim.DefaultScheduleViewGUID, "ScheduleColumnGUID", cloud9sim.Chair8GUID,
		"AppointmentTypeGUID", cloud9sim.DefaultAppointmentTypeGUID, "Minutes", "45", "VendorUserName", "flowgate")
	resp, err := b.client.Post(b.url, "application/xml", strings.NewReader(body))
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the connection closes without an answer")
	require.Regexp(t, `EOF|connection reset`, err.Error())

	// The appointment was committed: a client reading before re-sending
	// finds it, and re-sending blindly would be refused as a double booking.
	as := b.sim.Appointments()
	require.Len(t, as, 1)
	list := b.call(t, "GetAppointmentListByPatient", "patGUID", p).Records
	require.Len(t, list, 1)
	require.Equal(t, as[0].GUID, list[0]["AppointmentGUID"])
	require.Equal(t, "11/24/2026 8:00:00 AM", list[0]["AppointmentDateTime"])
	require.Equal(t, cloud9sim.ResultSlotTaken, b.book(t, p, "11/24/2026 8:00:00 AM", cloud9sim.Chair8GUID).result(t))
	require.Empty(t, b.sim.Faults().DropAfterCommit, "the one drop is used up")

	// Other procedures were never affected, and the next booking answers.
	b.bookOK(t, p, "11/24/2026 8:45:00 AM", cloud9sim.Chair8GUID)
	require.Equal(t, 3, b.sim.Calls("SetAppointment"))
}

func TestLatency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lat = 600 * time.Millisecond // well above a loaded machine's round trip (175 ms seen under -race beside other suites)
	b.sim.SetFaults(cloud9sim.Faults{Latency: lat, Procedures: []string{"GetChairSchedules"}})
	start := time.Now()
	require.Equal(t, "Success", b.call(t, "GetChairSchedules").Status)
	require.GreaterOrEqual(t, time.Since(start), lat)

	start = time.Now()
	b.call(t, "GetLocations")
	require.Less(t, time.Since(start), lat, "scoped to GetChairSchedules")
}

func TestLatencyPastClientTimeoutStillCommits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	b.sim.SetFaults(cloud9sim.Faults{Latency: 2 * time.Second})
	impatient := &http.Client{Transport: &http.Transport{}, Timeout: 100 * time.Millisecond}
	defer impatient.CloseIdleConnections()
	_, err := impatient.Post(b.url, "application/xml", strings.NewReader(requestXML("SetAppointment",
		"PatientGUID", p, "StartTime", "11/24/2026 8:00:00 AM", "ScheduleViewGUID", cloud9sim.DefaultScheduleViewGUID,
		"ScheduleColumnGUID", cloud9sim.Chair9GUID, "AppointmentTypeGUID", cloud9sim.DefaultAppointmentTypeGUID,
		"Minutes", "45", "VendorUserName", "flowgate")))
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(b.sim.Appointments()) == 1 }, time.Second, 10*time.Millisecond,
		"the call ran before the answer was delayed")
}

func TestErrorRate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	b.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1})
	b.book(t, p, "11/24/2026 8:00 AM", cloud9sim.Chair8GUID).requireError(t, cloud9sim.CodeUnknown, "An unknown error occurred.")
	b.call(t, "GetLocations").requireError(t, 0, "An unknown error occurred.")
	require.Empty(t, b.sim.Appointments(), "nothing runs")

	// A fractional rate is reproducible for a seed and roughly that rate.
	outcomes := func(seed int64) string {
		s := setup(t, func(c *cloud9sim.Config) { c.Seed = seed })
		s.sim.SetFaults(cloud9sim.Faults{ErrorRate: 0.5})
		var out strings.Builder
		for i := 0; i < 60; i++ {
			if s.call(t, "GetLocations").Status == "Error" {
				out.WriteByte('E')
			} else {
				out.WriteByte('.')
			}
		}
		return out.String()
	}
	a := outcomes(7)
	require.Equal(t, a, outcomes(7))
	require.NotEqual(t, a, outcomes(8))
	errs := strings.Count(a, "E")
	require.True(t, errs > 10 && errs < 50, "%d errors of 60: %s", errs, a)
}

func TestEmptyRecordsRate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.sim.SetFaults(cloud9sim.Faults{EmptyRecordsRate: 1})
	a := b.call(t, "GetOnlineReservations", "startDate", "11/24/2026", "endDate", "11/24/2026")
	require.Equal(t, "Success", a.Status)
	require.Empty(t, a.Records)
	_, raw := b.post(t, requestXML("GetLocations"))
	require.Contains(t, string(raw), "<ResponseStatus>Success</ResponseStatus><Records />")
	// Writes are not reads.
	b.createPatient(t, "Ann", "Lee")
	b.sim.SetFaults(cloud9sim.Faults{})
	require.Len(t, b.call(t, "GetLocations").Records, 1)
}
