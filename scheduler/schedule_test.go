package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, spec string) interface{ Next(time.Time) time.Time } {
	t.Helper()
	s, err := parseSpec(spec, time.UTC)
	require.NoError(t, err)
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.000", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPrevTick(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, spec, at, want string
	}{
		{"every second, on time", "* * * * * *", "2030-01-01 12:00:00.000", "2030-01-01 12:00:00.000"},
		{"every second, 4ms late", "* * * * * *", "2030-01-01 12:00:00.004", "2030-01-01 12:00:00.000"},
		{"every second, 999ms late", "* * * * * *", "2030-01-01 12:00:00.999", "2030-01-01 12:00:00.000"},
		{"every 10s, 3ms late", "*/10 * * * * *", "2030-01-01 12:00:10.003", "2030-01-01 12:00:10.000"},
		{"every 10s, between ticks", "*/10 * * * * *", "2030-01-01 12:00:17.500", "2030-01-01 12:00:10.000"},
		{"every 10s, 1ms early is the previous tick", "*/10 * * * * *", "2030-01-01 12:00:09.999", "2030-01-01 12:00:00.000"},
		{"hourly descriptor", "@hourly", "2030-01-01 12:59:59.000", "2030-01-01 12:00:00.000"},
		{"@every 30s is epoch aligned", "@every 30s", "2030-01-01 12:00:44.100", "2030-01-01 12:00:30.000"},
		{"@every 7s is epoch aligned", "@every 7s", "2030-01-01 00:00:00.000", time.Unix(1893456000/7*7, 0).UTC().Format("2006-01-02 15:04:05.000")},
		{"weekdays 9am, on Monday", "0 0 9 * * MON-FRI", "2030-01-07 09:00:00.250", "2030-01-07 09:00:00.000"},
		{"weekdays 9am, on Sunday is Friday", "0 0 9 * * MON-FRI", "2030-01-06 18:00:00.000", "2030-01-04 09:00:00.000"},
		{"yearly", "@yearly", "2030-06-15 00:00:00.000", "2030-01-01 00:00:00.000"},
		{"leap day", "0 0 0 29 2 *", "2031-03-01 00:00:00.000", "2028-02-29 00:00:00.000"},
		{"bursty: every second of minute 0", "* 0 * * * *", "2030-01-01 12:30:00.000", "2030-01-01 12:00:59.000"},
		{"CRON_TZ", "CRON_TZ=Europe/Paris 0 0 3 * * *", "2030-01-01 12:00:00.000", "2030-01-01 02:00:00.000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := prevTick(mustParse(t, tc.spec), utc(tc.at))
			require.NoError(t, err)
			require.True(t, utc(tc.want).Equal(got), "got %v want %v", got, tc.want)
		})
	}

	t.Run("location of the scheduler applies without CRON_TZ", func(t *testing.T) {
		s, err := parseSpec("0 0 3 * * *", paris)
		require.NoError(t, err)
		got, err := prevTick(s, utc("2030-01-01 12:00:00.000"))
		require.NoError(t, err)
		require.True(t, utc("2030-01-01 02:00:00.000").Equal(got), "got %v", got)
	})
}

// The tick is what instances agree on: any firing time within one
// interval after a tick names that tick, and prevTick is a fixed point.
func TestPrevTickAgreesAcrossJitter(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"* * * * * *", "*/5 * * * * *", "@every 3s", "0 */2 * * * *"} {
		s := mustParse(t, spec)
		base := utc("2030-03-10 10:00:00.000")
		tick := s.Next(base)
		next := s.Next(tick)
		for _, jitter := range []time.Duration{0, time.Millisecond, 250 * time.Millisecond, next.Sub(tick) - time.Nanosecond} {
			got, err := prevTick(s, tick.Add(jitter))
			require.NoError(t, err)
			require.True(t, tick.Equal(got), "%s jitter %v: got %v want %v", spec, jitter, got, tick)
		}
		got, err := prevTick(s, next)
		require.NoError(t, err)
		require.True(t, next.Equal(got), "%s: at the next tick", spec)
	}
}

func TestPrevTickNeverFires(t *testing.T) {
	t.Parallel()
	_, err := prevTick(mustParse(t, "0 0 0 30 2 *"), utc("2030-01-01 00:00:00.000"))
	require.ErrorIs(t, err, errNoTick)
}

func TestEverySchedule(t *testing.T) {
	t.Parallel()
	e := everySchedule{period: 30 * time.Second}
	require.Equal(t, utc("2030-01-01 00:00:30.000"), e.Next(utc("2030-01-01 00:00:00.000")))
	require.Equal(t, utc("2030-01-01 00:00:30.000"), e.Next(utc("2030-01-01 00:00:29.999")))
	before := time.Unix(-45, 0).UTC()
	require.Equal(t, time.Unix(-30, 0).UTC(), e.Next(before), "floor division before 1970")
}

func TestMinInterval(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]time.Duration{
		"* * * * * *":       time.Second,
		"@every 30s":        30 * time.Second,
		"0 0 9 * * MON-FRI": 24 * time.Hour,
		"0 0,10,30 * * * *": 10 * time.Minute,
	} {
		got, err := minInterval(mustParse(t, spec), utc("2030-01-01 00:00:00.000"))
		require.NoError(t, err)
		require.Equal(t, want, got, spec)
	}
}

// ValidateSpec refuses what Register would: a spec that does not parse,
// and one that parses but never fires (30 February).
func TestValidateSpec(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateSpec("@every 30s"))
	require.NoError(t, ValidateSpec("0 */5 7-18 * * 1-6"))
	require.ErrorContains(t, ValidateSpec("every minute"), "invalid cron spec")
	require.ErrorContains(t, ValidateSpec("0 0 0 30 2 *"), "never fires")
}

func TestInterval(t *testing.T) {
	t.Parallel()
	d, err := Interval("@every 2m")
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, d)
	d, err = Interval("0 */5 7-18 * * 1-6")
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, d)
	_, err = Interval("0 0 0 30 2 *")
	require.Error(t, err)
}
