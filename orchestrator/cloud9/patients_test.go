package cloud9_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// GetPortalPatientLookup and GetPatientList against the simulator: the
// parameters as Cloud9 spells them, empty answers valid, bad input refused
// before anything is sent.
func TestPatientLookups(t *testing.T) {
	t.Parallel()
	sim := cloud9sim.New(cloud9sim.Config{Seed: 1, WriteLimit: cloud9sim.Unlimited})
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = stop(context.Background()) }()
	c, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "c", Username: "u", Password: "p", VendorUsername: "flowgate"})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	loc := sim.Config().Location.GUID
	for _, n := range [][2]string{{"Ann", "Lee"}, {"Andy", "Lee"}, {"Bob", "Kim"}} {
		_, _, err := c.SetPatient(ctx, cloud9.PatientInput{FirstName: n[0], LastName: n[1],
			ProviderGUID: cloud9sim.DefaultOrthodontistGUID, LocationGUID: loc})
		require.NoError(t, err)
	}

	recs, err := c.GetPortalPatientLookup(ctx, cloud9.PatientLookup{Filter: "Lee, An", LookupByPatient: true, PageSize: 25})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	recs, err = c.GetPortalPatientLookup(ctx, cloud9.PatientLookup{Filter: "Nobody"})
	require.NoError(t, err)
	require.Empty(t, recs)
	_, err = c.GetPortalPatientLookup(ctx, cloud9.PatientLookup{Filter: " "})
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
	_, err = c.GetPortalPatientLookup(ctx, cloud9.PatientLookup{Filter: "Lee", PageSize: 5000})
	require.ErrorIs(t, err, cloud9.ErrInvalidInput)
	require.Equal(t, 2, sim.Calls(cloud9.ProcGetPortalPatientLookup), "refused lookups are not sent")

	list, err := c.GetPatientList(ctx, []string{loc})
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, "Ann", list[0].Get("PatientFirstName"))
	list, err = c.GetPatientList(ctx, []string{"0F0F0F0F-1111-4222-8333-444444444444"})
	require.NoError(t, err)
	require.Empty(t, list)
}
