package cloud9sim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// GetPatientList answers the location's patients in creation order, without
// phone or e-mail; another location has none; a malformed LocGUIDs is
// error 5.
func TestGetPatientList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.createPatient(t, "Ann", "Lee")
	second := b.createPatient(t, "Bob", "Kim")

	a := b.call(t, "GetPatientList", "LocGUIDs", cloud9sim.DefaultLocationGUID)
	require.Len(t, a.Records, 2)
	require.Equal(t, first, a.Records[0]["PatientGUID"])
	require.Equal(t, second, a.Records[1]["PatientGUID"])
	require.Equal(t, "Lee, Ann", a.Records[0]["PatientFullName"])
	require.NotContains(t, a.Records[0], "PatientPhone")

	require.Len(t, b.call(t, "GetPatientList").Records, 2, "no LocGUIDs: every location")
	require.Empty(t, b.call(t, "GetPatientList", "LocGUIDs", "0F0F0F0F-1111-4222-8333-444444444444").Records)
	b.call(t, "GetPatientList", "LocGUIDs", "not-a-guid").requireError(t, 5, "Invalid GUID format for parameter: 'LocGUIDs'")
}

// With RecordRequests the simulator keeps every request as sent:
// procedure, parameters in document order, even one it refuses;
// TakeRequests forgets them; without it nothing is kept.
func TestRecordRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *cloud9sim.Config) { c.RecordRequests = true })
	b.call(t, "GetPatientList", "LocGUIDs", cloud9sim.DefaultLocationGUID)
	b.call(t, "GetPatientInformation", "patguid", "not-a-guid", "patguid", "second")
	got := b.sim.TakeRequests()
	require.Len(t, got, 2)
	require.Equal(t, "GetPatientList", got[0].Procedure)
	require.Equal(t, []cloud9sim.Param{{Name: "LocGUIDs", Value: cloud9sim.DefaultLocationGUID}}, got[0].Params)
	require.Equal(t, []cloud9sim.Param{{Name: "patguid", Value: "not-a-guid"}, {Name: "patguid", Value: "second"}}, got[1].Params)
	p, ok := got[1].Get("patguid")
	require.True(t, ok)
	require.Equal(t, "not-a-guid", p.Value)
	require.Empty(t, b.sim.Requests())

	off := setup(t)
	off.call(t, "GetPatientList")
	require.Empty(t, off.sim.Requests())
}
