package bookinghttp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// cancelAppt gives back the slot Cloud9's appointment record names, not the
// one the request describes; without a confirmation from Cloud9 it
// releases and restores nothing. Fails with the request's fields trusted.
func TestCancelTrustsCloud9NotTheRequest(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	slot := e.c9.Slot(t, 3)
	appt := e.c9.Appointment(t, mary, slot)
	other := e.c9.Slot(t, 4) // someone else's held slot, named by the request
	zone := e.c9.Sim.Config().TimeZone
	hold := func(startTime, typ, col string) string {
		start, err := cloud9.ParseTime(startTime)
		require.NoError(t, err)
		k := holdKey(typ, col, time.Date(start.Year(), start.Month(), start.Day(), start.Hour(), start.Minute(), 0, 0, zone))
		e.holds.holds[k] = true
		return k
	}
	mine := hold(slot.StartTime, slot.AppointmentTypeGUID, slot.ScheduleColumnGUID)
	theirs := hold(other.StartTime, other.AppointmentTypeGUID, other.ScheduleColumnGUID)
	e.holds.cooldowns[strings.ToLower(appt)] = true

	// Not confirmable (no patientGUID): the request's slot is left alone.
	r := e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt, "startTime": other.StartTime,
		"scheduleViewGUID": other.ScheduleViewGUID, "scheduleColumnGUID": other.ScheduleColumnGUID,
		"appointmentTypeGUID": other.AppointmentTypeGUID})
	var got contracts.CancelResponse
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.False(t, got.SlotReleased)
	require.False(t, got.CacheRevalidated)
	require.True(t, e.holds.holds[theirs], "a hold named only by the request is not released")
	require.Empty(t, e.cache.restored)

	// Confirmable: Cloud9's record wins over the request's fields.
	slot5 := e.c9.Slot(t, 5)
	appt2 := e.c9.Appointment(t, mary, slot5)
	mine5 := hold(slot5.StartTime, slot5.AppointmentTypeGUID, slot5.ScheduleColumnGUID)
	r = e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt2, "patientGUID": mary, "startTime": other.StartTime,
		"scheduleViewGUID": other.ScheduleViewGUID, "scheduleColumnGUID": other.ScheduleColumnGUID,
		"appointmentTypeGUID": other.AppointmentTypeGUID})
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.True(t, e.holds.holds[theirs], "the request's slot is not released")
	require.True(t, got.SlotReleased)
	require.False(t, e.holds.holds[mine5], "Cloud9's slot is released")
	require.Len(t, e.cache.restored, 1)
	require.True(t, cloud9.SameStart(slot5.StartTime, e.cache.restored[0].StartTime), "the restored slot is Cloud9's, not the request's")
	require.Equal(t, slot5.ScheduleColumnGUID, e.cache.restored[0].ScheduleColumnGUID)
	require.True(t, e.holds.holds[mine], "the first appointment's slot stays held (it was never confirmed)")
}
