package session

import (
	"strings"
	"unicode"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the cache's keys with the default prefix: its part of
// docs/keyspace.md, which is made from them.
//
// All keys share the hash tag {bookingSessions}: a session's keys are found
// by different values, so only a common tag puts them in one Redis Cluster
// slot, where Put's MULTI/EXEC is atomic and Lookup's pipeline is one round
// trip to one node. The cache is small (a few hundred bytes per call, for
// 15 minutes), so one slot carries it easily, like the task ledger's {tasks}.
//
// The Node-RED flow keeps one flow map, bookingSessions (docs/booking.md),
// keyed by patientGUID, uui and (in the production flow) phone alike; the
// kind segment keeps a uui that happens to look like a GUID from colliding
// with a patient. GUIDs are upper-cased (lookups are case-insensitive); phone numbers keep their
// digits only ("(412) 555-0100" and "412-555-0100" are one key); a uui is
// used verbatim.
//
// Session JSON: the fields of wire, the times as JavaScript ISO
// strings ("2026-01-19T15:30:00.000Z"), empty strings omitted.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/booking/session"
	return []keyspace.Key{
		{Pattern: "flowgate:{bookingSessions}:guid:<PATIENTGUID>", Type: keyspace.String, Owner: o,
			TTL: "`BOOKING_SESSION_TTL` (15 min)", What: "the bookingSessions entry", Fields: keyspace.JSONFields[wire]()},
		{Pattern: "flowgate:{bookingSessions}:uui:<uui>", Type: keyspace.String, Owner: o, TTL: "same",
			What: "the same JSON, found by uui"},
		{Pattern: "flowgate:{bookingSessions}:phone:<digits>", Type: keyspace.String, Owner: o, TTL: "same",
			What: "the same JSON, found by phone"},
	}
}

type keys struct {
	base string // "<prefix>:{bookingSessions}:"
}

func newKeys(prefix string) keys { return keys{base: prefix + ":{bookingSessions}:"} }

func (k keys) guid(g string) string  { return k.base + "guid:" + strings.ToUpper(strings.TrimSpace(g)) }
func (k keys) uui(u string) string   { return k.base + "uui:" + u }
func (k keys) phone(p string) string { return k.base + "phone:" + p }

// phoneDigits is p's digits, "" when it has none.
func phoneDigits(p string) string {
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && unicode.IsDigit(r) {
			return r
		}
		return -1
	}, p)
}
