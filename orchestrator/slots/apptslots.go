package slots

import (
	"strconv"

	"github.com/flowgate/flowgate/contracts"
)

// ApptSlots turns slots into the wire shape of getApptSlots and
// getGroupedApptSlots (minutes as a string, empty when unknown).
func ApptSlots(list []Slot) []contracts.ApptSlot {
	out := make([]contracts.ApptSlot, 0, len(list))
	for _, s := range list {
		minutes := ""
		if s.Minutes > 0 {
			minutes = strconv.Itoa(s.Minutes)
		}
		out = append(out, contracts.ApptSlot{StartTime: s.StartTime, EndTime: s.EndTime,
			ScheduleViewGUID: s.ScheduleViewGUID, ScheduleViewDescription: s.ScheduleViewDescription,
			ScheduleColumnGUID: s.ScheduleColumnGUID, ScheduleColumnDescription: s.ScheduleColumnDescription,
			ScheduleTemplateName: s.ScheduleTemplateName, AppointmentClassGUID: s.AppointmentClassGUID,
			AppointmentClassDescription: s.AppointmentClassDescription, AppointmentTypeGUID: s.AppointmentTypeGUID,
			AppointmentTypeDescription: s.AppointmentTypeDescription, Minutes: minutes, LocationGUID: s.LocationGUID})
	}
	return out
}
