package reservation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// RedisKeys are the reservation key (Prefix empty, the default): its part
// of docs/keyspace.md, which is made from it. One key per slot, exactly
// the pattern of the original's slot reservations (docs/holds.md), e.g.
//
//	SlotReservation:1fef9297-7c8b-426b-b0d1-f2275136e48b:20260311:0910:07687884-7e37-49aa-8028-d43b751c9034
//
// Date and time are the slot's startTime (the location's wall clock) in
// 24-hour form; GUIDs are lower-cased, so one slot has one key however a
// request spells them. With Config.KeyPrefix "p" the key is
// "p:SlotReservation:…" (tests use that; production keeps the original's key so
// existing tooling such as `KEYS SlotReservation:*` keeps working).
//
// The value, keys in this order:
//
//	{"sessionId":"3f4359de-…","reservedAt":"2026-01-22T06:37:49.000Z",
//	 "patientName":"TestUser3 Test3","slotStartTime":"3/11/2026 9:10:00 AM"}
//
// reservedAt is a JavaScript ISO time (UTC, milliseconds); slotStartTime the
// slot's Cloud9 startTime verbatim.
func RedisKeys() []keyspace.Key {
	return []keyspace.Key{
		{Pattern: keyName + ":<location>:<YYYYMMDD>:<HHmm>:<column>", Type: keyspace.String,
			Owner: "orchestrator/booking/reservation",
			TTL:   "`SLOT_RESERVATION_TTL` 90 s; `SLOT_RESERVATION_BOOKED_TTL` 300 s after booking",
			What: "the IVA face's reservation ([seed 003](reference/README.md#the-specifications-seeds)), written " +
				"by the hold engine (`orchestrator/holds`) with its canonical claim, GUIDs lower-cased; its JSON",
			Fields: keyspace.JSONFields[wire]()},
	}
}

const keyName = "SlotReservation"

// KeyOf is the reservation key of s without a prefix.
func KeyOf(s slots.Slot) (string, error) {
	loc := strings.ToLower(strings.TrimSpace(s.LocationGUID))
	col := strings.ToLower(strings.TrimSpace(s.ScheduleColumnGUID))
	if loc == "" || col == "" || strings.Contains(loc, ":") || strings.Contains(col, ":") {
		return "", fmt.Errorf("reservation: a slot needs a locationGUID and a scheduleColumnGUID without ':'")
	}
	t, err := slots.ParseTime(s.StartTime)
	if err != nil {
		return "", fmt.Errorf("reservation: %w", err)
	}
	return keyName + ":" + loc + ":" + t.Format("20060102") + ":" + t.Format("1504") + ":" + col, nil
}

// Reservation is the value of a reservation key.
type Reservation struct {
	SessionID     string
	ReservedAt    time.Time
	PatientName   string
	SlotStartTime string
}

const jsISO = "2006-01-02T15:04:05.000Z"

type wire struct {
	SessionID     string `json:"sessionId"`
	ReservedAt    string `json:"reservedAt"`
	PatientName   string `json:"patientName"`
	SlotStartTime string `json:"slotStartTime"`
}

// MarshalJSON writes the seed's value.
func (r Reservation) MarshalJSON() ([]byte, error) {
	return json.Marshal(wire{SessionID: r.SessionID, ReservedAt: r.ReservedAt.UTC().Format(jsISO),
		PatientName: r.PatientName, SlotStartTime: r.SlotStartTime})
}

// UnmarshalJSON reads the seed's value; a reservedAt that is not an ISO
// time is left zero (the value may have been written by other tools).
func (r *Reservation) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	at, _ := time.Parse(time.RFC3339Nano, w.ReservedAt)
	*r = Reservation{SessionID: w.SessionID, ReservedAt: at, PatientName: w.PatientName, SlotStartTime: w.SlotStartTime}
	return nil
}
