package slotcache

import (
	"fmt"
	"strconv"
	"strings"
)

// DescribeSchedule is cache-health's config.businessHours: the refresh
// job's cron spec (SLOT_CACHE_REFRESH_SCHEDULE) as a sentence, the way the
// original states its business hours — the default reads "Every 5 minutes
// from 7:00 AM to 6:55 PM, Monday to Saturday (America/New_York)". A spec
// it cannot put in words is named as such ("On the cron schedule …").
func DescribeSchedule(spec string) string {
	spec = strings.TrimSpace(spec)
	fallback := "On the cron schedule " + spec
	zone := ""
	if rest, ok := cutZone(spec); ok {
		zone, spec = rest[0], rest[1]
	}
	where := ""
	if zone != "" {
		where = " (" + zone + ")"
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		return "Every " + strings.TrimSpace(d) + ", at all hours, every day" + where
	}
	f := strings.Fields(spec)
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
	}
	if len(f) != 6 || f[0] != "0" || f[3] != "*" || f[4] != "*" {
		return fallback
	}
	every, last, ok := minutesPart(f[1])
	if !ok {
		return fallback
	}
	hours, ok := hoursPart(f[2], last)
	if !ok {
		return fallback
	}
	days, ok := daysPart(f[5])
	if !ok {
		return fallback
	}
	return every + " " + hours + ", " + days + where
}

// cutZone splits "CRON_TZ=zone rest" (or TZ=).
func cutZone(spec string) ([2]string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(spec, p); ok {
			zone, tail, _ := strings.Cut(rest, " ")
			return [2]string{zone, strings.TrimSpace(tail)}, true
		}
	}
	return [2]string{}, false
}

// minutesPart reads "*/N", "0" or "*": the phrase and the last minute of
// each hour a run starts.
func minutesPart(m string) (string, int, bool) {
	switch {
	case m == "*":
		return "Every minute", 59, true
	case strings.HasPrefix(m, "*/"):
		n, err := strconv.Atoi(m[2:])
		if err != nil || n < 1 || n > 59 {
			return "", 0, false
		}
		return fmt.Sprintf("Every %d minutes", n), (59 / n) * n, true
	}
	n, err := strconv.Atoi(m)
	if err != nil || n < 0 || n > 59 {
		return "", 0, false
	}
	return fmt.Sprintf("Hourly at minute %d", n), n, true
}

// hoursPart reads "*" or "A-B".
func hoursPart(h string, lastMinute int) (string, bool) {
	if h == "*" {
		return "at all hours", true
	}
	a, b, ok := strings.Cut(h, "-")
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || from < 0 || to > 23 || from > to {
		return "", false
	}
	return "from " + clock(from, 0) + " to " + clock(to, lastMinute), true
}

func clock(h, m int) string {
	ampm := "AM"
	if h >= 12 {
		ampm = "PM"
	}
	h12 := h % 12
	if h12 == 0 {
		h12 = 12
	}
	return fmt.Sprintf("%d:%02d %s", h12, m, ampm)
}

var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// daysPart reads "*", "?", one day or "A-B" (names or 0–6).
func daysPart(d string) (string, bool) {
	if d == "*" || d == "?" {
		return "every day", true
	}
	a, b, isRange := strings.Cut(d, "-")
	from, ok1 := dayIndex(a)
	if !isRange {
		return "on " + dayNames[from] + "s", ok1
	}
	to, ok2 := dayIndex(b)
	if !ok1 || !ok2 || from > to {
		return "", false
	}
	return dayNames[from] + " to " + dayNames[to], true
}

func dayIndex(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n % 7, n >= 0 && n <= 7
	}
	for i, name := range dayNames {
		if strings.EqualFold(s, name[:3]) {
			return i, true
		}
	}
	return 0, false
}
