// Package phoneindex is getPatientByFilter's phone search. The Node-RED
// flow answered a phone search by listing the client's patients
// (GetPatientList: every location unless the caller named one) and then
// asking GetPatientInformation for up to 200 of them, ten at a time, on
// every call. Here each search does the same, on demand only — no
// background crawl, no refresh at start: Cloud9's reads follow the callers
// (a phone search costs one GetPatientList and at most
// Config.ReadsPerSearch GetPatientInformation; an idle hour costs none).
//
// What a search reads is kept in Redis (one hash, patient GUID → record
// with its phone digits, forgotten Config.Keep after the last write), so
// the next search reads only the patients it has no record of, or whose
// record is older than Config.RecordMaxAge: the missing first (a patient
// created since), then the oldest. A search matches digit substrings over
// the records of the patients GetPatientList listed, as the original did.
//
// Two bounds keep the reads in proportion: ReadsPerSearch per search (the
// original's 200) and ReadsPerMinute across every instance (a Redis
// counter per minute). A patient left unread by them is missing from that
// answer (searchedCount < totalPatients says so) and read by the next
// search.
package phoneindex
