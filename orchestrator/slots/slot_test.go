package slots_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2025, 11, 5, 8, 30, 0, 0, time.UTC)
	for _, in := range []string{
		"11/5/2025 8:30:00 AM", "11/05/2025 08:30:00 AM", "11/5/2025 8:30 AM", "11/5/2025 8:30 am",
		" 11/5/2025  8:30:00 AM ", "11/5/2025 08:30", "11/5/2025 8:30:00", "2025-11-05T08:30:00", "2025-11-05 08:30:00",
	} {
		got, err := slots.ParseTime(in)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%q → %s", in, got)
	}
	pm, err := slots.ParseTime("3/11/2026 1:05:00 PM")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 11, 13, 5, 0, 0, time.UTC), pm)
	noon, err := slots.ParseTime("3/11/2026 12:00 PM")
	require.NoError(t, err)
	require.Equal(t, 12, noon.Hour())
	midnight, err := slots.ParseTime("3/11/2026 12:10 AM")
	require.NoError(t, err)
	require.Equal(t, 0, midnight.Hour())

	for _, bad := range []string{"", "tomorrow", "13/1/2026 9:00 AM", "2/30/2026 9:00 AM", "1/20/2026", "1/20/2026 25:00", "1/20/26 9:00 AM"} {
		_, err := slots.ParseTime(bad)
		require.Error(t, err, bad)
	}
}

func TestFormatHelpers(t *testing.T) {
	t.Parallel()
	tm := time.Date(2026, 1, 20, 9, 10, 0, 0, time.UTC)
	require.Equal(t, "1/20/2026 9:10:00 AM", slots.FormatTime(tm))
	require.Equal(t, "01/20/2026", slots.Date(tm))
	require.Equal(t, "9:10 AM", slots.TimeOfDay(tm))
	back, err := slots.ParseTime(slots.FormatTime(tm))
	require.NoError(t, err)
	require.Equal(t, tm, back)
}

func TestSlotLength(t *testing.T) {
	t.Parallel()
	require.Equal(t, 45*time.Minute, slots.Slot{}.Length())
	require.Equal(t, 30*time.Minute, slots.Slot{Minutes: 30}.Length())
	require.Equal(t, 45*time.Minute, slots.Slot{Minutes: -1}.Length())
}

func TestSort(t *testing.T) {
	t.Parallel()
	b := slot("1/20/2026 9:00 AM")
	b.ScheduleColumnGUID = chair9
	list := []slots.Slot{
		slot("1/20/2026 10:00:00 AM"), slot("garbage"), b, slot("1/20/2026 9:00:00 AM"),
		slot("1/19/2026 4:00 PM"), slot("12/31/2025 11:00 PM"),
	}
	slots.Sort(list)
	require.Equal(t, []string{"12/31/2025 11:00 PM", "1/19/2026 4:00 PM", "1/20/2026 9:00:00 AM",
		"1/20/2026 9:00 AM", "1/20/2026 10:00:00 AM", "garbage"}, starts(list))
	require.Equal(t, chair8, list[2].ScheduleColumnGUID, "same start: by view, then column")
	require.Equal(t, chair9, list[3].ScheduleColumnGUID)
}

func TestSlotID(t *testing.T) {
	t.Parallel()
	a, err := slot("3/11/2026 9:10:00 AM").ID()
	require.NoError(t, err)
	require.Equal(t, "4C9E9333-4951-4EB0-8D97-E1AD83EF422D|07687884-7E37-49AA-8028-D43B751C9034|202603110910", a)
	b, err := slots.SlotID(view, chair8, "03/11/2026 09:10 AM")
	require.NoError(t, err)
	require.Equal(t, a, b, "spelling of the time does not matter")
	_, err = slots.SlotID("", chair8, "3/11/2026 9:10 AM")
	require.Error(t, err)
	_, err = slots.SlotID(view, chair8, "soon")
	require.Error(t, err)
}

// Tomorrow is the day after today in the practice's zone, not in UTC:
// between 19:00 and midnight in New York (winter) UTC is already on the
// next day, and tomorrow must not skip New York's tomorrow.
func TestTomorrowInPracticeZone(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name string
		now  time.Time
		zone *time.Location
		want time.Time
	}{
		{"20:00 New York = 01:00 UTC next day", time.Date(2026, 1, 13, 1, 0, 0, 0, time.UTC), ny, day(2026, 1, 13)},
		{"the same instant in UTC", time.Date(2026, 1, 13, 1, 0, 0, 0, time.UTC), time.UTC, day(2026, 1, 14)},
		{"18:59 New York", time.Date(2026, 1, 12, 23, 59, 0, 0, time.UTC), ny, day(2026, 1, 13)},
		{"23:59 New York", time.Date(2026, 1, 13, 4, 59, 0, 0, time.UTC), ny, day(2026, 1, 13)},
		{"00:00 New York", time.Date(2026, 1, 13, 5, 0, 0, 0, time.UTC), ny, day(2026, 1, 14)},
		{"summer: 20:30 EDT", time.Date(2026, 7, 1, 0, 30, 0, 0, time.UTC), ny, day(2026, 7, 1)},
		{"a clock in another zone", time.Date(2026, 1, 12, 20, 0, 0, 0, ny), nil, day(2026, 1, 14)},
		{"month end", time.Date(2026, 2, 1, 2, 0, 0, 0, time.UTC), ny, day(2026, 2, 1)},
	} {
		got := slots.Tomorrow(c.now, c.zone)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, time.UTC, got.Location(), c.name)
	}
}
