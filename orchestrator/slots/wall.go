package slots

import "time"

// wallOf is t's wall clock labelled UTC, for comparing wall clocks.
func wallOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// WallInstant is the instant at which loc's clocks show minute (since
// midnight; 1440 is the next midnight) of date. A wall clock that does not
// exist (skipped by a spring-forward) resolves to the first instant after
// the gap; one that exists twice (repeated by a fall-back) to the earlier.
// time.Date itself guarantees neither.
func WallInstant(loc *time.Location, date time.Time, minute int) time.Time {
	want := date.Add(time.Duration(minute) * time.Minute) // wall clock, labelled UTC
	t := time.Date(want.Year(), want.Month(), want.Day(), want.Hour(), want.Minute(), 0, 0, loc)
	if got := wallOf(t); !got.Equal(want) { // in a gap
		start, end := t.ZoneBounds()
		if got.After(want) {
			return start
		}
		return end
	}
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, offPrev := start.Add(-time.Nanosecond).Zone()
	if _, off := t.Zone(); offPrev > off { // t is after a fall-back: the same wall clock may exist before it
		if earlier := t.Add(-time.Duration(offPrev-off) * time.Second); wallOf(earlier.In(loc)).Equal(want) {
			return earlier
		}
	}
	return t
}
