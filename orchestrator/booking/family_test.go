package booking_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/booking/familytest"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func TestFamilyConfigValidated(t *testing.T) {
	t.Parallel()
	c9 := familytest.New(t, cloud9sim.Config{})
	_, err := booking.NewFamily(booking.FamilyDeps{}, booking.FamilyConfig{})
	require.Error(t, err, "Cloud9 is required")
	_, err = booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client}, booking.FamilyConfig{LocationGUID: "x"})
	require.Error(t, err)
	_, err = booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client}, booking.FamilyConfig{WriteWait: -time.Second})
	require.Error(t, err)
	f, err := booking.NewFamily(booking.FamilyDeps{Cloud9: c9.Client}, booking.FamilyConfig{Logger: bt.Discard()})
	require.NoError(t, err)
	// Optional deps missing: the endpoint answers its failure shape, 500.
	a := f.GetPatientByFilter(ctx, contracts.GetPatientByFilterRequest{PhoneNumber: "4125550100"})
	require.True(t, a.Failed)
	a = f.OperationStatus(ctx, "op-1-abc")
	require.True(t, a.Failed)
}

func TestInsuranceComment(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 20, 10, 0, 0, 0, time.UTC)
	require.Equal(t, "Insurance Information (updated 01/20/2026)\nProvider: Aetna\nGroup ID: G123\nMember ID: 456",
		booking.InsuranceComment(contracts.EditInsuranceRequest{InsuranceProvider: " Aetna ", InsuranceGroupID: "G123",
			InsuranceMemberID: "456"}, at))
	require.Equal(t, "Insurance Information (updated 01/20/2026)\nMember ID: 456",
		booking.InsuranceComment(contracts.EditInsuranceRequest{InsuranceMemberID: "456"}, at))
}
