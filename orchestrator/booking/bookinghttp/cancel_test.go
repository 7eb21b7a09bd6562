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
// one the request describes; without that record it releases no hold and
// restores the request's slot only as Cloud9 offers it open (revalidated),
// never on the request's word. Fails with the request's fields trusted.
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

	// Not confirmable (no patientGUID), naming a slot booked in Cloud9:
	// nothing released, nothing restored.
	taken := e.c9.Slot(t, 20)
	e.c9.Appointment(t, e.c9.Patient(t, "Tom", "Other", "412-555-0177"), taken)
	r := e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt, "startTime": taken.StartTime,
		"scheduleViewGUID": taken.ScheduleViewGUID, "scheduleColumnGUID": taken.ScheduleColumnGUID, "minutes": 45})
	var got contracts.CancelResponse
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.False(t, got.SlotReleased)
	require.False(t, got.CacheRevalidated, "a slot Cloud9 does not offer is not restored")
	require.Empty(t, e.cache.restored)

	// Naming another open slot someone holds: its hold is not released; the
	// slot is restored as Cloud9 offers it (open there), hold filters apply.
	appt1 := e.c9.Appointment(t, mary, e.c9.Slot(t, 30))
	r = e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt1, "startTime": other.StartTime,
		"scheduleViewGUID": other.ScheduleViewGUID, "scheduleColumnGUID": other.ScheduleColumnGUID,
		"appointmentTypeGUID": other.AppointmentTypeGUID})
	got = contracts.CancelResponse{}
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.False(t, got.SlotReleased)
	require.True(t, e.holds.holds[theirs], "a hold named only by the request is not released")
	require.True(t, got.CacheRevalidated)
	require.Len(t, e.cache.restored, 1)
	require.Equal(t, other.StartTime, e.cache.restored[0].StartTime, "Cloud9's record of the open slot")
	restored := len(e.cache.restored)

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
	require.Len(t, e.cache.restored, restored+1)
	last := e.cache.restored[restored]
	require.True(t, cloud9.SameStart(slot5.StartTime, last.StartTime), "the restored slot is Cloud9's, not the request's")
	require.Equal(t, slot5.ScheduleColumnGUID, last.ScheduleColumnGUID)
	require.True(t, e.holds.holds[mine], "the first appointment's slot stays held (it was never confirmed)")
}

// cancelAppt carrying startTime, scheduleViewGUID and minutes (no
// patientGUID, no chair: the original's Chair 8) revalidates the cache as
// the original does: the slot, open again in Cloud9, is restored and
// `_cacheRevalidated` is true; no hold is released on the request's word.
func TestCancelWithTheSlotFieldsRevalidates(t *testing.T) {
	t.Parallel()
	e := newFamEnv(t, cloud9sim.Config{}, nil)
	mary := e.c9.Patient(t, "Mary", "Smith", "412-555-0100")
	slot := e.c9.Slot(t, 3)
	require.True(t, strings.EqualFold(cloud9sim.Chair8GUID, slot.ScheduleColumnGUID), "the simulator's first slot is Chair 8's")
	appt := e.c9.Appointment(t, mary, slot)
	r := e.post(t, "/cancelAppt", map[string]any{"appointmentGUID": appt, "startTime": slot.StartTime,
		"scheduleViewGUID": slot.ScheduleViewGUID, "minutes": 45})
	var got contracts.CancelResponse
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.True(t, got.Success)
	require.True(t, got.CacheRevalidated)
	require.False(t, got.SlotReleased)
	require.Len(t, e.cache.restored, 1)
	require.Equal(t, slot.StartTime, e.cache.restored[0].StartTime)
	require.True(t, strings.EqualFold(slot.ScheduleColumnGUID, e.cache.restored[0].ScheduleColumnGUID))
	require.Equal(t, slot.AppointmentTypeGUID, e.cache.restored[0].AppointmentTypeGUID)
	require.Positive(t, e.cache.restored[0].Minutes)
	require.Equal(t, 2, e.c9.Sim.Calls(cloud9.ProcGetOnlineReservations), "the fixture's read and one revalidation")
}
