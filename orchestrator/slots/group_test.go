package slots_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

func groupStarts(gs []slots.Group) [][]string {
	out := make([][]string, len(gs))
	for i, g := range gs {
		out[i] = starts(g.Slots)
	}
	return out
}

func TestGroupsFollowTheReferenceRule(t *testing.T) {
	t.Parallel()
	other := slot("1/20/2026 8:45 AM") // another chair at 8:45: overlaps the 8:00 slot's end
	other.ScheduleColumnGUID = chair9
	list := []slots.Slot{
		slot("1/20/2026 10:25 AM"), // 9:45 ends 10:30: starts before the end → skipped
		slot("1/20/2026 8:00 AM"),  // ends 8:45
		other,                      // 8:45, gap 0 after 8:00
		slot("1/20/2026 9:10 AM"),  // 25 min after 8:45's end 9:30? no: 8:45 ends 9:30 → 9:10 overlaps
		slot("1/20/2026 9:45 AM"),  // 15 min after 9:30
		slot("1/20/2026 11:10 AM"), // 40 min after 10:30 (window edge)
		slot("1/20/2026 12:36 PM"), // 41 min after 11:55
	}
	in := slices.Clone(list)
	got := slots.Groups(list, 2, 40*time.Minute)
	require.Equal(t, list, in, "input untouched")
	require.Equal(t, [][]string{
		{"1/20/2026 8:00 AM", "1/20/2026 8:45 AM"},
		{"1/20/2026 8:45 AM", "1/20/2026 9:45 AM"},
		{"1/20/2026 9:10 AM", "1/20/2026 10:25 AM"},
		{"1/20/2026 9:45 AM", "1/20/2026 11:10 AM"},
		{"1/20/2026 10:25 AM", "1/20/2026 11:10 AM"},
	}, groupStarts(got))
	// 10:25 ends 11:10 → 11:10 is 0 after; 11:10 ends 11:55 → 12:36 is 41 > 40.
	got3 := slots.Groups(list, 3, 40*time.Minute)
	require.Equal(t, [][]string{
		{"1/20/2026 8:00 AM", "1/20/2026 8:45 AM", "1/20/2026 9:45 AM"},
		{"1/20/2026 8:45 AM", "1/20/2026 9:45 AM", "1/20/2026 11:10 AM"},
		{"1/20/2026 9:10 AM", "1/20/2026 10:25 AM", "1/20/2026 11:10 AM"},
	}, groupStarts(got3))
	require.Equal(t, "01/20/2026", got3[0].Date)
	require.Equal(t, "Tuesday", got3[0].Day)
	require.Equal(t, []string{"8:00 AM", "8:45 AM", "9:45 AM"}, got3[0].Times)
	require.Equal(t, chair9, got3[0].Slots[1].ScheduleColumnGUID, "siblings may sit in different chairs")

	require.Len(t, slots.Groups(list, 2, 41*time.Minute), 6, "a wider window lets 12:36 in")
}

func TestGroupsUseDefaultMinutesAndSkipBadTimes(t *testing.T) {
	t.Parallel()
	a, b := slot("1/21/2026 9:00 AM"), slot("1/21/2026 9:45 AM")
	a.Minutes, b.Minutes = 0, 0 // 45 assumed: 9:00 ends 9:45
	bad := slot("whenever")
	c := slot("1/21/2026 10:29 AM") // 9:45 ends 10:30 → overlaps
	got := slots.Groups([]slots.Slot{bad, c, b, a}, 2, 0)
	require.Equal(t, [][]string{{"1/21/2026 9:00 AM", "1/21/2026 9:45 AM"}}, groupStarts(got), "window 0: only back-to-back")
}

func TestGroupsEdgeCases(t *testing.T) {
	t.Parallel()
	list := []slots.Slot{slot("1/20/2026 8:00 AM"), slot("1/20/2026 8:45 AM")}
	require.Nil(t, slots.Groups(list, 0, time.Hour))
	require.Nil(t, slots.Groups(nil, 2, time.Hour))
	require.Nil(t, slots.Groups(list, 3, time.Hour), "groups of exactly n")
	require.Len(t, slots.Groups(list, 1, 0), 2, "n=1: each slot")
	// Different days never group: the gap is a day.
	require.Nil(t, slots.Groups([]slots.Slot{slot("1/20/2026 4:00 PM"), slot("1/21/2026 8:00 AM")}, 2, time.Hour))
}

func TestGroupAndPlanGoldens(t *testing.T) {
	t.Parallel()
	list := []slots.Slot{slot("1/20/2026 8:00:00 AM"), slot("1/20/2026 8:45:00 AM"), slot("1/20/2026 10:00:00 AM")}
	groups := slots.Groups(list, 2, slots.DefaultWindow)
	require.Len(t, groups, 2)
	contractstest.Golden(t, "booking_slot_group", groups[0])

	plan := slots.BookingPlan(groups, list, 2)
	contractstest.Golden(t, "booking_plan", plan)
	for i, e := range plan {
		ts, err := slots.DecodeToken(e.BookingToken)
		require.NoError(t, err)
		require.Equal(t, groups[0].Slots[i].TokenSlot(), ts, "each entry's token is its slot")
	}
}

func TestBookingPlan(t *testing.T) {
	t.Parallel()
	singles := []slots.Slot{slot("1/22/2026 8:00 AM"), slot("1/23/2026 8:00 AM"), slot("1/24/2026 8:00 AM")}
	group := slots.Groups([]slots.Slot{slot("1/20/2026 8:00 AM"), slot("1/20/2026 8:45 AM")}, 2, time.Hour)

	p := slots.BookingPlan(group, singles, 2)
	require.Equal(t, []string{"1/20/2026 8:00 AM", "1/20/2026 8:45 AM"}, []string{p[0].StartTime, p[1].StartTime}, "from group[0]")
	require.Equal(t, 1, p[0].ChildIndex)
	require.Equal(t, "Child 2", p[1].ChildLabel)
	require.Contains(t, p[0].Instruction, "Tuesday 01/20/2026 at 8:00 AM")

	p = slots.BookingPlan(nil, singles, 2)
	require.Equal(t, []string{"1/22/2026 8:00 AM", "1/23/2026 8:00 AM"}, []string{p[0].StartTime, p[1].StartTime}, "first n singles")
	p = slots.BookingPlan(nil, singles[:1], 3)
	require.Len(t, p, 1, "fewer slots than children")
	p = slots.BookingPlan(nil, nil, 2)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `[]`, string(raw), "an empty plan is [] not null")
	require.Empty(t, slots.BookingPlan(group, singles, 0))
}
