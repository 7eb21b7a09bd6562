package cloud9sim

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// param is one element of <Parameters>.
type param struct {
	value string
	null  bool // xsi:nil="true"
}

// params are the parameters by exact (case-sensitive) element name.
type params map[string]param

// get answers a parameter's value; a nil or blank one is absent.
func (p params) get(name string) (string, bool) {
	v, ok := p[name]
	if !ok || v.null || strings.TrimSpace(v.value) == "" {
		return "", false
	}
	return v.value, true
}

// require answers error 2 unless every name is present.
func (p params) require(names ...string) *apiError {
	for _, n := range names {
		if _, ok := p.get(n); !ok {
			return errRequired()
		}
	}
	return nil
}

// guid answers a present parameter as a canonical lower-case GUID; absent
// is "" and no error.
func (p params) guid(name string) (string, *apiError) {
	v, ok := p.get(name)
	if !ok {
		return "", nil
	}
	g, err := uuid.Parse(strings.TrimSpace(v))
	if err != nil {
		return "", errGUID(name)
	}
	return g.String(), nil
}

// guidList answers a comma-separated list of GUIDs (schdvwGUIDs, …).
func (p params) guidList(name string) (map[string]bool, *apiError) {
	v, ok := p.get(name)
	if !ok {
		return nil, nil
	}
	out := map[string]bool{}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		g, err := uuid.Parse(part)
		if err != nil {
			return nil, errGUID(name)
		}
		out[g.String()] = true
	}
	return out, nil
}

// integer answers a present integer parameter.
func (p params) integer(name string) (int, bool, *apiError) {
	v, ok := p.get(name)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, true, errValue(name)
	}
	return n, true, nil
}

// bit answers a present bit (1/0/True/False); absent answers def.
func (p params) bit(name string, def bool) (bool, *apiError) {
	v, ok := p.get(name)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, errValue(name)
}

// text answers a present string parameter of at most max characters.
func (p params) text(name string, max int) (string, *apiError) {
	v, ok := p.get(name)
	if !ok {
		return "", nil
	}
	if max > 0 && utf8.RuneCountInString(v) > max {
		return "", errValue(name)
	}
	return v, nil
}

// dateTime answers a present date/time parameter in loc; dateOnly reports
// that no time of day was given.
func (p params) dateTime(name string, loc *time.Location) (t time.Time, dateOnly bool, err *apiError) {
	v, ok := p.get(name)
	if !ok {
		return time.Time{}, false, nil
	}
	t, dateOnly, good := parseDateTime(v, loc)
	if !good {
		return time.Time{}, false, errValue(name)
	}
	return t, dateOnly, nil
}

// wireLayout is how Cloud9 writes a date and time: "11/5/2025 8:30:00 AM".
const wireLayout = "1/2/2006 3:04:05 PM"

// formatTime writes t as Cloud9 does (no padding, seconds, AM/PM).
func formatTime(t time.Time) string { return t.Format(wireLayout) }

// parseDateTime reads "M/D/YYYY", "M/D/YYYY h:mm[:ss] AM|PM" or
// "M/D/YYYY H:mm[:ss]" (each number padded or not), or ISO 8601
// "YYYY-MM-DD[Thh:mm[:ss]]" — the forms .NET's DateTime.Parse takes that a
// client might send — as a local time in loc.
func parseDateTime(s string, loc *time.Location) (time.Time, bool, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false, false
	}
	datePart, timePart, hasTime := strings.Cut(s, " ")
	if !hasTime && strings.Contains(s, "T") {
		datePart, timePart, hasTime = strings.Cut(s, "T")
	}
	var y, mo, d int
	var ok bool
	if strings.Contains(datePart, "/") {
		mo, d, y, ok = threeInts(datePart, "/")
	} else {
		y, mo, d, ok = threeInts(datePart, "-")
	}
	if !ok || y < 1753 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return time.Time{}, false, false
	}
	date := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, loc)
	if date.Day() != d { // 2/30
		return time.Time{}, false, false
	}
	if !hasTime {
		return date, true, true
	}
	h, m, sec, ok := parseClock(strings.TrimSpace(timePart))
	if !ok {
		return time.Time{}, false, false
	}
	return time.Date(y, time.Month(mo), d, h, m, sec, 0, loc), false, true
}

func threeInts(s, sep string) (a, b, c int, ok bool) {
	parts := strings.Split(s, sep)
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 4 {
			return 0, 0, 0, false
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return 0, 0, 0, false
		}
		n[i] = v
	}
	return n[0], n[1], n[2], true
}

// parseClock reads "h:mm[:ss] AM|PM" or "H:mm[:ss]".
func parseClock(s string) (h, m, sec int, ok bool) {
	ampm := ""
	if i := strings.LastIndexAny(s, " "); i >= 0 {
		ampm = strings.ToUpper(strings.TrimSpace(s[i+1:]))
		s = strings.TrimSpace(s[:i])
	} else if u := strings.ToUpper(s); strings.HasSuffix(u, "AM") || strings.HasSuffix(u, "PM") {
		ampm, s = u[len(u)-2:], s[:len(s)-2]
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		if i == 2 {
			p, _, _ = strings.Cut(p, ".") // fractional seconds
		}
		if p == "" || len(p) > 2 {
			return 0, 0, 0, false
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return 0, 0, 0, false
		}
		n[i] = v
	}
	h, m, sec = n[0], n[1], n[2]
	if m > 59 || sec > 59 {
		return 0, 0, 0, false
	}
	switch ampm {
	case "":
		if h > 23 {
			return 0, 0, 0, false
		}
	case "AM", "PM":
		if h < 1 || h > 12 {
			return 0, 0, 0, false
		}
		h %= 12
		if ampm == "PM" {
			h += 12
		}
	default:
		return 0, 0, 0, false
	}
	return h, m, sec, true
}
