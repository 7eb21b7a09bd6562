// Package session is the bookingSessions cache of docs/reference/nodered-endpoints.md §3, moved from
// Node-RED flow memory into Redis so that every flowgate instance sees the
// sessions every other instance created.
//
// createPatient stores a Session (Put) under the parent's patientGUID, the
// call's uui and the parent's phone number; createAppt finds it (Lookup:
// patientGUID first, then uui — the seed's v58 order) to inject a missing
// bookingAuthToken or patientGUID, and createPatient's parent dedup finds
// it by phone (LookupPhone). Entries expire with the token: 15 minutes by
// default, or at Session.ExpiresAt when given.
//
// Keys are listed in keys.go; they share one hash tag, so Put writes all of
// a session's keys in one MULTI/EXEC on a single Redis and on Redis Cluster
// alike, and Lookup reads its keys in one round trip.
//
// Redis errors are *contracts.Error with CodeUnavailable matching
// ErrUnavailable; the caller decides (createAppt goes on without the cache,
// so a request without a token is then refused in token and session modes).
package session
