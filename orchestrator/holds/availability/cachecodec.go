package availability

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// errCorruptCache is a cache field encodeDay did not write. The timeslot
// cache keeps one hash field per date (YYYY-MM-DD) under
// timeslots:{appointmentTypeId}:{specialistId|pooled}, so a request reads
// only its dates. A field is a small text, cheap to write and to read:
//
//	dr-adams,dr-baker          the specialists the lines refer to, by index
//	1795442400,1795444200,0,1  start, end (Unix seconds), free specialists
//	…
//
// An empty day is the first line alone.
var errCorruptCache = errors.New("availability: corrupt timeslot cache field")

// encodeDay writes one date's slots.
func encodeDay(slots []Timeslot) string {
	idx := map[string]int{}
	var ids []string
	var body []byte
	for _, s := range slots {
		body = strconv.AppendInt(body, s.SlotStartDate.Unix(), 10)
		body = append(body, ',')
		body = strconv.AppendInt(body, s.SlotEndDate.Unix(), 10)
		for _, id := range s.SpecialistIDs {
			i, ok := idx[id]
			if !ok {
				i = len(ids)
				idx[id] = i
				ids = append(ids, id)
			}
			body = append(body, ',')
			body = strconv.AppendInt(body, int64(i), 10)
		}
		body = append(body, '\n')
	}
	return strings.Join(ids, ",") + "\n" + string(body)
}

// decodeDay reads what encodeDay wrote, appending to dst.
func decodeDay(dst []Timeslot, field string) ([]Timeslot, error) {
	head, rest, ok := strings.Cut(field, "\n")
	if !ok {
		return dst, errCorruptCache
	}
	var ids []string
	if head != "" {
		ids = strings.Split(head, ",")
	}
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		s, err := decodeLine(line, ids)
		if err != nil {
			return dst, err
		}
		dst = append(dst, s)
	}
	return dst, nil
}

func decodeLine(line string, ids []string) (Timeslot, error) {
	startS, line, ok1 := strings.Cut(line, ",")
	endS, line, _ := strings.Cut(line, ",")
	start, err1 := strconv.ParseInt(startS, 10, 64)
	end, err2 := strconv.ParseInt(endS, 10, 64)
	if !ok1 || err1 != nil || err2 != nil {
		return Timeslot{}, errCorruptCache
	}
	s := Timeslot{SlotStartDate: time.Unix(start, 0).UTC(), SlotEndDate: time.Unix(end, 0).UTC(),
		SpecialistIDs: make([]string, 0, strings.Count(line, ",")+1)}
	for line != "" {
		var n string
		n, line, _ = strings.Cut(line, ",")
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || i >= len(ids) {
			return Timeslot{}, errCorruptCache
		}
		s.SpecialistIDs = append(s.SpecialistIDs, ids[i])
	}
	return s, nil
}
