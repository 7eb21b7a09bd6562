package session

import (
	"strings"
	"unicode"
)

// The keys of the cache. With the default prefix:
//
//	flowgate:{bookingSessions}:guid:<PATIENTGUID>   STRING session JSON, PX until ExpiresAt
//	flowgate:{bookingSessions}:uui:<uui>            STRING the same JSON
//	flowgate:{bookingSessions}:phone:<digits>       STRING the same JSON
//
// All keys share the hash tag {bookingSessions}: a session's keys are found
// by different values, so only a common tag puts them in one Redis Cluster
// slot, where Put's MULTI/EXEC is atomic and Lookup's pipeline is one round
// trip to one node. The cache is small (a few hundred bytes per call, for
// 15 minutes), so one slot carries it easily, like the task ledger's {tasks}.
//
// The seed keeps one flow map, bookingSessions, keyed by patientGUID, uui
// and (in the production flow) phone alike; the kind segment keeps a uui
// that happens to look like a GUID from colliding with a patient. GUIDs are
// upper-cased (lookups are case-insensitive); phone numbers keep their
// digits only ("(412) 555-0100" and "412-555-0100" are one key); a uui is
// used verbatim.
//
// Session JSON: {patientGUID, familyId, bookingAuthToken, phoneNumber,
// patientName, uui, sessionId, createdAt, expiresAt}, the times as
// JavaScript ISO strings ("2026-01-19T15:30:00.000Z"), empty strings
// omitted.

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
