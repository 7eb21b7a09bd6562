package slots_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	loc    = "1fef9297-7c8b-426b-b0d1-f2275136e48b"
	view   = "4c9e9333-4951-4eb0-8d97-e1ad83ef422d"
	chair8 = "07687884-7e37-49aa-8028-d43b751c9034"
	chair9 = "11111111-2222-3333-4444-555555555555"
	apptTy = "f6c20c35-9abb-47c2-981a-342996016705"
)

// slot is a Chair 8 slot of 45 minutes at a Cloud9 start time.
func slot(start string) slots.Slot {
	return slots.Slot{
		StartTime: start, ScheduleViewGUID: view, ScheduleColumnGUID: chair8,
		AppointmentTypeGUID: apptTy, Minutes: 45, LocationGUID: loc,
		ScheduleColumnDescription: "CHAIR 8",
	}
}

func starts(list []slots.Slot) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.StartTime
	}
	return out
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
