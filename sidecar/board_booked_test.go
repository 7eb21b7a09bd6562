package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// The board's record of a createAppt booking has an id anyone can compute
// from the public timeslots (a digest of location, start and chair): the
// public DELETE /v1/appointments/{id} must not remove it — a visitor
// could otherwise unmark every IVA booking on the board. It answers as no
// appointment does; the record stays until cancelAppt gives the slot back.
func TestIVABookingRecordIsNotCancelledByTheWeb(t *testing.T) {
	p := newParityEnv(t, cloud9sim.Config{}, map[string]string{"MONITORING_USER": opsUser, "MONITORING_PASSWORD": opsPass})
	bookOneSlot(t, p) // createPatient → getApptSlots → createAppt

	ctx := context.Background()
	var id string
	require.Eventually(t, func() bool { // recorded just after createAppt answers
		ids, err := p.db.Client.HKeys(ctx, "{availability}:appointments").Result()
		for _, k := range ids {
			if strings.HasPrefix(k, ivaAppointmentPrefix) {
				id = k
			}
		}
		return err == nil && id != ""
	}, 10*time.Second, 20*time.Millisecond, "the createAppt booking's board record")

	root := strings.TrimSuffix(p.base, parityBase)
	del, err := http.NewRequest(http.MethodDelete, root+"/v1/appointments/"+id, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an anonymous visitor cancelled an IVA booking's record")
	still, err := p.db.Client.HExists(ctx, "{availability}:appointments", id).Result()
	require.NoError(t, err)
	require.True(t, still, "the record is gone")
}
