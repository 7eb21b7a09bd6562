package shadow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/shadow"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestShadowReportGolden records comparisons through a Recorder on a real
// Redis with a fixed clock and pins GET /api/shadow/report's shape and
// verdicts: createAppt ready (3 calls, min 3, window clean), getApptSlots
// not_ready (a missing path in the window), createPatient collecting,
// the booking group not_ready, redisSet never shadowed.
func TestShadowReportGolden(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	rec := shadow.NewRecorder(db.Client, shadow.Config{ReadyMinCalls: 3, ReadyWindow: 4, Now: func() time.Time { return now }})
	ctx := context.Background()
	ok := `{"success":true,"appointmentGUID":"A","llm_guidance":{"action_required":"confirm_booking","voice_response":"You are booked."}}`
	for i := range 3 {
		fg := ok
		if i == 2 {
			fg = `{"success":true,"appointmentGUID":"B","extra":1,"llm_guidance":{"action_required":"confirm_booking","voice_response":"You are booked."}}`
		}
		r := shadow.Compare("createAppt", now, shadow.Answer{Status: 200, Body: []byte(ok), Latency: time.Duration(10+i) * time.Millisecond},
			shadow.Answer{Status: 200, Body: []byte(fg), Latency: time.Duration(4+i) * time.Millisecond})
		require.NoError(t, rec.Record(ctx, r, 0))
	}
	slots := `{"success":true,"slots":[{"startTime":"12/01/2026 9:00:00 AM","scheduleColumnGUID":"c"}],"count":1}`
	r := shadow.Compare("getApptSlots", now, shadow.Answer{Status: 200, Body: []byte(slots), Latency: 30 * time.Millisecond},
		shadow.Answer{Status: 200, Body: []byte(`{"success":true,"slots":[],"count":"0"}`), Latency: 8 * time.Millisecond})
	require.NoError(t, rec.Record(ctx, r, 2))
	r = shadow.Compare("createPatient", now, shadow.Answer{Status: 200, Body: []byte(`{"success":true,"patientGUID":"P"}`)},
		shadow.Answer{Status: 200, Body: []byte(`{"success":true,"patientGUID":"00000000-5ad0-4000-8000-000000000001"}`)})
	require.NoError(t, rec.Record(ctx, r, 0))
	t.Cleanup(func() {
		for _, e := range []string{"createAppt", "getApptSlots", "createPatient"} {
			db.Client.Del(context.Background(), "flowgate:shadow:{"+e+"}:n", "flowgate:shadow:{"+e+"}:recent")
		}
	})

	rep, err := rec.Report(ctx)
	require.NoError(t, err)
	views := map[string]contracts.ShadowEndpointView{}
	for _, v := range rep.Endpoints {
		views[v.Endpoint] = v
	}
	require.Equal(t, contracts.ShadowReady, views["createAppt"].Verdict)
	require.Equal(t, contracts.ShadowNotReady, views["getApptSlots"].Verdict)
	require.Equal(t, contracts.ShadowCollecting, views["createPatient"].Verdict)
	require.Equal(t, contracts.ShadowNoTraffic, views["getPatient"].Verdict)
	require.Equal(t, contracts.ShadowNever, views["redisSet"].Verdict)
	require.EqualValues(t, 2, views["getApptSlots"].Dropped)
	require.Equal(t, contracts.ShadowNotReady, rep.Groups[0].Verdict)
	// The golden holds the endpoints that saw traffic, the group and the settings.
	rep.Endpoints = []contracts.ShadowEndpointView{views["createAppt"], views["getApptSlots"], views["createPatient"], views["getPatient"], views["redisSet"]}
	contractstest.Golden(t, "shadow_report", rep)
}

func TestShadowGroupVerdict(t *testing.T) {
	t.Parallel()
	for want, members := range map[string][]string{
		contracts.ShadowReady:      {contracts.ShadowReady, contracts.ShadowReady},
		contracts.ShadowNotReady:   {contracts.ShadowReady, contracts.ShadowNotReady, contracts.ShadowNoTraffic},
		contracts.ShadowCollecting: {contracts.ShadowReady, contracts.ShadowNoTraffic},
		contracts.ShadowNoTraffic:  {contracts.ShadowNoTraffic, contracts.ShadowNoTraffic},
	} {
		require.Equal(t, want, shadow.GroupVerdict(members), "%v", members)
	}
}
