package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// The running binary reads Cloud9 for a phone search only: nothing at
// start or while idle; one search is one GetPatientList (no LocGUIDs:
// every location) and a GetPatientInformation per listed patient; the
// next search reads the list only.
func TestPhoneSearchReadsOnlyForCallers(t *testing.T) {
	t.Parallel()
	p := newParityEnv(t, cloud9sim.Config{}, nil)
	st, body := p.call(t, http.MethodPost, "/createPatient", map[string]any{"patientFirstName": "Mary", "patientLastName": "Smith",
		"phoneNumber": "412-555-0100", "uui": "call-phone-1"})
	require.Equal(t, http.StatusOK, st, "%s", body)
	reads := func() [2]int {
		return [2]int{p.sim.Calls(cloud9.ProcGetPatientList), p.sim.Calls(cloud9.ProcGetPatientInformation)}
	}
	require.Never(t, func() bool { return reads() != [2]int{0, 0} }, 300*time.Millisecond, 10*time.Millisecond, "a read while idle")
	require.Equal(t, [2]int{0, 0}, reads(), "no read at start or while idle")

	st, body = p.call(t, http.MethodPost, "/getPatientByFilter", map[string]any{"phoneNumber": "(412) 555-0100"})
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.Contains(t, string(body), `"count":1`)
	require.Equal(t, [2]int{1, 1}, reads())
	st, _ = p.call(t, http.MethodPost, "/getPatientByFilter", map[string]any{"phoneNumber": "4125550100"})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, [2]int{2, 1}, reads(), "the record is kept: the next search lists only")
	require.Never(t, func() bool { return reads() != [2]int{2, 1} }, 300*time.Millisecond, 10*time.Millisecond, "a read after the callers")
	require.Equal(t, [2]int{2, 1}, reads(), "nothing after the callers")
}
