package slots

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// DefaultMinutes is the length assumed for a slot whose Minutes is unknown
// (createAppt's default).
const DefaultMinutes = 45

// Slot is one open slot of GetOnlineReservations, with docs/reference/nodered-endpoints.md's
// camelCase names. StartTime and EndTime are Cloud9's strings, verbatim.
type Slot struct {
	StartTime                   string `json:"startTime"`
	EndTime                     string `json:"endTime,omitempty"`
	ScheduleViewGUID            string `json:"scheduleViewGUID"`
	ScheduleViewDescription     string `json:"scheduleViewDescription,omitempty"`
	ScheduleColumnGUID          string `json:"scheduleColumnGUID"`
	ScheduleColumnDescription   string `json:"scheduleColumnDescription,omitempty"`
	ScheduleTemplateName        string `json:"scheduleTemplateName,omitempty"`
	AppointmentClassGUID        string `json:"appointmentClassGUID,omitempty"`
	AppointmentClassDescription string `json:"appointmentClassDescription,omitempty"`
	AppointmentTypeGUID         string `json:"appointmentTypeGUID"`
	AppointmentTypeDescription  string `json:"appointmentTypeDescription,omitempty"`
	Minutes                     int    `json:"minutes"`
	LocationGUID                string `json:"locationGUID"`
}

// Start parses StartTime (see ParseTime).
func (s Slot) Start() (time.Time, error) { return ParseTime(s.StartTime) }

// Length is Minutes as a duration, DefaultMinutes when Minutes is not
// positive.
func (s Slot) Length() time.Duration {
	if s.Minutes <= 0 {
		return DefaultMinutes * time.Minute
	}
	return time.Duration(s.Minutes) * time.Minute
}

// TokenSlot is what a bookingToken carries.
func (s Slot) TokenSlot() TokenSlot {
	return TokenSlot{
		StartTime:           s.StartTime,
		ScheduleViewGUID:    s.ScheduleViewGUID,
		ScheduleColumnGUID:  s.ScheduleColumnGUID,
		AppointmentTypeGUID: s.AppointmentTypeGUID,
		Minutes:             s.Minutes,
	}
}

// ParseTime reads a slot's Cloud9 date-time ("11/5/2025 8:30:00 AM",
// "01/20/2026 10:00 AM", and 24-hour or ISO forms without a zone) as a
// wall-clock time labelled UTC, with the Cloud9 client's parser. Unlike
// that parser it refuses a date without a time: a slot starts at a time.
func ParseTime(s string) (time.Time, error) {
	if !strings.Contains(s, ":") {
		return time.Time{}, fmt.Errorf("slots: %q is not a Cloud9 date-time (M/D/YYYY h:mm[:ss] AM)", s)
	}
	t, err := cloud9.ParseTime(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("slots: %q is not a Cloud9 date-time (M/D/YYYY h:mm[:ss] AM)", s)
	}
	return t, nil
}

// FormatTime writes t as Cloud9 does: "1/20/2026 10:00:00 AM".
func FormatTime(t time.Time) string { return cloud9.FormatTime(t) }

// Tomorrow is the practice's next calendar day as of now: the day after
// now's date in zone (PRACTICE_TIME_ZONE; nil is UTC), as midnight
// labelled UTC like every date of this package. The tiers start on it and
// a missing or past startDate becomes it: at 20:00 in New York (01:00 UTC
// the next day) it is still the day after New York's today.
func Tomorrow(now time.Time, zone *time.Location) time.Time {
	if zone == nil {
		zone = time.UTC
	}
	d := now.In(zone)
	return time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, time.UTC)
}

// Date is t's date as the booking answers spell it: "01/20/2026".
func Date(t time.Time) string { return t.Format("01/02/2006") }

// TimeOfDay is t's time as the booking answers spell it: "9:10 AM".
func TimeOfDay(t time.Time) string { return t.Format("3:04 PM") }

// Sort orders slots by start, then schedule view and column, in place;
// slots whose start does not parse go last, in their original order.
func Sort(list []Slot) {
	starts := make(map[string]time.Time, len(list))
	for _, s := range list {
		if t, err := s.Start(); err == nil {
			starts[s.StartTime] = t
		}
	}
	slices.SortStableFunc(list, func(a, b Slot) int {
		ta, oka := starts[a.StartTime]
		tb, okb := starts[b.StartTime]
		switch {
		case !oka || !okb:
			return cmpBool(oka, okb)
		case !ta.Equal(tb):
			return ta.Compare(tb)
		}
		return cmp.Or(strings.Compare(a.ScheduleViewGUID, b.ScheduleViewGUID),
			strings.Compare(a.ScheduleColumnGUID, b.ScheduleColumnGUID))
	})
}

// cmpBool puts true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// SlotID identifies a physical slot: schedule view, column and start minute,
// GUIDs upper-cased ("<VIEW>|<COLUMN>|YYYYMMDDHHmm"). It is the field of the
// slot in the cache and what Invalidate and Find match on.
func SlotID(view, column, startTime string) (string, error) {
	t, err := ParseTime(startTime)
	if err != nil {
		return "", err
	}
	if view == "" || column == "" {
		return "", fmt.Errorf("slots: a slot needs a scheduleViewGUID and a scheduleColumnGUID")
	}
	return strings.ToUpper(view) + "|" + strings.ToUpper(column) + "|" + t.Format("200601021504"), nil
}

// ID is SlotID of s.
func (s Slot) ID() (string, error) {
	return SlotID(s.ScheduleViewGUID, s.ScheduleColumnGUID, s.StartTime)
}
