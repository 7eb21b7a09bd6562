package cloud9

import (
	"fmt"
	"strings"
	"time"
)

// TimeLayout is how Cloud9 writes times ("11/5/2025 8:30:00 AM", unpadded)
// and how flowgate sends them.
const TimeLayout = "1/2/2006 3:04:05 PM"

// parseLayouts are the forms ParseTime accepts. Go's 1, 2 and 3 accept one
// or two digits, so padded forms ("01/05/2025 08:30 AM") parse too.
var parseLayouts = []string{
	"1/2/2006 3:04:05 PM",
	"1/2/2006 3:04 PM",
	"1/2/2006 15:04:05",
	"1/2/2006 15:04",
	"1/2/2006",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// FormatTime writes t's wall clock the way Cloud9 does. Cloud9 times carry
// no zone: they are the practice's local time, so t's own location is not
// converted.
func FormatTime(t time.Time) string { return t.Format(TimeLayout) }

// ParseTime reads a Cloud9 time: M/D/YYYY h:mm[:ss] AM|PM with or without
// zero padding, am/pm in any case, or a 24-hour or ISO form. The result is
// the wall clock in UTC (Cloud9 times carry no zone).
func ParseTime(s string) (time.Time, error) {
	n := normalizeTime(s)
	for _, layout := range parseLayouts {
		if t, err := time.Parse(layout, n); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cloud9: unrecognised time %q", s)
}

// normalizeTime trims, collapses runs of white space and upper-cases am/pm.
func normalizeTime(s string) string {
	n := strings.Join(strings.Fields(s), " ")
	if l := len(n); l >= 2 {
		switch suffix := strings.ToUpper(n[l-2:]); suffix {
		case "AM", "PM":
			n = n[:l-2] + suffix
			if l >= 3 && n[l-3] != ' ' { // "8:30PM"
				n = n[:l-2] + " " + suffix
			}
		}
	}
	return n
}

// SameStart reports whether two Cloud9 times are the same moment, however
// each is padded ("11/5/2025 8:30:00 AM" and "11/05/2025 08:30 AM" are).
// Times that do not parse are compared as normalised text.
func SameStart(a, b string) bool {
	ta, errA := ParseTime(a)
	tb, errB := ParseTime(b)
	if errA == nil && errB == nil {
		return ta.Equal(tb)
	}
	if errA == nil || errB == nil {
		return false
	}
	return strings.EqualFold(normalizeTime(a), normalizeTime(b))
}
