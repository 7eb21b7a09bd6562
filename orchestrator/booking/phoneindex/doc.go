// Package phoneindex is getPatientByFilter's phone lookup without the
// original's cost. The Node-RED flow answered a phone search by listing the
// location's patients (GetPatientList) and then asking GetPatientInformation
// for up to 200 of them, ten at a time, on every call. Here that crawl runs
// in the background and its result is kept in Redis: one hash per location
// (patient GUID → record with its phone digits) and a meta hash (when it
// was built, how many patients were listed and indexed). A lookup reads the
// hash and matches digit substrings, as the original did.
//
// A refresh lists the patients, fetches their records with at most
// Config.Concurrency calls in flight, and stops at Config.Deadline. A
// complete crawl replaces the index in one MULTI; a crawl cut by its
// deadline merges what it fetched into the existing index (nothing is lost,
// the next refresh completes it). One refresh runs at a time across
// instances (a Redis lock released by compare-and-delete, never left to
// age out), and one per process (an in-process flag).
//
// Freshness: Start refreshes every Config.RefreshEvery; a Lookup on an
// index older than that answers from it at once and triggers one background
// refresh. Only a Lookup that finds no index at all builds it in the
// request, bounded by the request's context.
package phoneindex
