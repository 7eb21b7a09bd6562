package slots

import (
	"strings"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// FromCloud9 converts Cloud9's open slots (GetOnlineReservations) into
// Slots, the one conversion the IVA's slot search and the web catalogue
// share. A non-empty locationGUID keeps only that location's slots (a slot
// that names no location is kept).
func FromCloud9(list []cloud9.Slot, locationGUID string) []Slot {
	out := make([]Slot, 0, len(list))
	for _, c := range list {
		if locationGUID != "" && c.LocationGUID != "" && !strings.EqualFold(c.LocationGUID, locationGUID) {
			continue
		}
		out = append(out, Slot{StartTime: c.StartTime, EndTime: c.EndTime,
			ScheduleViewGUID: c.ScheduleViewGUID, ScheduleViewDescription: c.ScheduleViewDescription,
			ScheduleColumnGUID: c.ScheduleColumnGUID, ScheduleColumnDescription: c.ScheduleColumnDescription,
			ScheduleTemplateName: c.ScheduleTemplateName, AppointmentClassGUID: c.AppointmentClassGUID,
			AppointmentClassDescription: c.AppointmentClassDescription, AppointmentTypeGUID: c.AppointmentTypeGUID,
			AppointmentTypeDescription: c.AppointmentTypeDescription, Minutes: c.Minutes, LocationGUID: c.LocationGUID})
	}
	return out
}
