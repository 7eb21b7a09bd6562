package cloud9_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2025, 11, 5, 8, 30, 0, 0, time.UTC)
	for _, s := range []string{
		"11/5/2025 8:30:00 AM", "11/05/2025 08:30:00 AM", "11/5/2025 8:30 AM", "11/05/2025 08:30 am",
		"  11/5/2025   8:30:00 AM ", "11/5/2025 8:30AM", "11/5/2025 08:30:00", "2025-11-05T08:30:00", "2025-11-05 08:30:00",
	} {
		got, err := cloud9.ParseTime(s)
		require.NoError(t, err, s)
		require.True(t, want.Equal(got), "%q gave %s", s, got)
	}
	pm, err := cloud9.ParseTime("1/20/2026 1:05 PM")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 20, 13, 5, 0, 0, time.UTC), pm)
	noon, err := cloud9.ParseTime("1/20/2026 12:00:00 PM")
	require.NoError(t, err)
	require.Equal(t, 12, noon.Hour())
	midnight, err := cloud9.ParseTime("1/20/2026 12:00:00 AM")
	require.NoError(t, err)
	require.Equal(t, 0, midnight.Hour())
	day, err := cloud9.ParseTime("01/15/2015")
	require.NoError(t, err)
	require.Equal(t, time.Date(2015, 1, 15, 0, 0, 0, 0, time.UTC), day)

	for _, bad := range []string{"", "tomorrow", "13/45/2025 8:30 AM", "11/5/2025 25:00", "11/5/2025 8:30 XM"} {
		_, err := cloud9.ParseTime(bad)
		require.Error(t, err, bad)
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	require.Equal(t, "11/5/2025 8:30:00 AM", cloud9.FormatTime(time.Date(2025, 11, 5, 8, 30, 0, 0, time.UTC)))
	require.Equal(t, "1/20/2026 5:00:00 PM", cloud9.FormatTime(time.Date(2026, 1, 20, 17, 0, 0, 0, time.UTC)))
	local := time.FixedZone("EST", -5*3600)
	require.Equal(t, "1/20/2026 7:00:00 AM", cloud9.FormatTime(time.Date(2026, 1, 20, 7, 0, 0, 0, local)),
		"the wall clock is written as it is, not converted")
}

func TestSameStart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want bool
	}{
		{"11/5/2025 8:30:00 AM", "11/05/2025 08:30 AM", true},
		{"11/5/2025 8:30:00 AM", "11/5/2025 8:30:00 am", true},
		{"01/20/2026 10:00 AM", "1/20/2026 10:00:00 AM", true},
		{"1/20/2026 1:00 PM", "1/20/2026 13:00:00", true},
		{"11/5/2025 8:30:00 AM", "11/5/2025 8:30:00 PM", false},
		{"11/5/2025 8:30:00 AM", "11/6/2025 8:30:00 AM", false},
		{"11/5/2025 8:30:00 AM", "11/5/2025 8:31:00 AM", false},
		{"11/5/2025 8:30:00 AM", "garbage", false},
		{"same garbage", "Same  Garbage", true},
	}
	for _, c := range cases {
		require.Equal(t, c.want, cloud9.SameStart(c.a, c.b), "%q vs %q", c.a, c.b)
		require.Equal(t, c.want, cloud9.SameStart(c.b, c.a), "%q vs %q", c.b, c.a)
	}
}
