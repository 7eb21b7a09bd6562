package availability

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

// DateLayout is how dates are spelled on the wire and in the schedule file.
const DateLayout = "2006-01-02"

// Interval is one stretch of working hours, wall clock of the location:
// "09:00" to "17:00"; End "24:00" is the next midnight.
type Interval struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// WeeklyHours are a specialist's working hours per weekday, keyed "mon"
// … "sun"; a day not named is not worked.
type WeeklyHours map[string][]Interval

// weekdayKeys are WeeklyHours' keys indexed by time.Weekday.
var weekdayKeys = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// span is an Interval in minutes since midnight.
type span struct{ open, close int }

// parseClock reads "HH:MM" (00:00 to 24:00) as minutes since midnight.
func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh*60+mm > 24*60 {
		return 0, fmt.Errorf("%q is not a time of day between 00:00 and 24:00", s)
	}
	return hh*60 + mm, nil
}

// spans parses and checks a day's intervals: each opens before it closes,
// and they do not overlap.
func spans(list []Interval) ([]span, error) {
	out := make([]span, 0, len(list))
	for _, iv := range list {
		o, err := parseClock(iv.Start)
		if err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		c, err := parseClock(iv.End)
		if err != nil {
			return nil, fmt.Errorf("end: %w", err)
		}
		if c <= o {
			return nil, fmt.Errorf("%s–%s ends before it starts", iv.Start, iv.End)
		}
		out = append(out, span{o, c})
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.open, b.open) })
	for i := 1; i < len(out); i++ {
		if out[i].open < out[i-1].close {
			return nil, fmt.Errorf("intervals overlap at %02d:%02d", out[i].open/60, out[i].open%60)
		}
	}
	return out, nil
}

// Validate checks the weekday keys and every interval.
func (w WeeklyHours) Validate() error {
	for day, list := range w {
		if !slices.Contains(weekdayKeys[:], day) {
			return fmt.Errorf("weekday %q: want one of mon, tue, wed, thu, fri, sat, sun", day)
		}
		if _, err := spans(list); err != nil {
			return fmt.Errorf("%s: %w", day, err)
		}
	}
	return nil
}

// civil is a calendar date's time.Time at midnight UTC: AddDate walks
// calendar days with no zone in the way.
func civil(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// ParseDate reads YYYY-MM-DD as a calendar date (midnight UTC).
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return t, nil
}

// DateIn is the calendar date of instant t in loc (midnight UTC).
func DateIn(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return civil(y, m, d)
}

// wallCache memoizes WallInstant per (date, minute) within one Grid call:
// specialists mostly share hours, and the zone lookups are the costly part.
type wallCache struct {
	loc *time.Location
	m   map[wallKey]time.Time
}

type wallKey struct {
	day    int64 // date as Unix days
	minute int
}

func (w *wallCache) at(date time.Time, minute int) time.Time {
	k := wallKey{date.Unix() / 86400, minute}
	if t, ok := w.m[k]; ok {
		return t
	}
	t := slots.WallInstant(w.loc, date, minute).UTC()
	w.m[k] = t
	return t
}

// dayOpenings appends the openings of one working day: from each
// interval's opening instant, every step of real time, while a slot of
// length dur ends by the interval's closing instant. Stepping real time
// (not wall clock) keeps DST days right: a spring-forward day has one hour
// fewer of slots and skips the missing wall clock; a fall-back day has one
// hour more, each start a distinct instant.
func dayOpenings(dst []Opening, w *wallCache, id string, date time.Time, day []span, dur, step time.Duration) []Opening {
	for _, s := range day {
		open, closing := w.at(date, s.open), w.at(date, s.close)
		for t := open; !t.Add(dur).After(closing); t = t.Add(step) {
			dst = append(dst, Opening{Start: t, End: t.Add(dur), SpecialistID: id})
		}
	}
	return dst
}

// SpecialistHours is one specialist's schedule for Grid.
type SpecialistHours struct {
	ID     string
	Weekly WeeklyHours
	// Overrides replace the weekly hours of a date (YYYY-MM-DD); an empty
	// list closes the day.
	Overrides map[string][]Interval
}

// GridInput is what Grid needs: the location, the dates, the type's
// length and buffer, and the specialists' hours.
type GridInput struct {
	Loc         *time.Location
	From        time.Time // calendar date (midnight UTC)
	Days        int
	Duration    time.Duration
	Buffer      time.Duration
	Specialists []SpecialistHours
}

// Grid is every opening of the input's specialists over Days dates from
// From, in the location's time zone: slots of Duration every
// Duration+Buffer from each interval's start. Hours that do not parse are
// skipped (the schedule is validated when stored). Openings come per
// specialist in input order, each specialist's by start; times are UTC.
func Grid(in GridInput) []Opening {
	if in.Duration <= 0 || in.Days <= 0 {
		return nil
	}
	step := in.Duration + in.Buffer
	w := &wallCache{loc: in.Loc, m: make(map[wallKey]time.Time, 4*in.Days)}
	dates := make([]time.Time, in.Days)
	var perWeekday [7]int
	for i := range dates {
		dates[i] = in.From.AddDate(0, 0, i)
		perWeekday[dates[i].Weekday()]++
	}
	weeklies := make([][7][]span, len(in.Specialists))
	size := 0
	for j, sp := range in.Specialists {
		for i, k := range weekdayKeys {
			weeklies[j][i], _ = spans(sp.Weekly[k])
			for _, s := range weeklies[j][i] { // slots per such day, for the capacity
				if n := time.Duration(s.close-s.open)*time.Minute - in.Duration; n >= 0 {
					size += perWeekday[i] * (int(n/step) + 1)
				}
			}
		}
	}
	out := make([]Opening, 0, size+size/8)
	for j, sp := range in.Specialists {
		weekly := weeklies[j]
		for _, date := range dates {
			day := weekly[date.Weekday()]
			if len(sp.Overrides) > 0 {
				if ov, ok := sp.Overrides[date.Format(DateLayout)]; ok {
					day, _ = spans(ov)
				}
			}
			out = dayOpenings(out, w, sp.ID, date, day, in.Duration, step)
		}
	}
	return out
}

// Free drops the openings that collide with an appointment of the same
// specialist, the buffer kept on both sides: an opening [s, e) is taken
// when an appointment [as, ae) has as < e+buffer and s < ae+buffer.
func Free(openings []Opening, appts []Appointment, buffer time.Duration) []Opening {
	if len(appts) == 0 {
		return openings
	}
	bySpec := map[string][]Appointment{}
	for _, a := range appts {
		bySpec[a.SpecialistID] = append(bySpec[a.SpecialistID], a)
	}
	maxEnd := map[string][]time.Time{} // running maximum of ends, by start order
	for id, list := range bySpec {
		slices.SortFunc(list, func(a, b Appointment) int { return a.SlotStartDate.Compare(b.SlotStartDate) })
		ends := make([]time.Time, len(list))
		for i, a := range list {
			ends[i] = a.SlotEndDate
			if i > 0 && ends[i-1].After(ends[i]) {
				ends[i] = ends[i-1]
			}
		}
		maxEnd[id] = ends
	}
	var out []Opening // copied on the first taken opening only
	var cur string    // openings come in runs per specialist: look its lists up once per run
	var list []Appointment
	var ends []time.Time
	for i, o := range openings {
		if i == 0 || o.SpecialistID != cur {
			cur, list, ends = o.SpecialistID, bySpec[o.SpecialistID], maxEnd[o.SpecialistID]
		}
		switch {
		case len(list) > 0 && taken(o, list, ends, buffer):
			if out == nil {
				out = append(make([]Opening, 0, len(openings)), openings[:i]...)
			}
		case out != nil:
			out = append(out, o)
		}
	}
	if out == nil {
		return openings
	}
	return out
}

// taken reports whether o collides with one of list (sorted by start;
// ends its running maximum).
func taken(o Opening, list []Appointment, ends []time.Time, buffer time.Duration) bool {
	// skip the appointments that all end (buffer included) by o's start
	i, _ := slices.BinarySearchFunc(ends, o.Start, func(e, t time.Time) int {
		if e.Add(buffer).After(t) {
			return 1
		}
		return -1
	})
	for ; i < len(list) && list[i].SlotStartDate.Before(o.End.Add(buffer)); i++ {
		if o.Start.Before(list[i].SlotEndDate.Add(buffer)) {
			return true
		}
	}
	return false
}

// Pool groups openings by start: one Timeslot per start with every
// specialist free at it, highest priority first (then by id); the slots
// in start order. Linear in the openings: each specialist's openings are
// appended in rank order, so no list needs sorting but the slots.
func Pool(openings []Opening, priority map[string]int) []Timeslot {
	type run struct{ lo, hi int }
	bySpec := map[string][]run{} // specialist → its runs of consecutive openings
	for i, o := range openings {
		if i > 0 && openings[i-1].SpecialistID == o.SpecialistID {
			runs := bySpec[o.SpecialistID]
			runs[len(runs)-1].hi = i + 1
			continue
		}
		bySpec[o.SpecialistID] = append(bySpec[o.SpecialistID], run{i, i + 1})
	}
	ranked := make([]string, 0, len(bySpec))
	for id := range bySpec {
		ranked = append(ranked, id)
	}
	slices.SortFunc(ranked, func(a, b string) int {
		return cmp.Or(cmp.Compare(priority[b], priority[a]), strings.Compare(a, b))
	})
	byStart := make(map[int64]int, len(openings)/max(1, len(ranked)))
	var out []Timeslot
	for _, id := range ranked {
		for _, r := range bySpec[id] {
			for _, o := range openings[r.lo:r.hi] {
				pool(&out, byStart, o, id, len(ranked))
			}
		}
	}
	slices.SortFunc(out, func(a, b Timeslot) int { return a.SlotStartDate.Compare(b.SlotStartDate) })
	return out
}

// pool adds opening o of specialist id to the slot of its start.
func pool(out *[]Timeslot, byStart map[int64]int, o Opening, id string, specialists int) {
	k := o.Start.UnixNano()
	i, ok := byStart[k]
	if !ok {
		i = len(*out)
		byStart[k] = i
		*out = append(*out, Timeslot{SlotStartDate: o.Start.UTC(), SlotEndDate: o.End.UTC(), SpecialistIDs: make([]string, 0, specialists)})
	}
	if ids := (*out)[i].SpecialistIDs; len(ids) == 0 || ids[len(ids)-1] != id {
		(*out)[i].SpecialistIDs = append(ids, id)
	}
}
