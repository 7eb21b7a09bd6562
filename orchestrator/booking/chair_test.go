package booking_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// createAppt with a chair that is not one of the practice's configured
// chairs books the default chair, as the original booked Chair 8 whatever
// was sent (issue 43.6): a stale or invented GUID never reaches Cloud9.
func TestCreateApptUnknownChairFallsBackToTheDefault(t *testing.T) {
	t.Parallel()
	other := bt.GUID('E', 7) // another chair of the practice, configured
	invented := bt.GUID('E', 9)
	for _, c := range []struct {
		name, sent, booked string
	}{
		{"the default chair", bt.Column, bt.Column},
		{"another configured chair", other, other},
		{"an unknown chair", invented, bt.Column},
		{"none", "", bt.Column},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := bt.NewEnv()
			s := e.Service(t, func(cfg *booking.Config) {
				cfg.DefaultScheduleColumnGUID, cfg.Chairs = bt.Column, []string{bt.Column, other}
			})
			req := request(e)
			req.ScheduleColumnGUID = c.sent
			body[contracts.ApptBookedResponse](t, s.CreateAppt(ctx, req))
			calls := e.Cloud9.Calls(cloud9.ProcSetAppointment)
			require.Len(t, calls, 1)
			require.Equal(t, c.booked, calls[0].Args.(cloud9.AppointmentInput).ScheduleColumnGUID)
		})
	}
	t.Run("batch child", func(t *testing.T) {
		e := bt.NewEnv()
		s := e.Service(t, func(cfg *booking.Config) {
			cfg.DefaultScheduleColumnGUID, cfg.Chairs = bt.Column, []string{bt.Column}
		})
		req := contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient),
			Children: []contracts.BookingChild{{ChildName: "A", StartTime: start, ScheduleColumnGUID: invented}}}
		r := body[contracts.ApptBatchResponse](t, s.CreateAppt(ctx, req))
		require.True(t, r.Results[0].Success)
		require.Equal(t, bt.Column, e.Cloud9.Calls(cloud9.ProcSetAppointment)[0].Args.(cloud9.AppointmentInput).ScheduleColumnGUID)
	})
	t.Run("every chair configured (CLOUD9_SLOT_COLUMNS=all): honoured", func(t *testing.T) {
		e := bt.NewEnv()
		req := request(e)
		req.ScheduleColumnGUID = invented
		body[contracts.ApptBookedResponse](t, e.Service(t).CreateAppt(ctx, req))
		require.Equal(t, invented, e.Cloud9.Calls(cloud9.ProcSetAppointment)[0].Args.(cloud9.AppointmentInput).ScheduleColumnGUID)
	})
}
