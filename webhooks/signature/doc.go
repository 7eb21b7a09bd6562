// Package signature authenticates the queue API and the ACK/FAIL webhooks.
//
// # Modes
//
// WEBHOOK_AUTH selects one of three modes (see ParseMode):
//
//   - hmac (the default): every request is signed with a shared secret.
//   - token: a static "Authorization: Bearer <token>", for moving over
//     workers that post unsigned today. It has no replay protection and does
//     not cover the body; use it only as a stepping stone.
//   - none: no authentication. Only ever chosen explicitly; Mode.Insecure
//     tells the caller to log a warning at start.
//
// # HMAC scheme
//
// The client sends two headers:
//
//	X-Timestamp: <unix seconds>
//	X-Signature: <lowercase hex of HMAC-SHA256(secret, timestamp + "." + raw body)>
//
// The signature may carry a "sha256=" prefix. A request is accepted when the
// timestamp is within ±Tolerance (default 300 s) of the server clock, the
// signature matches (compared in constant time), and the same signature has
// not been seen before. Seen signatures are kept in Redis with SET NX and a
// TTL of twice the tolerance (the whole window in which a timestamp is
// accepted), so a replay is caught by any flowgate instance sharing that
// Redis. When Redis cannot answer, the request is refused with 503
// (CodeUnavailable): the check fails closed.
//
// The signature is checked before the replay store is touched, so forged
// requests cannot fill Redis.
//
// # Deferred replay check
//
// A Middleware built with DeferReplay verifies the signature but leaves
// the replay check to the handler: it stores a Deferred (signature, version,
// the global key, TTL) in the request's context and marks nothing seen. The
// ACK and FAIL webhooks use it to make the check inside the ledger's script
// (tasks.ReplayCheck), one round trip instead of two. A version-2 signature
// binds the route and the body names the task, so its key may live in the
// task's shard; a version-1 signature binds neither, so its key stays the
// global one every route checks (passed to the script where the ledger is
// one shard on one server, checked first elsewhere). A handler that defers
// must make the check before it changes anything, and make it also when it
// refuses the request before its script (Deferred.Check), so that a replay
// is always answered 401 replayed (docs/tasks.md, "Authentication"). The body signed is the one on the wire, before
// any Content-Encoding is undone.
//
// Signing from a shell (note --data-binary, which sends the bytes unchanged;
// keep the body in a literal, since $(cat file) drops trailing newlines):
//
//	body='{"queue_id":"…","encounter_id":"…","experityActions":{}}'
//	ts=$(date +%s)
//	sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$HMAC_SECRET" | sed 's/^.* //')
//	curl -X POST "$API_BASE_URL/ack" \
//	  -H 'Content-Type: application/json' \
//	  -H "X-Timestamp: $ts" -H "X-Signature: $sig" \
//	  --data-binary "$body"
//
// From Go, Sign and SignRequest compute the same headers.
//
// # Version 2: method and path signed
//
// The seed's scheme (version 1, the default) signs only timestamp and body,
// not the route. Replay detection is keyed on the signature alone, for both
// versions, so a signature is accepted at most once across all routes: a
// captured version-1 FAIL or POST /queue re-sent to /ack is refused as
// replayed, and so is the second of two requests with the same body (two
// body-less ones, say) signed in the same second for different routes.
// A version-1 signature is still valid on another route as long as its
// first use has not reached the server. Clients that can send version 2,
// which binds the route and lets requests with the same body to different
// routes share a second:
//
//	X-Signature-Version: 2
//	X-Signature: hex HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." + body)
//
// where target is the path with its query exactly as sent (/queue?status=PENDING).
// Config.MinVersion = 2 (WEBHOOK_SIGNATURE_MIN_VERSION) refuses version 1
// once every client has moved. SignV2 and SignRequestV2 compute it.
//
// # Errors
//
// Every refusal is a *contracts.Error with CodeUnauthorized (401), a
// client-safe message and Details["reason"] set to one of the Reason*
// constants; only a failing replay store gives CodeUnavailable (503). Secrets
// and tokens never appear in errors, and Config and Verifier print redacted.
package signature
