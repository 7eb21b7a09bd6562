package holds

import (
	"strings"
	"time"
)

// Keys. P below is Config.Prefix followed by the hash tag: empty tag on a
// single Redis or Sentinel (the seeds' keys exactly), "{holds}:" on Redis
// Cluster (Config.HashTag; New picks it for a *redis.ClusterClient), so
// that every key a script touches lies in one hash slot. Holds are few,
// small and short-lived: one slot's node carries them easily, and in
// exchange the claim — exclusivity across both faces, the client's exact
// quota, the cooldown and the indexes — is one atomic script.
//
//	P holds:slot:<specialistId>:<slotStart>        STRING  canonical claim on (resource, start): the Hold JSON, PX.
//	                                                       Both faces claim it, so whichever asks first wins.
//	P hold:<appointmentTypeId>:<slotStart>:<specialistId>
//	                                               STRING  web face's readable key (seed 002): the Hold JSON, PX
//	P SlotReservation:<location>:<YYYYMMDD>:<HHmm>:<column>
//	                                               STRING  IVA face's readable key (seed 003): its JSON value, PX
//	P client:<clientId>:holds                      ZSET    holdId → expiresAt (unix ms); PX = its longest hold.
//	                                                       The seed's SET, made a ZSET so the claim script can
//	                                                       drop expired members and count the quota exactly.
//	P holds:records                                HASH    holdId → record JSON {hold, slotKey, faceKey, confirmed};
//	                                                       outlives the keys so an expired hold can be announced
//	P holds:expiry                                 ZSET    holdId → expiresAt (unix ms), swept once per tick
//	P holds:active:<appointmentTypeId>             ZSET    holdId → expiresAt (unix ms), the Active snapshot
//	P client_limit:<clientId>:<appointmentTypeId>  STRING  cooldown (seed 002): {bookedAt, appointmentTypeId,
//	                                                       cooldownMinutes, appointmentId}, PX = the cooldown
//	P client_limit:appointment:<appointmentId>     STRING  the cooldown key's name, same PX: ClearCooldown
//	                                                       without SCAN
//	P holds:adopted:<holdId>                       STRING  Adopt's record of a web hold handed over to a
//	                                                       booking: {from, hold, memo, adoptedAt}, PX its Keep
//	Prefix + holds:events:<appointmentTypeId>       channel the events (no tag: PUBLISH is not bound to a slot)
//
// <slotStart> is RFC 3339 UTC with seconds ("2025-03-15T09:00:00Z"); ids
// are used as given (the HTTP face rejects ids with ':', '{' or '}'),
// except that the canonical slot key lower-cases the specialist id, so
// "0768…" and "0768…" in upper case are one resource.

// ClusterTag is the hash tag every key carries on Redis Cluster.
const ClusterTag = "{holds}"

type keys struct{ p, prefix string }

func newKeys(prefix, tag string) keys {
	p := prefix
	if tag != "" {
		p += tag + ":"
	}
	return keys{p: p, prefix: prefix}
}

// FormatStart is a slot start as it appears in keys and on the wire.
func FormatStart(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// slot case-folds the specialist: GUIDs reach the two faces in whatever
// case Cloud9, the caller or the LLM spelled them, and must meet on one key.
func (k keys) slot(specialistID string, start time.Time) string {
	return k.p + "holds:slot:" + strings.ToLower(specialistID) + ":" + FormatStart(start)
}

func (k keys) webHold(atid, specialistID string, start time.Time) string {
	return k.p + "hold:" + atid + ":" + FormatStart(start) + ":" + specialistID
}

// face is a face's readable key given without P (e.g. "SlotReservation:…").
func (k keys) face(name string) string { return k.p + name }

func (k keys) client(clientID string) string { return k.p + "client:" + clientID + ":holds" }
func (k keys) records() string               { return k.p + "holds:records" }
func (k keys) expiry() string                { return k.p + "holds:expiry" }
func (k keys) active(atid string) string     { return k.p + "holds:active:" + atid }
func (k keys) cooldown(clientID, atid string) string {
	return k.p + "client_limit:" + clientID + ":" + atid
}
func (k keys) cooldownIndex(appointmentID string) string {
	return k.p + "client_limit:appointment:" + appointmentID
}
func (k keys) adopted(holdID string) string { return k.p + "holds:adopted:" + holdID }
func (k keys) channel(atid string) string   { return k.prefix + "holds:events:" + atid }

// validID reports whether s can be part of a key.
func validID(s string) bool {
	return s != "" && len(s) <= 200 && !strings.ContainsAny(s, ":{} \t\r\n")
}
