package slots

import (
	"fmt"
	"strconv"
)

// PlanEntry is one element of llm_guidance.booking_plan: what to send to
// book one child, with the bookingToken that carries the same slot.
type PlanEntry struct {
	ChildIndex          int    `json:"child_index"` // 1-based
	ChildLabel          string `json:"child_label"` // "Child 1"
	StartTime           string `json:"startTime"`
	ScheduleViewGUID    string `json:"scheduleViewGUID"`
	ScheduleColumnGUID  string `json:"scheduleColumnGUID"`
	AppointmentTypeGUID string `json:"appointmentTypeGUID"`
	Minutes             int    `json:"minutes"`
	Instruction         string `json:"instruction"`
	BookingToken        string `json:"bookingToken"`
}

// BookingPlan builds the booking_plan for n children from the first group,
// or, when there is none, from the first n of singles (in the order given;
// Sort them first). It has fewer than n entries only when singles has fewer
// than n slots, and none when n < 1.
func BookingPlan(groups []Group, singles []Slot, n int) []PlanEntry {
	if n < 1 {
		return []PlanEntry{}
	}
	var chosen []Slot
	if len(groups) > 0 {
		chosen = groups[0].Slots
	} else {
		chosen = singles
	}
	chosen = chosen[:min(n, len(chosen))]
	plan := make([]PlanEntry, len(chosen))
	for i, s := range chosen {
		when := s.StartTime
		if t, err := s.Start(); err == nil {
			when = t.Weekday().String() + " " + Date(t) + " at " + TimeOfDay(t)
		}
		label := "Child " + strconv.Itoa(i+1)
		plan[i] = PlanEntry{
			ChildIndex:          i + 1,
			ChildLabel:          label,
			StartTime:           s.StartTime,
			ScheduleViewGUID:    s.ScheduleViewGUID,
			ScheduleColumnGUID:  s.ScheduleColumnGUID,
			AppointmentTypeGUID: s.AppointmentTypeGUID,
			Minutes:             s.Minutes,
			Instruction: fmt.Sprintf("Book %s for %s: pass this entry's bookingToken unchanged, "+
				"or copy startTime, scheduleViewGUID, scheduleColumnGUID, appointmentTypeGUID and minutes exactly. "+
				"Use each entry once.", label, when),
			BookingToken: EncodeToken(s),
		}
	}
	return plan
}
