// Package shadow compares flowgate's answers with the original Node-RED
// flow's on live traffic, without either side's callers noticing: the
// Node-RED kit answers its caller from the original node, then mirrors the
// request with the original's answer to flowgate (POST /api/shadow/mirror),
// which runs it through a dry instance of the booking path (see DryCloud9:
// reads reach Cloud9, writes answer with fake GUIDs) and hands both answers
// to Compare.
//
// What is kept is shapes, never patient data: key paths and JSON types, and
// for the fields a caller acts on (status, success, the slots offered, the
// patient found, action_required, the class of voice_response) short
// classes or hashes. A Recorder keeps per-endpoint counts and the last
// Window comparisons in Redis (flowgate:shadow:{<endpoint>}:…, with a TTL),
// so every instance behind one Node-RED adds to one report; Verdict turns
// them into ready / collecting / not_ready per endpoint and per group
// (Groups: endpoints that share state switch together).
package shadow
